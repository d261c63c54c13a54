// A GIOP 1.2 client over IIOP (TCP): one connection per host:port, request ids counted per
// connection, replies matched by id, a deadline per invocation (connect, forwards and reply
// included), LOCATION_FORWARD followed a bounded number of times, and exceptions turned into errors
// that name the exception's repository id and minor code.
import net from 'node:net';
import { errorMessage } from '../../../core/errors.js';
import { readSetting } from '../../../settings.js';
import { CdrReader, CdrWriter } from './cdr.js';
import {
  codeSetsContext,
  decodeLocateReply,
  decodeReply,
  encodeCancelRequest,
  encodeLocateRequest,
  encodeRequest,
  encodeSimple,
  GiopFramer,
  MSG,
  readHeader,
  readSystemException,
  replyRequestId,
  type LocateReply,
  type Reply,
} from './giop.js';
import { readIor, whereOf, type IiopProfile, type ObjectRef } from './ior.js';

/** A CORBA exception in a reply: `kind` system or user, `id` its repository id. */
export class CorbaException extends Error {
  override name = 'CorbaException';
  constructor(
    readonly kind: 'system' | 'user',
    readonly id: string,
    readonly operation: string,
    readonly minor?: number,
    readonly completed?: string,
    /** A user exception's body after its repository id (its members), for callers that know its type. */
    readonly body?: CdrReader,
  ) {
    super(
      kind === 'system'
        ? `'${operation}' raised the system exception ${id} (minor code 0x${(minor ?? 0).toString(16).padStart(8, '0')}, completed ${completed})`
        : `'${operation}' raised the user exception ${id}`,
    );
  }
}

/** The connection failed, closed, or the peer said something that is not GIOP: the call may be retried. */
export class CorbaTransportError extends Error {
  override name = 'CorbaTransportError';
}

export class CorbaTimeoutError extends Error {
  override name = 'CorbaTimeoutError';
}

type Waiter = { resolve(msg: Buffer): void; reject(e: Error): void };

/** One IIOP connection. */
export class GiopConnection {
  private nextId = 1;
  private pending = new Map<number, Waiter>();
  private framer = new GiopFramer(readSetting('CORBA_MAX_MESSAGE_BYTES'));
  private sentCodeSets = false;
  private failure?: Error;

  private constructor(
    private readonly socket: net.Socket,
    readonly where: string,
    readonly littleEndian: boolean,
  ) {
    socket.on('data', (chunk: Buffer) => {
      let msgs: Buffer[];
      try {
        msgs = this.framer.push(chunk);
      } catch (e) {
        this.fail(new CorbaTransportError(`${where}: ${errorMessage(e)}`));
        return;
      }
      for (const m of msgs) this.dispatch(m);
    });
    socket.on('error', (e) => this.fail(new CorbaTransportError(`connection to ${where} failed: ${e.message}`)));
    socket.on('close', () => this.fail(new CorbaTransportError(`connection to ${where} closed before the reply`)));
  }

  /** Connects to host:port within `timeoutMs`. */
  static open(host: string, port: number, timeoutMs: number, littleEndian = true): Promise<GiopConnection> {
    const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port });
      socket.setNoDelay(true);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new CorbaTimeoutError(`cannot connect to ${where}: no answer within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      socket.once('error', (e) => {
        clearTimeout(timer);
        reject(new CorbaTransportError(`cannot connect to ${where}: ${e.message}`));
      });
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new GiopConnection(socket, where, littleEndian));
      });
    });
  }

  get closed() {
    return this.failure !== undefined;
  }

  private dispatch(msg: Buffer) {
    const h = readHeader(msg);
    if (h.type === MSG.Reply || h.type === MSG.LocateReply) {
      let id: number;
      try {
        id = replyRequestId(msg);
      } catch (e) {
        this.fail(new CorbaTransportError(`${this.where}: malformed reply: ${errorMessage(e)}`));
        return;
      }
      const w = this.pending.get(id);
      if (!w) return; // the answer to a request that timed out
      this.pending.delete(id);
      w.resolve(msg);
    } else if (h.type === MSG.CloseConnection) {
      this.fail(new CorbaTransportError(`${this.where} closed the connection (GIOP CloseConnection): the request was not processed and can be sent again`));
    } else if (h.type === MSG.MessageError) {
      this.fail(new CorbaTransportError(`${this.where} answered MessageError: it could not parse our GIOP message`));
    } else {
      // A Request or LocateRequest from the server (bidirectional GIOP) is not something we serve.
      this.socket.write(encodeSimple(MSG.MessageError, this.littleEndian));
    }
  }

  private fail(e: Error) {
    if (this.failure) return;
    this.failure = e;
    for (const w of this.pending.values()) w.reject(e);
    this.pending.clear();
    this.socket.destroy();
  }

  private exchange(build: (id: number) => Buffer, timeoutMs: number, what: string): Promise<Buffer> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++ >>> 0;
    return new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        this.socket.write(encodeCancelRequest(id, this.littleEndian));
        reject(new CorbaTimeoutError(`${what} on ${this.where}: no reply within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.socket.write(build(id));
    });
  }

  /** Sends a Request and resolves with its Reply (any status). */
  async request(key: Uint8Array, operation: string, body: ((w: CdrWriter) => void) | undefined, timeoutMs: number): Promise<Reply> {
    const contexts = this.sentCodeSets ? [] : [codeSetsContext(this.littleEndian)];
    this.sentCodeSets = true;
    const msg = await this.exchange(
      (requestId) => encodeRequest({ requestId, key, operation, contexts, body, littleEndian: this.littleEndian }),
      timeoutMs,
      `'${operation}'`,
    );
    return decodeReply(msg);
  }

  /** Sends a LocateRequest: is the object here? */
  async locate(key: Uint8Array, timeoutMs: number): Promise<LocateReply> {
    const msg = await this.exchange((id) => encodeLocateRequest(id, key, this.littleEndian), timeoutMs, 'LocateRequest');
    return decodeLocateReply(msg);
  }

  /** Sends CloseConnection and closes the socket (pending requests fail). */
  close() {
    if (!this.failure) {
      this.socket.end(encodeSimple(MSG.CloseConnection, this.littleEndian));
      this.fail(new CorbaTransportError(`connection to ${this.where} closed by us`));
    }
  }
}

