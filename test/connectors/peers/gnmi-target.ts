// A gNMI target for the gnmi source's tests: no router runs here, so this is a grpc-js server that
// speaks gNMI on the wire (service gnmi.gNMI, loaded from src/plugins/connectors/gnmi/gnmi.proto,
// the file the client's embedded descriptor is generated from) and behaves as the gNMI
// specification asks a target to:
// - credentials: with `users`, every RPC must carry `username` / `password` metadata that match,
//   else UNAUTHENTICATED;
// - Capabilities: models, encodings (JSON, JSON_IETF, PROTO) and version 0.8.0;
// - Subscribe: the first request must be a SubscriptionList (a Poll first is INVALID_ARGUMENT), with
//   at least one subscription, each with a path; a SAMPLE interval below 1 ms, a second
//   SubscriptionList, or a Poll outside POLL mode is INVALID_ARGUMENT; an encoding it does not
//   support (BYTES, ASCII) is UNIMPLEMENTED;
// - every mode starts with the current value of each matching leaf, then sync_response; STREAM then
//   sends SAMPLE subscriptions' leaves every sample_interval (0: every second), ON_CHANGE and
//   TARGET_DEFINED (on change, for every leaf here) leaves when set or deleted; ONCE ends the RPC
//   after sync_response; POLL answers each Poll with a snapshot and sync_response;
// - TLS with a key and certificate (made with openssl by the tests), and restart on the same port
//   (all connections dropped, the leaves kept, as a rebooted device keeps its configuration).
// Each notification carries the leaf's first element in its prefix (and `name` as the prefix's
// target, when set), the rest in the update's path: clients must join them.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { LOADER_OPTIONS } from '../../../src/plugins/connectors/gnmi/client.js';
import type { Peer, PeerFixture } from '../conformance.js';
import { pace } from '../../helpers/wait.js';

export const PROTO_FILE = fileURLToPath(new URL('../../../src/plugins/connectors/gnmi/gnmi.proto', import.meta.url));

interface Elem {
  name: string;
  key?: Record<string, string>;
}
interface WirePath {
  origin?: string;
  elem?: Elem[];
  target?: string;
}
type TypedValue = Record<string, unknown>;
interface Leaf {
  origin?: string;
  elem: Elem[];
  value: TypedValue;
  ns: bigint;
}
interface Subscription {
  path?: WirePath;
  mode?: string;
  sample_interval?: string;
}
interface SubscribeRequest {
  request?: 'subscribe' | 'poll';
  subscribe?: { prefix?: WirePath; subscription?: Subscription[]; mode?: string; encoding?: string; updates_only?: boolean };
  poll?: object;
}

/** `/a/b[k=v]/c` or `origin:/a/b` as elements (the test's own spelling; no escapes). */
export function elems(path: string): { origin?: string; elem: Elem[] } {
  const m = /^([A-Za-z][\w-]*):(\/.*)$/.exec(path);
  const origin = m?.[1];
  const rest = m ? m[2]! : path;
  const elem = rest
    .split('/')
    .filter(Boolean)
    .map((part) => {
      const name = part.replace(/\[.*$/, '');
      const keys = [...part.matchAll(/\[([^=\]]+)=([^\]]*)\]/g)];
      return keys.length ? { name, key: Object.fromEntries(keys.map((k) => [k[1]!, k[2]!])) } : { name };
    });
  return { ...(origin ? { origin } : {}), elem };
}

const matches = (sub: Elem[], leaf: Elem[]) =>
  sub.length <= leaf.length &&
  sub.every((s, i) => {
    const l = leaf[i]!;
    if (s.name !== '*' && s.name !== l.name) return false;
    return Object.entries(s.key ?? {}).every(([k, v]) => v === '*' || l.key?.[k] === v);
  });

const leafKey = (origin: string | undefined, elem: Elem[]) => JSON.stringify([origin ?? '', elem.map((e) => [e.name, Object.entries(e.key ?? {}).sort()])]);

const nowNs = () => BigInt(Date.now()) * 1_000_000n;

