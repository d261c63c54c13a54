// Where the manager's workers are (SVC_MODE=manager). SVC_WORKER_URLS names them explicitly;
// otherwise SVC_WORKER_REPLICAS > 0 names the pods of a StatefulSet behind a headless Service:
// `<service>-<i>.<service>.<namespace>.svc`, agent port SVC_WORKER_PORT.
//
// A worker's id is stable (the URL as configured, or the pod's DNS name); its url is not: names are
// resolved again on every list(), since a restarted pod comes back with a new IP. A name that does
// not resolve stays in the list with url null (and the reason): a crashed or rescheduling pod drops
// out of the headless Service's DNS, and omitting it would make it vanish from the pool instead of
// being counted down, and silently shrink the worker total.
import { lookup, Resolver } from 'node:dns/promises';
import { isIPv6 } from 'node:net';
import { errorMessage } from '../core/errors.js';
import { SettingsError, type Settings } from '../settings.js';

export interface WorkerEndpoint {
  /** Stable: the configured URL, or the pod's DNS name. */
  id: string;
  /** Agent base URL (no trailing slash); null when the name does not resolve now. */
  url: string | null;
  /** Why url is null. */
  error?: string;
}

export interface WorkerDiscovery {
  /** explicit: SVC_WORKER_URLS; dns: SVC_WORKER_REPLICAS names; none: no worker configured. */
  readonly mode: 'explicit' | 'dns' | 'none';
  list(): Promise<WorkerEndpoint[]>;
}

/** The addresses of a host name (rejects when it has none). */
export type ResolveAddresses = (hostname: string) => Promise<string[]>;

/**
 * The default: getaddrinfo, as every program in the pod resolves. It applies resolv.conf's search
 * domains, which the replica names need (they stop at `.svc`, before the cluster domain); c-ares
 * queries (dns.Resolver) send the name as it is.
 */
export const systemResolver: ResolveAddresses = async (hostname) => (await lookup(hostname, { all: true })).map((a) => a.address);

/** Asks the given DNS servers (`host:port`) directly, A then AAAA; names must be complete. */
export function dnsServerResolver(servers: string[], opts: { timeoutMs?: number } = {}): ResolveAddresses {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 2000, tries: 2 });
  resolver.setServers(servers);
  return async (hostname) => {
    const v4 = await resolver.resolve4(hostname).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENODATA') return [] as string[]; // the name exists without A records: try AAAA
      throw e;
    });
    return v4.length ? v4 : resolver.resolve6(hostname);
  };
}

type DiscoverySettings = Pick<Settings, 'WORKER_URLS' | 'WORKER_REPLICAS' | 'WORKER_SERVICE' | 'WORKER_NAMESPACE' | 'WORKER_PORT'>;

/** The DNS names of the worker replicas, in replica order. */
export const replicaNames = (s: Pick<Settings, 'WORKER_REPLICAS' | 'WORKER_SERVICE' | 'WORKER_NAMESPACE'>): string[] =>
  Array.from({ length: s.WORKER_REPLICAS }, (_, i) => `${s.WORKER_SERVICE}-${i}.${s.WORKER_SERVICE}.${s.WORKER_NAMESPACE}.svc`);

const withoutTrailingSlash = (u: string) => u.replace(/\/+$/, '');

/**
 * `timeoutMs` bounds each name's resolution (getaddrinfo has no timeout of its own), so a slow DNS
 * server delays a health poll by at most that much.
 */
export function workerDiscovery(settings: DiscoverySettings, opts: { resolver?: ResolveAddresses; timeoutMs?: number } = {}): WorkerDiscovery {
  if (settings.WORKER_URLS.length) {
    for (const u of settings.WORKER_URLS) {
      let ok = false;
      try {
        ok = ['http:', 'https:'].includes(new URL(u).protocol);
      } catch {
        // reported below
      }
      if (!ok) throw new SettingsError(`SVC_WORKER_URLS: ${JSON.stringify(u)} is not an http(s) URL`);
    }
    const endpoints = settings.WORKER_URLS.map((u) => ({ id: u, url: withoutTrailingSlash(u) }));
    return { mode: 'explicit', list: async () => endpoints.map((e) => ({ ...e })) };
  }
  if (settings.WORKER_REPLICAS <= 0) return { mode: 'none', list: async () => [] };

  const resolve = opts.resolver ?? systemResolver;
  const timeoutMs = opts.timeoutMs ?? 5000;
  const names = replicaNames(settings);
  const resolveOne = async (name: string): Promise<WorkerEndpoint> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      });
      const [address] = await Promise.race([resolve(name), timeout]);
      if (!address) return { id: name, url: null, error: `${name} has no address` };
      const host = isIPv6(address) ? `[${address}]` : address;
      return { id: name, url: `http://${host}:${settings.WORKER_PORT}` };
    } catch (e) {
      return { id: name, url: null, error: `${name} does not resolve: ${errorMessage(e)}` };
    } finally {
      clearTimeout(timer);
    }
  };
  return { mode: 'dns', list: () => Promise.all(names.map(resolveOne)) };
}
