// Manager side: one UDP socket to one agent, requests with timeout and retries, v3 engine
// discovery and time synchronisation (RFC 3414 4), used by the walker and by informs.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { randomInt } from 'node:crypto';
import {
  decodeMessage,
  encodeCommunity,
  encodeV3,
  ErrorStatus,
  PduType,
  unwrapV3,
  USM_STATS,
  type AnyPdu,
  type Pdu,
  type SnmpVersion,
  type V3Message,
} from './message.js';
import { localize, makeUser, type LocalUser, type UsmUser, type UsmUserConfig } from './usm.js';
import { SnmpInputError, SnmpResponseError, SnmpTimeoutError, type VarBind } from './values.js';

export interface TargetOptions {
  host: string;
  port?: number;
  version?: SnmpVersion;
  community?: string;
  /** SNMPv3 user (version 3). */
  user?: UsmUserConfig;
  contextName?: string;
  /** Per attempt, milliseconds (default 1000). */
  timeoutMs?: number;
  /** Further attempts after the first (default 1). */
  retries?: number;
}

/**
 * Connected UDP sockets kept between sessions, for a poller that opens a session per target (a
 * fleet poll): a session takes one and connects it to its agent, and its close disconnects it and
 * gives it back, instead of creating and closing a socket per target (the handle, the bind, the
 * receive buffer, the epoll registration: a quarter of a session's CPU, docs/benchmarks.md
 * fleet-sharded). Connected, so an agent that is not there still answers ECONNREFUSED (ICMP port
 * unreachable). A socket that saw an error is closed, never reused; at most `maxIdle` wait.
 * close() closes them, and those given back afterwards.
 */
export class UdpSocketPool {
  private readonly idle: { udp4: Socket[]; udp6: Socket[] } = { udp4: [], udp6: [] };
  private closed = false;

  constructor(private readonly maxIdle: number) {}

  /** A socket of `type`, not connected, with no listener of a previous session (only a no-op 'error' one). */
  take(type: 'udp4' | 'udp6'): Socket {
    return this.idle[type].pop() ?? createSocket({ type, recvBufferSize: RECV_BUFFER_BYTES });
  }

  /** A session is done with `socket`: kept when it is healthy and there is room, else closed. */
  give(socket: Socket, type: 'udp4' | 'udp6', healthy: boolean): void {
    if (healthy && !this.closed && this.idle[type].length < this.maxIdle) {
      try {
        socket.disconnect();
        this.idle[type].push(socket);
        return;
      } catch {
        // not connected (its connect failed): closed below
      }
    }
    closeQuietly(socket);
  }

  close(): void {
    this.closed = true;
    for (const list of [this.idle.udp4, this.idle.udp6]) for (const s of list.splice(0)) closeQuietly(s);
  }
}

const RECV_BUFFER_BYTES = 4 << 20;

function closeQuietly(s: Socket): void {
  try {
    s.close();
  } catch {
    /* already closed */
  }
}

/** An address without its IPv6 zone (fe80::1%eth0), as a datagram's sender may be written without it. */
const withoutZone = (a: string) => {
  const i = a.indexOf('%');
  return i < 0 ? a : a.slice(0, i);
};

interface Pending {
  resolve(p: AnyPdu, authenticated: boolean): void;
  reject(e: Error): void;
  timer?: NodeJS.Timeout;
  /** v3: what the answer must carry (RFC 3412 7.2 step 12); discovery when engineId is empty. */
  v3?: { level: number; userName: string; engineId: Buffer };
}