export interface TargetOptions {
  /** username -> password; absent: no credentials asked for. */
  users?: Record<string, string>;
  /** PEM key and certificate: serve TLS. */
  tls?: { key: Buffer; cert: Buffer };
  /** The prefix target of every notification (a gateway naming its device). */
  name?: string;
}

export interface SubscribeLog {
  username?: string;
  request: SubscribeRequest['subscribe'];
  polls: number;
}

export class GnmiTarget {
  port = 0;
  readonly subscribes: SubscribeLog[] = [];
  capabilityCalls = 0;
  private server?: grpc.Server;
  private readonly leaves = new Map<string, Leaf>();
  private readonly watchers = new Set<(leaves: Leaf[], deleted: boolean) => void>();
  /** Open Subscribe RPCs and what ends each one's timers and watcher. */
  private readonly streams = new Map<grpc.ServerDuplexStream<SubscribeRequest, unknown>, () => void>();
  private readonly service = (
    grpc.loadPackageDefinition(loader.loadSync(PROTO_FILE, LOADER_OPTIONS)) as unknown as { gnmi: { gNMI: grpc.ServiceClientConstructor } }
  ).gnmi.gNMI.service;
  private readonly channelSeq = new Map<string, number>();

  constructor(private readonly opts: TargetOptions = {}) {}

  get address() {
    return `127.0.0.1:${this.port}`;
  }

  /** Open Subscribe RPCs. */
  get openStreams() {
    return this.streams.size;
  }

