// A network namespace joined to the host by a veth pair, so that a test can take a worker's link
// down (issue 15's fault matrix) while the worker process keeps running. Needs CAP_NET_ADMIN
// (root in the CI container); netns() is undefined where `ip netns add` is refused.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface Netns {
  name: string;
  /** The host's end of the link, as the namespace reaches it. */
  hostIp: string;
  /** The namespace's address, as the host reaches it. */
  nsIp: string;
  /** Runs a command inside the namespace (a prefix for spawn). */
  prefix: string[];
  down(): void;
  up(): void;
  remove(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });

export function netns(): Netns | undefined {
  const id = randomBytes(3).toString('hex');
  const name = `svc-${id}`;
  // Interface names are at most 15 characters.
  const [hostIf, nsIf] = [`svh${id}`, `svn${id}`];
  const subnet = `10.213.${(parseInt(id.slice(0, 2), 16) % 250) + 1}`;
  const remove = () => {
    try {
      ip('link', 'del', hostIf); // removes its peer too
    } catch {
      // already gone
    }
    try {
      ip('netns', 'del', name);
    } catch {
      // already gone
    }
  };
  try {
    ip('netns', 'add', name);
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
    ip('link', 'set', nsIf, 'netns', name);
    ip('addr', 'add', `${subnet}.1/30`, 'dev', hostIf);
    ip('link', 'set', hostIf, 'up');
    ip('-n', name, 'addr', 'add', `${subnet}.2/30`, 'dev', nsIf);
    ip('-n', name, 'link', 'set', nsIf, 'up');
    ip('-n', name, 'link', 'set', 'lo', 'up');
  } catch {
    remove();
    return undefined;
  }
  return {
    name,
    hostIp: `${subnet}.1`,
    nsIp: `${subnet}.2`,
    prefix: ['ip', 'netns', 'exec', name],
    down: () => void ip('link', 'set', hostIf, 'down'),
    up: () => void ip('link', 'set', hostIf, 'up'),
    remove,
  };
}