export interface InvokeOptions {
  /** The whole call: connects, forwards and the reply (ms). */
  timeoutMs: number;
  /** How many LOCATION_FORWARD replies are followed before giving up. */
  maxForwards?: number;
}

export const MAX_FORWARDS = 5;

/** Connections by host:port, opened on first use and closed together. */
export class CorbaClient {
  private conns = new Map<string, Promise<GiopConnection>>();

  constructor(private readonly littleEndian = true) {}

  private async connection(p: IiopProfile, deadline: number): Promise<GiopConnection> {
    const k = `${p.host}:${p.port}`;
    const existing = this.conns.get(k);
    if (existing) {
      const c = await existing.catch(() => undefined);
      if (c && !c.closed) return c;
      this.conns.delete(k);
    }
    const opening = GiopConnection.open(p.host, p.port, remaining(deadline), this.littleEndian);
    this.conns.set(k, opening);
    opening.catch(() => this.conns.delete(k));
    return opening;
  }

  /** Tries the reference's profiles in order until one connects; the last error when none does. */
  private async firstReachable<T>(ref: ObjectRef, deadline: number, f: (c: GiopConnection, p: IiopProfile) => Promise<T>): Promise<T> {
    if (ref.profiles.length === 0) throw new CorbaTransportError('the object reference is nil (no IIOP profile)');
    let last: Error | undefined;
    for (const p of ref.profiles) {
      let c: GiopConnection;
      try {
        c = await this.connection(p, deadline);
      } catch (e) {
        last = e as Error;
        if (e instanceof CorbaTimeoutError) throw e;
        continue;
      }
      return f(c, p);
    }
    throw last!;
  }

  /**
   * Invokes `operation` on `ref` and returns a reader at the start of its results. Follows
   * LOCATION_FORWARD (and _PERM) up to `maxForwards` times; throws CorbaException for a system or
   * user exception, CorbaTimeoutError past the deadline, CorbaTransportError when it cannot talk.
   */
  async invoke(
    ref: ObjectRef,
    operation: string,
    body: ((w: CdrWriter) => void) | undefined,
    opts: InvokeOptions,
  ): Promise<{ result: CdrReader; target: ObjectRef }> {
    const deadline = Date.now() + opts.timeoutMs;
    const max = opts.maxForwards ?? MAX_FORWARDS;
    let target = ref;
    for (let hop = 0; ; hop++) {
      const reply = await this.firstReachable(target, deadline, (c, p) => c.request(p.key, operation, body, remaining(deadline)));
      switch (reply.status) {
        case 'NO_EXCEPTION':
          return { result: reply.body, target };
        case 'SYSTEM_EXCEPTION': {
          const x = readSystemException(reply.body);
          throw new CorbaException('system', x.id, operation, x.minor, x.completed);
        }
        case 'USER_EXCEPTION':
          throw new CorbaException('user', reply.body.string(), operation, undefined, undefined, reply.body);
        case 'LOCATION_FORWARD':
        case 'LOCATION_FORWARD_PERM': {
          if (hop >= max) throw new CorbaTransportError(`'${operation}' was forwarded more than ${max} times (last to ${whereOf(target)}): a forwarding loop?`);
          target = readIor(reply.body);
          continue;
        }
        default:
          throw new CorbaTransportError(`'${operation}' got a reply with ${reply.status}, which this client does not handle`);
      }
    }
  }

  /** LocateRequest, following OBJECT_FORWARD: resolves when the object is there, else throws. */
  async locate(ref: ObjectRef, opts: InvokeOptions): Promise<ObjectRef> {
    const deadline = Date.now() + opts.timeoutMs;
    const max = opts.maxForwards ?? MAX_FORWARDS;
    let target = ref;
    for (let hop = 0; ; hop++) {
      const reply = await this.firstReachable(target, deadline, (c, p) => c.locate(p.key, remaining(deadline)));
      switch (reply.status) {
        case 'OBJECT_HERE':
          return target;
        case 'UNKNOWN_OBJECT':
          throw new CorbaTransportError(`no object with this key at ${whereOf(target)} (LocateReply UNKNOWN_OBJECT): check the IOR or the name`);
        case 'OBJECT_FORWARD':
        case 'OBJECT_FORWARD_PERM':
          if (hop >= max) throw new CorbaTransportError(`the object was forwarded more than ${max} times`);
          target = readIor(reply.body);
          continue;
        case 'LOC_SYSTEM_EXCEPTION': {
          const x = readSystemException(reply.body);
          throw new CorbaException('system', x.id, 'LocateRequest', x.minor, x.completed);
        }
        default:
          throw new CorbaTransportError(`LocateRequest got ${reply.status}`);
      }
    }
  }

  close() {
    for (const p of this.conns.values()) void p.then((c) => c.close()).catch(() => {});
    this.conns.clear();
  }
}

function remaining(deadline: number): number {
  return Math.max(1, deadline - Date.now());
}