export class SnmpSession {
  private socket!: Socket;
  private pending = new Map<number, Pending>();
  /** Bytes of every datagram sent: retransmissions and SNMPv3 engine discovery included. */
  bytesSent = 0;
  private nextId = randomInt(1, 0x3fffffff);
  private user: UsmUser | undefined;
  private local: LocalUser | null = null;
  private engine: { id: Buffer; boots: number; time: number; at: number } | undefined;
  private closedError: Error | undefined;
  readonly version: SnmpVersion;
  readonly timeoutMs: number;
  readonly retries: number;
  private addr = '';
  private communityBytes: Buffer | undefined;
  /** Where the socket is connected: a pooled socket may still hold a datagram of its previous agent. */
  private peer = { address: '', port: 0 };
  private socketType: 'udp4' | 'udp6' = 'udp4';
  /** The socket failed (ICMP unreachable, a send error): not given back to the pool. */
  private socketFailed = false;
  /** close() has run: the socket is no longer this session's to send on. */
  private released = false;
  private readonly onDatagram = (buf: Buffer, rinfo: RemoteInfo) => {
    if (this.pool && (rinfo.port !== this.peer.port || withoutZone(rinfo.address) !== withoutZone(this.peer.address))) return;
    this.onMessage(buf);
  };
  private readonly onSocketError = (e: NodeJS.ErrnoException) => {
    this.socketFailed = true;
    this.failAll(e.code === 'ECONNREFUSED' ? new SnmpTimeoutError(`no SNMP agent at udp ${this.addr} (port unreachable)`) : e);
  };

  private constructor(
    readonly target: TargetOptions,
    private readonly pool?: UdpSocketPool,
  ) {
    this.version = target.version ?? '2c';
    this.timeoutMs = target.timeoutMs ?? 1000;
    this.retries = target.retries ?? 1;
    if (this.version === '3') {
      if (!target.user) throw new SnmpInputError('SNMPv3 needs a user (security name and keys)');
      this.user = makeUser(target.user);
    }
  }

  /** A session to `target`, on a socket of `pool` when given (given back by close()). */
  static async open(target: TargetOptions, pool?: UdpSocketPool): Promise<SnmpSession> {
    const s = new SnmpSession(target, pool);
    try {
      await s.connect();
    } catch (e) {
      s.close();
      throw e;
    }
    return s;
  }

  private async connect(): Promise<void> {
    const port = this.target.port ?? 161;
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new SnmpInputError(`port ${port} is not a UDP port (1-65535)`);
    let address: string;
    let family: number;
    try {
      ({ address, family } = await lookup(this.target.host));
    } catch {
      throw new SnmpInputError(`cannot resolve host "${this.target.host}"`);
    }
    this.addr = `${this.target.host}:${port}`;
    this.socketType = family === 6 ? 'udp6' : 'udp4';
    this.socket = this.pool ? this.pool.take(this.socketType) : createSocket({ type: this.socketType, recvBufferSize: RECV_BUFFER_BYTES });
    this.socket.on('message', this.onDatagram);
    // A connected socket turns ICMP port-unreachable into ECONNREFUSED instead of a silent timeout.
    this.socket.on('error', this.onSocketError);
    await new Promise<void>((res, rej) => {
      this.socket.once('error', rej);
      this.socket.connect(port, address, () => {
        this.socket.off('error', rej);
        res();
      });
    });
    // As the kernel writes it, the form a datagram's sender has.
    if (this.pool) this.peer = this.socket.remoteAddress();
  }

  close(): void {
    this.failAll(new Error('session closed'));
    // Once: a pooled socket given back may already be another session's.
    if (this.released) return;
    this.released = true;
    const socket = this.socket;
    if (!socket) return;
    socket.off('message', this.onDatagram);
    socket.off('error', this.onSocketError);
    if (this.pool) {
      // Errors of a socket given back (a late ICMP) must not go unhandled: it has no session until the next take.
      if (socket.listenerCount('error') === 0) socket.on('error', () => undefined);
      this.pool.give(socket, this.socketType, !this.socketFailed);
    } else closeQuietly(socket);
  }