  async start(): Promise<void> {
    const server = new grpc.Server();
    server.addService(this.service, {
      Capabilities: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        this.capabilityCalls++;
        const refused = this.refuse(call.metadata);
        if (refused) return cb(refused);
        cb(null, {
          supported_models: [{ name: 'openconfig-interfaces', organization: 'OpenConfig working group', version: '3.0.0' }],
          supported_encodings: ['JSON', 'JSON_IETF', 'PROTO'],
          gNMI_version: '0.8.0',
        });
      },
      Subscribe: (call: grpc.ServerDuplexStream<SubscribeRequest, unknown>) => this.subscribe(call),
    });
    const creds = this.opts.tls
      ? grpc.ServerCredentials.createSsl(null, [{ private_key: this.opts.tls.key, cert_chain: this.opts.tls.cert }])
      : grpc.ServerCredentials.createInsecure();
    this.port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${this.port}`, creds, (err, port) => (err ? reject(err) : resolve(port))),
    );
    this.server = server;
  }

  /** Drops every connection and stops listening. */
  async stop(): Promise<void> {
    for (const [s, cleanup] of [...this.streams]) {
      cleanup();
      s.destroy();
    }
    this.streams.clear();
    this.watchers.clear();
    this.server?.forceShutdown();
    this.server = undefined;
  }

  /** Stops, waits `downMs`, and listens again on the same port. */
  async restart(downMs = 200): Promise<void> {
    await this.stop();
    await pace(downMs); // the peer is down this long
    await this.start();
  }

  /** Ends every open Subscribe RPC with status OK (a target that closes subscriptions, e.g. on a config reload). */
  endStreams() {
    for (const [s, cleanup] of [...this.streams]) {
      cleanup();
      s.end();
    }
  }

  /** Sets a leaf (ON_CHANGE subscribers are sent the new value). */
  set(path: string, value: TypedValue, ns = nowNs()) {
    const { origin, elem } = elems(path);
    const leaf: Leaf = { origin, elem, value, ns };
    this.leaves.set(leafKey(origin, elem), leaf);
    for (const w of this.watchers) w([leaf], false);
  }

  /** Deletes a leaf (ON_CHANGE subscribers are sent the delete). */
  delete(path: string) {
    const { origin, elem } = elems(path);
    const k = leafKey(origin, elem);
    const leaf = this.leaves.get(k);
    if (!leaf) return;
    this.leaves.delete(k);
    for (const w of this.watchers) w([{ ...leaf, ns: nowNs() }], true);
  }

  /**
   * The conformance suite's messages: each body a json_val leaf /svc/<channel>/message[id=n], sent
   * to ON_CHANGE subscribers `perNotification` updates to a notification.
   */
  publish(channel: string, bodies: Buffer[], perNotification = 1) {
    let n = this.channelSeq.get(channel) ?? 0;
    for (let i = 0; i < bodies.length; i += perNotification) {
      const ns = nowNs();
      const leaves = bodies.slice(i, i + perNotification).map((b) => ({ elem: elems(`/svc/${channel}/message[id=${n++}]`).elem, value: { json_val: b }, ns }));
      for (const l of leaves) this.leaves.set(leafKey(undefined, l.elem), l);
      for (const w of this.watchers) w(leaves, false);
    }
    this.channelSeq.set(channel, n);
  }

  private refuse(md: grpc.Metadata): Partial<grpc.StatusObject> | undefined {
    if (!this.opts.users) return undefined;
    const user = md.get('username')[0]?.toString();
    const pass = md.get('password')[0]?.toString();
    if (user !== undefined && pass !== undefined && this.opts.users[user] === pass) return undefined;
    return { code: grpc.status.UNAUTHENTICATED, details: user === undefined ? 'no username in the metadata' : `authentication failed for user '${user}'` };
  }

  /** One notification of `leaves` (alike: same origin and first element, which go in the prefix). */
  private notification(leaves: Leaf[], deleted: boolean, ns = leaves[0]!.ns) {
    const first = leaves[0]!;
    const split = leaves.every((l) => l.elem.length > 1) ? 1 : 0;
    const prefix = {
      ...(first.origin ? { origin: first.origin } : {}),
      elem: first.elem.slice(0, split),
      ...(this.opts.name ? { target: this.opts.name } : {}),
    };
    const paths = leaves.map((l) => ({ elem: l.elem.slice(split) }));
    return {
      update: { timestamp: ns.toString(), prefix, ...(deleted ? { delete: paths } : { update: paths.map((path, i) => ({ path, val: leaves[i]!.value })) }) },
    };
  }

  private subscribe(call: grpc.ServerDuplexStream<SubscribeRequest, unknown>) {
    let list: SubscribeRequest['subscribe'] | undefined;
    let log: SubscribeLog | undefined;
    const timers: NodeJS.Timeout[] = [];
    let watcher: ((leaves: Leaf[], deleted: boolean) => void) | undefined;
    let ended = false;
    const cleanup = () => {
      ended = true;
      timers.forEach((t) => clearInterval(t));
      if (watcher) this.watchers.delete(watcher);
      this.streams.delete(call);
    };
    this.streams.set(call, cleanup);
    const fail = (code: grpc.status, details: string) => {
      if (ended) return;
      cleanup();
      call.emit('error', { code, details });
    };
    call.on('cancelled', cleanup);
    call.on('error', cleanup);
    call.on('end', () => {
      if (!ended) {
        cleanup();
        call.end();
      }
    });
    const refused = this.refuse(call.metadata);
    if (refused) return fail(refused.code!, refused.details!);

    /** Full subscription paths (prefix + path). */
    let subs: { origin?: string; elem: Elem[]; mode: string; intervalMs: number }[] = [];
    const matching = (s: { origin?: string; elem: Elem[] }) =>
      [...this.leaves.values()].filter((l) => matches(s.elem, l.elem) && (!s.origin || !l.origin || s.origin === l.origin));
    const snapshot = () => {
      const seen = new Set<Leaf>();
      for (const s of subs)
        for (const l of matching(s))
          if (!seen.has(l)) {
            seen.add(l);
            call.write(this.notification([l], false));
          }
      call.write({ sync_response: true });
    };

    call.on('data', (req: SubscribeRequest) => {
      if (ended) return;
      if (req.request === 'poll') {
        if (!list) return fail(grpc.status.INVALID_ARGUMENT, 'a Poll before the SubscriptionList');
        if (list.mode !== 'POLL') return fail(grpc.status.INVALID_ARGUMENT, `a Poll on a ${list.mode} subscription`);
        log!.polls++;
        return snapshot();
      }
      if (req.request !== 'subscribe') return fail(grpc.status.INVALID_ARGUMENT, 'an empty SubscribeRequest');
      if (list) return fail(grpc.status.INVALID_ARGUMENT, 'a second SubscriptionList on one Subscribe RPC');
      list = req.subscribe ?? {};
      const mode = list.mode ?? 'STREAM';
      list.mode = mode;
      if (list.encoding && !['JSON', 'JSON_IETF', 'PROTO'].includes(list.encoding))
        return fail(grpc.status.UNIMPLEMENTED, `unsupported encoding: ${list.encoding}`);
      if (!list.subscription?.length) return fail(grpc.status.INVALID_ARGUMENT, 'a SubscriptionList without subscriptions');
      const prefix = list.prefix?.elem ?? [];
      subs = [];
      for (const [i, s] of list.subscription.entries()) {
        if (!s.path) return fail(grpc.status.INVALID_ARGUMENT, `subscription ${i} has no path`);
        const ns = BigInt(s.sample_interval ?? '0');
        const smode = s.mode ?? 'TARGET_DEFINED';
        if (mode === 'STREAM' && smode === 'SAMPLE' && ns > 0n && ns < 1_000_000n)
          return fail(grpc.status.INVALID_ARGUMENT, `subscription ${i}: sample_interval ${ns} ns is below the minimum of 1000000 ns`);
        subs.push({
          origin: s.path.origin || list.prefix?.origin,
          elem: [...prefix, ...(s.path.elem ?? [])],
          mode: smode,
          intervalMs: ns === 0n ? 1000 : Number(ns / 1_000_000n),
        });
      }
      log = { username: call.metadata.get('username')[0]?.toString(), request: list, polls: 0 };
      this.subscribes.push(log);
      snapshot();
      if (mode === 'ONCE') {
        cleanup();
        return call.end();
      }
      if (mode !== 'STREAM') return;
      for (const s of subs.filter((x) => x.mode === 'SAMPLE')) {
        timers.push(
          setInterval(() => {
            for (const l of matching(s)) call.write(this.notification([l], false, nowNs()));
          }, s.intervalMs),
        );
      }
      const onChange = subs.filter((x) => x.mode !== 'SAMPLE');
      if (onChange.length) {
        watcher = (leaves, deleted) => {
          const mine = leaves.filter((leaf) => onChange.some((s) => matches(s.elem, leaf.elem) && (!s.origin || !leaf.origin || s.origin === leaf.origin)));
          if (mine.length) call.write(this.notification(mine, deleted));
        };
        this.watchers.add(watcher);
      }
    });
  }
}

/** A target listening on a free loopback port. */
export async function startTarget(opts: TargetOptions = {}): Promise<GnmiTarget> {
  const t = new GnmiTarget(opts);
  await t.start();
  return t;
}

/** The conformance fixture: an insecure target, and one that asks for credentials. */
export const gnmi: PeerFixture = {
  type: 'gnmi',
  badConfig: { role: 'source', set: { subscriptions: [{ path: '/interfaces/interface[name=eth0/state' }] }, path: 'subscriptions[0].path' },
  async start(): Promise<Peer> {
    const target = await startTarget();
    const authed = await startTarget({ users: { svc: 'right-secret' } });
    return {
      source: {
        config: (ch) => ({ type: 'gnmi', host: '127.0.0.1', port: target.port, tls: false, subscriptions: [{ path: `/svc/${ch}`, mode: 'ON_CHANGE' }] }),
        publish: async (ch, bodies) => target.publish(ch, bodies),
        // The target holds the subscription once it answered (sync_response): `connected`.
        settleMs: 50,
        // A record is {timestamp, target, path, type, value: {seq, pad}}: the body is the value.
        transforms: [{ type: 'unnest', field: 'value' }],
      },
      wrongPort: (cfg) => ({ ...cfg, port: 1 }),
      wrongCredentials: (cfg) => ({ ...cfg, port: authed.port, username: 'svc', password: 'wrong-secret' }),
      async stop() {
        await target.stop();
        await authed.stop();
      },
    };
  },
};
