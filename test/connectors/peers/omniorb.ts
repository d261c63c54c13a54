// Peer fixture for the corba connector: omniORB, a real ORB from Debian. The C++ test servant
// (corba-servant/svc.idl + servant.cc: omniidl -bcxx, g++ -lomniORB4 -lomnithread) is built once
// per machine into a cache directory named by a hash of its sources; each start() runs a private
// omniNames on a free loopback port and the servant on another, which binds its object in that
// NameService ("svc.test/pm.object", and "forward.test" for an object that answers every call with
// LOCATION_FORWARD) and writes its IORs to a file. Both are killed by PID in stop().
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CorbaClient } from '../../../src/plugins/connectors/corba/client.js';
import { parseObjectUrl, type ObjectRef } from '../../../src/plugins/connectors/corba/ior.js';
import { freePort } from '../../helpers/daemon.js';
import { tempDir } from '../../helpers/fs.js';
import type { Cfg, Peer, PeerFixture } from '../conformance.js';
import { peerProcess, type PeerProcess } from './process.js';
import { until } from '../../helpers/wait.js';

const run = promisify(execFile);
const SRC = join(import.meta.dirname, 'corba-servant');
const SOURCES = ['svc.idl', 'servant.cc'];

/** Builds the servant unless a build of these very sources is cached; returns its path. */
export async function buildServant(): Promise<string> {
  const hash = createHash('sha256');
  for (const f of SOURCES) hash.update(f).update(readFileSync(join(SRC, f)));
  const dir = join(tmpdir(), `svc-corba-servant-${hash.digest('hex').slice(0, 16)}`);
  const bin = join(dir, 'servant');
  if (existsSync(bin)) return bin;
  const work = `${dir}.build-${process.pid}-${Date.now()}`;
  mkdirSync(work, { recursive: true });
  try {
    for (const f of SOURCES) copyFileSync(join(SRC, f), join(work, f));
    await run('omniidl', ['-bcxx', 'svc.idl'], { cwd: work });
    await run('g++', ['-O1', '-o', 'servant', 'servant.cc', 'svcSK.cc', '-I.', '-lomniORB4', '-lomnithread'], { cwd: work });
    try {
      renameSync(work, dir); // atomic: a concurrent build that finished first wins
    } catch {
      if (!existsSync(bin)) throw new Error(`cannot place the servant build in ${dir}`);
    }
  } finally {
    if (existsSync(work)) rmSync(work, { recursive: true, force: true });
  }
  return bin;
}

export interface OmniOrb {
  nsPort: number;
  servantPort: number;
  /** corbaloc of the NameService. */
  nameService: string;
  /** IOR of the Svc::Pm object, and of the forwarding object. */
  pmIor: string;
  forwardIor: string;
  pm: ObjectRef;
  /** Invokes put(channel, body) for each body through the connector's own GIOP client. */
  put(channel: string, bodies: (Buffer | string)[]): Promise<void>;
  /** How many times take(channel) ran in the servant. */
  takes(channel: string): Promise<number>;
  /** Kills the servant (the NameService stays). */
  killServant(): Promise<void>;
  stop(): Promise<void>;
}

export const OBJECT_NAME = 'svc.test/pm.object';

/** A private omniNames and the test servant, each on a free loopback port. */
export async function startOmniOrb(): Promise<OmniOrb> {
  const bin = await buildServant();
  const dir = tempDir('svc-omniorb-');
  const nsPort = await freePort();
  const ns = peerProcess(
    'omniNames',
    ['-start', String(nsPort), '-always', '-datadir', dir, '-errlog', join(dir, 'omninames.log'), '-ORBendPoint', `giop:tcp:127.0.0.1:${nsPort}`],
    nsPort,
    { name: 'omniNames' },
  );
  await ns.start();
  const nameService = `corbaloc:iiop:127.0.0.1:${nsPort}/NameService`;
  const servantPort = await freePort();
  const iorFile = join(dir, 'servant.iors');
  let servant: PeerProcess | undefined;
  try {
    servant = peerProcess(
      bin,
      ['-ORBInitRef', `NameService=${nameService}`, '-ORBendPoint', `giop:tcp:127.0.0.1:${servantPort}`, '-ORBnativeCharCodeSet', 'UTF-8', iorFile],
      servantPort,
      { name: 'corba test servant' },
    );
    await servant.start();
    await until(() => existsSync(iorFile) && readFileSync(iorFile, 'utf8').includes('READY'), 15_000, 'the corba test servant to write its IORs', 30);
  } catch (e) {
    await servant?.kill();
    await ns.kill();
    throw e;
  }
  const text = readFileSync(iorFile, 'utf8');
  const pmIor = /^PM (IOR:\w+)$/m.exec(text)![1]!;
  const forwardIor = /^FWD (IOR:\w+)$/m.exec(text)![1]!;
  const pm = parseObjectUrl(pmIor);
  const call = async <T>(f: (c: CorbaClient) => Promise<T>) => {
    const c = new CorbaClient();
    try {
      return await f(c);
    } finally {
      c.close();
    }
  };
  return {
    nsPort,
    servantPort,
    nameService,
    pmIor,
    forwardIor,
    pm,
    put: (channel, bodies) =>
      call(async (c) => {
        for (const b of bodies) {
          await c.invoke(
            pm,
            'put',
            (w) => {
              w.string(channel);
              w.string(b.toString());
            },
            { timeoutMs: 10_000 },
          );
        }
      }),
    takes: (channel) => call(async (c) => (await c.invoke(pm, 'takes', (w) => w.string(channel), { timeoutMs: 10_000 })).result.long()),
    killServant: () => servant!.kill(),
    async stop() {
      await servant!.kill();
      await ns.kill();
    },
  };
}

/** The source reading channel `ch`: take(ch) resolved through the NameService, bodies as JSON. */
export const takeConfig = (orb: Pick<OmniOrb, 'nameService'>, ch: string): Cfg => ({
  type: 'corba',
  naming_service: orb.nameService,
  object_name: OBJECT_NAME,
  operation: 'take',
  args: [{ type: 'string', value: ch }],
  returns: { sequence: 'json' },
  timeout_seconds: 10,
});

export const omniOrbFixture: PeerFixture = {
  type: 'corba',
  badConfig: { role: 'source', set: { args: [{ type: 'long', value: 'forty-two' }] }, path: 'args[0].value' },
  async start(): Promise<Peer> {
    const orb = await startOmniOrb();
    const deadPort = await freePort(); // nothing listens there
    const peer: Peer = {
      source: {
        config: (ch) => takeConfig(orb, ch),
        publish: (ch, bodies) => orb.put(ch, bodies),
      },
      wrongPort: (cfg) => ({ ...cfg, naming_service: `corbaloc:iiop:127.0.0.1:${deadPort}/NameService` }),
      noCredentials: 'CORBA over plain IIOP has no credentials: GIOP carries none, and omniORB serves any client (CSIv2/SSL is not in scope)',
      stop: () => orb.stop(),
    };
    return peer;
  },
};