  private failAll(e: Error): void {
    this.closedError = e;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(e);
    }
    this.pending.clear();
    // Later requests may still succeed (an agent that starts late): only the in-flight ones fail.
    setImmediate(() => (this.closedError = undefined));
  }

  private onMessage(buf: Buffer): void {
    let id: number;
    let pdu: AnyPdu;
    let v3: V3Message | undefined;
    try {
      const m = decodeMessage(buf);
      if (m.version === 3) {
        v3 = m as V3Message;
        const res = unwrapV3(v3, v3.flags & 1 ? this.local : null);
        if ('error' in res) return;
        pdu = res.pdu;
        id = v3.msgId;
      } else {
        pdu = m.pdu;
        id = pdu.requestId;
      }
    } catch {
      return; // not a message for us
    }
    if (pdu.type !== PduType.Response && pdu.type !== PduType.Report) return;
    const p = this.pending.get(id);
    if (!p) return;
    if (v3 && !this.acceptV3(v3, pdu, p)) return; // not the answer: keep waiting (ends in a timeout)
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(pdu, !!v3 && !!(v3.flags & 1));
  }

  /**
   * RFC 3412 7.2 step 12: a Response must come at the request's security level, for its user and
   * engine ID (and echo its request-id), else a spoofed unauthenticated datagram with a guessed
   * msgID would be taken as the agent's answer. Reports (usmStats errors cannot be authenticated
   * when the agent does not know our keys) need not match, as in net-snmp's snmpv3_verify_msg,
   * but an unauthenticated one only sets the engine during discovery: it must not move the
   * engine time of a known engine (the authenticated time window would then be the attacker's).
   */
  private acceptV3(m: V3Message, pdu: AnyPdu, p: Pending): boolean {
    const want = p.v3;
    if (!want) return false;
    const discovery = want.engineId.length === 0;
    if (pdu.type === PduType.Report) {
      if (m.flags & 1) {
        // Authenticated with our key for our engine: the agent's own time (notInTimeWindows).
        if (!m.engineId.equals(this.engine?.id ?? want.engineId) || m.userName !== want.userName) return false;
        this.noteEngine(m);
      } else if (discovery && !this.engine && m.engineId.length) this.noteEngine(m);
      return true;
    }
    if (discovery || (m.flags & 3) !== want.level || m.userName !== want.userName || !m.engineId.equals(want.engineId) || pdu.requestId !== m.msgId)
      return false;
    this.noteEngine(m);
    return true;
  }

  /** RFC 3414 3.2 step 7b: later boots, or the same boots and a later time, from authenticated messages (and discovery). */
  private noteEngine(m: V3Message): void {
    const e = this.engine;
    if (!e || !e.id.equals(m.engineId) || m.boots > e.boots || (m.boots === e.boots && m.time > this.currentTime()))
      this.engine = { id: Buffer.from(m.engineId), boots: m.boots, time: m.time, at: Date.now() };
  }

  private currentTime(): number {
    return this.engine ? this.engine.time + Math.floor((Date.now() - this.engine.at) / 1000) : 0;
  }

  /** Sends one PDU and waits for the answer (retransmitting the same message on timeout). */
  private exchange(build: (id: number) => Buffer, id: number, v3?: Pending['v3']): Promise<{ pdu: AnyPdu; authenticated: boolean }> {
    if (this.closedError) return Promise.reject(this.closedError);
    if (this.released) return Promise.reject(new Error('session closed'));
    const msg = build(id);
    return new Promise<{ pdu: AnyPdu; authenticated: boolean }>((resolve, reject) => {
      const p: Pending = { resolve: (pdu, authenticated) => resolve({ pdu, authenticated }), reject, ...(v3 ? { v3 } : {}) };
      let attempt = 0;
      const send = () => {
        this.bytesSent += msg.length;
        this.socket.send(msg, (e) => {
          if (e) this.socketFailed = true;
          if (e && this.pending.get(id) === p) {
            this.pending.delete(id);
            clearTimeout(p.timer);
            reject(e);
          }
        });
        p.timer = setTimeout(() => {
          if (attempt++ < this.retries) return send();
          this.pending.delete(id);
          reject(new SnmpTimeoutError(`no answer from udp ${this.addr} within ${this.timeoutMs} ms (${this.retries + 1} attempts)`));
        }, this.timeoutMs);
      };
      this.pending.set(id, p);
      send();
    });
  }

  private newId(): number {
    this.nextId = this.nextId >= 0x7ffffffe ? 1 : this.nextId + 1;
    return this.nextId;
  }

  /**
   * One request; any error status rejects with SnmpResponseError, GetBulk included (a tooBig,
   * genErr or authorizationError response carries no usable varbinds: a walk must not end there
   * as if the subtree were done).
   */
  async request(type: number, varbinds: VarBind[], nonRepeaters = 0, maxRepetitions = 0): Promise<Pdu> {
    const pdu: Pdu = { type, requestId: 0, errorStatus: nonRepeaters, errorIndex: maxRepetitions, varbinds };
    const res = await this.send(pdu, true);
    if (res.errorStatus) {
      const name = ErrorStatus[res.errorStatus] ?? String(res.errorStatus);
      throw new SnmpResponseError(
        `agent at ${this.addr} answered ${name}${res.errorIndex ? ` for varbind ${res.errorIndex}` : ''}`,
        res.errorStatus,
        res.errorIndex,
      );
    }
    return res;
  }

  /** Sends a confirmed PDU (request or inform) and returns the response. */
  async send(pdu: Pdu, confirmed: boolean): Promise<Pdu> {
    if (this.version !== '3') {
      // Encoded once per session, not once per request (a walk sends dozens).
      const community = (this.communityBytes ??= Buffer.from(this.target.community ?? 'public'));
      const v = this.version === '1' ? 0 : 1;
      const id = this.newId();
      if (!confirmed) {
        if (this.released) throw new Error('session closed');
        const msg = encodeCommunity(v, community, { ...pdu, requestId: id });
        this.bytesSent += msg.length;
        this.socket.send(msg);
        return pdu;
      }
      return (await this.exchange((rid) => encodeCommunity(v, community, { ...pdu, requestId: rid }), id)).pdu as Pdu;
    }
    if (!this.engine) await this.discover();
    for (let tries = 0; ; tries++) {
      const { pdu: res, authenticated } = await this.sendV3(pdu);
      if (res.type !== PduType.Report) return res as Pdu;
      const oid = res.varbinds[0]?.oid;
      // Only an authenticated report has synchronised the engine time (acceptV3): retry once then.
      if (oid === USM_STATS.notInTimeWindows && authenticated && tries === 0) continue;
      throw new SnmpResponseError(`agent at ${this.addr} refused the request: ${reportName(oid)}`);
    }
  }

  private sendV3(pdu: Pdu): Promise<{ pdu: AnyPdu; authenticated: boolean }> {
    const engine = this.engine!;
    this.local ??= localize(this.user!, engine.id);
    const id = this.newId();
    const level = (this.local?.auth ? 1 : 0) | (this.local?.priv ? 2 : 0);
    return this.exchange(
      (mid) =>
        encodeV3(
          {
            msgId: mid,
            maxSize: 65507,
            reportable: true,
            engineId: engine.id,
            boots: this.engine!.boots,
            time: this.currentTime(),
            userName: this.user!.name,
            contextEngineId: engine.id,
            contextName: this.target.contextName ?? '',
          },
          this.local,
          { ...pdu, requestId: mid },
        ),
      id,
      { level, userName: this.user!.name, engineId: engine.id },
    );
  }

  /** RFC 3414 4: an empty noAuth request makes the agent report its engine ID, boots and time. */
  private async discover(): Promise<void> {
    const id = this.newId();
    const { pdu: res } = await this.exchange(
      (mid) =>
        encodeV3(
          {
            msgId: mid,
            maxSize: 65507,
            reportable: true,
            engineId: Buffer.alloc(0),
            boots: 0,
            time: 0,
            userName: '',
            contextEngineId: Buffer.alloc(0),
            contextName: '',
          },
          null,
          { type: PduType.Get, requestId: mid, errorStatus: 0, errorIndex: 0, varbinds: [] },
        ),
      id,
      { level: 0, userName: '', engineId: Buffer.alloc(0) },
    );
    if (!this.engine) throw new SnmpResponseError(`agent at ${this.addr} did not report its engine ID (PDU type 0x${res.type.toString(16)})`);
    this.local = null;
    if (this.user!.auth) {
      // Authenticated time synchronisation: the first authenticated request may get notInTimeWindows.
      this.local = localize(this.user!, this.engine.id);
    }
  }

  get(oids: string[]): Promise<Pdu> {
    return this.request(
      PduType.Get,
      oids.map((oid) => ({ oid, type: 'Null', value: null })),
    );
  }
}

function reportName(oid: string | undefined): string {
  const hit = Object.entries(USM_STATS).find(([, v]) => v === oid);
  return hit ? hit[0] : `report ${oid ?? '(empty)'}`;
}
