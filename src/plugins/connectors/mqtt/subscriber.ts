// A small MQTT subscriber session over one socket. It exists because mqtt.js 5 sends the PUBACK
// of an incoming QoS 1 message from the callback of handleMessage() and reads no further packet
// until that callback runs: holding acknowledgements until delivery would let one message through
// per delivery round trip (docs/connectors/mqtt.md has the measurements). Here reading and
// acknowledging are apart:
//
// - the socket bytes are cut into packets here; PUBLISH (the hot path) is decoded here without
//   copying, every other packet by `mqtt-packet` (the parser and encoder mqtt.js itself uses),
//   which also encodes CONNECT, SUBSCRIBE, PINGREQ, PUBCOMP and DISCONNECT;
// - every PUBLISH is handed on as it is read; its PUBACK (QoS 1) or PUBREC (QoS 2) is written only
//   when ack() is called, in the order the messages came (MQTT 4.6). A PUBREL is answered at once
//   with PUBCOMP: after PUBREC the broker has let go of the message, so holding PUBREC (not
//   PUBCOMP) is what makes it deliver the message again after a reconnect;
// - MQTT 5 (default): CONNECT announces a Receive Maximum, the number of unacknowledged QoS 1/2
//   messages the broker may send (Mosquitto 2.0 uses it instead of its max_inflight_messages, and
//   enforces either only for the first window); MQTT 3.1.1: the broker's own limit applies;
// - clean = false with a fixed client id keeps the session (subscription and unacknowledged
//   messages) on the broker across reconnects and restarts (MQTT 5: session expiry "never");
// - pause() stops reading the socket (the broker's TCP window then fills and it stops sending);
// - keepalive: a PINGREQ every keepalive interval (paused too); a broker that sends nothing (no
//   PINGRESP, no other packet) for a whole interval while the socket is read is taken as gone.
import net from 'node:net';
import tls from 'node:tls';
import type { IConnackPacket, ISubackPacket, Packet } from 'mqtt-packet';
import { once as lazy } from '../../connector-runtime/lazy.js';
import {
  brokerAddress,
  closedBeforeConnack,
  connackRefusal,
  CONNECT_TIMEOUT_MS,
  describeSocketError,
  isEarlyClose,
  KEEPALIVE_S,
  reasonText,
  tlsOptions,
  type BrokerConfig,
} from './client.js';

export type QoS = 0 | 1 | 2;

export interface SubscriberOptions extends BrokerConfig {
  clientId: string;
  /** false: a persistent session (resume after reconnect). */
  clean: boolean;
  topic: string;
  qos: QoS;
  /** Unacknowledged QoS 1/2 messages the broker may send (MQTT 5). */
  receiveMaximum: number;
  keepaliveS?: number;
  connectTimeoutMs?: number;
  /** Gives up connecting when aborted (a stopped pipeline, a timed-out check). */
  signal?: AbortSignal;
}

export interface Incoming {
  topic: string;
  payload: Buffer;
  qos: QoS;
  retain: boolean;
  dup: boolean;
  messageId?: number;
}

export interface SubscriberHandlers {
  message(m: Incoming): void;
  /** The session ended without close(): the socket closed or failed, or the broker went silent. */
  lost(err: Error): void;
  /** Something worth a warning (a QoS downgraded by the broker). */
  warn?(msg: string): void;
}

/** MQTT 5 session expiry interval that means "never" (the 3.1.1 behaviour of clean = false). */
const SESSION_NEVER_EXPIRES = 0xffffffff;

const mqttPacket = lazy(async () => (await import('mqtt-packet')).default);
type MqttPacket = Awaited<ReturnType<typeof mqttPacket>>;

export class Subscriber {
  /** The broker still had this client's session (clean = false): unacknowledged messages come again. */
  sessionPresent = false;
  /** QoS the broker granted to the subscription. */
  grantedQos: QoS = 0;
  private readonly parser;
  private readonly gen: { protocolVersion: 4 | 5 };
  private ended = false;
  /** open() has not returned yet: failures go to it, not to lost(). */
  private starting = true;
  private connacked = false;
  private paused = false;
  private heardSincePing = true;
  private pingTimer?: NodeJS.Timeout;
  private waiting?: { cmd: 'connack' | 'suback'; resolve(p: Packet): void };
  /** The start of a packet not yet received whole, in the pieces it came in. */
  private rest: Buffer[] = [];
  private restBytes = 0;
  /** Bytes of that packet, once its header was read (so its pieces are joined once, not per read). */
  private restNeed = 0;

  private constructor(
    private readonly socket: net.Socket,
    private readonly o: SubscriberOptions,
    private readonly h: SubscriberHandlers,
    private readonly failStart: (e: Error) => void,
    private readonly mp: MqttPacket,
  ) {
    this.gen = { protocolVersion: o.protocol_version };
    this.parser = mp.parser(this.gen);
    this.parser.on('packet', (p: Packet) => this.onPacket(p));
    this.parser.on('error', (e: Error) => this.fail(new Error(`malformed packet from ${brokerAddress(o)}: ${e.message}`)));
    socket.on('data', (b: Buffer) => {
      this.heardSincePing = true;
      this.onData(b);
    });
    socket.on('error', (e) => this.fail(describeSocketError(e, o)));
    socket.on('close', () => this.fail(new Error(`connection to ${brokerAddress(o)} closed`)));
  }

  /** Connects, authenticates and subscribes; rejects with a message that says what to fix. */
  static async open(o: SubscriberOptions, h: SubscriberHandlers): Promise<Subscriber> {
    const timeoutMs = o.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    const tlsOpts = o.tls ? await tlsOptions(o) : undefined;
    const mp = await mqttPacket();
    let startFailed!: (e: Error) => void;
    const failed = new Promise<never>((_, reject) => (startFailed = reject));
    failed.catch(() => {});
    const onAbort = () => startFailed(new Error('connect aborted'));
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const socket = tlsOpts ? tls.connect({ host: o.host, port: o.port, ...tlsOpts }) : net.connect({ host: o.host, port: o.port });
    socket.setNoDelay(true);
    const s = new Subscriber(socket, o, h, (e) => startFailed(e), mp);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from ${brokerAddress(o)} within ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      await Promise.race([once(socket, tlsOpts ? 'secureConnect' : 'connect'), failed, timeout]);
      const connack = (await Promise.race([s.request('connack', s.connectPacket()), failed, timeout])) as IConnackPacket;
      const code = (o.protocol_version === 5 ? connack.reasonCode : connack.returnCode) ?? 0;
      if (code !== 0) throw connackRefusal(code, o.protocol_version);
      s.connacked = true;
      s.sessionPresent = connack.sessionPresent;
      s.startKeepalive(connack.properties?.serverKeepAlive ?? o.keepaliveS ?? KEEPALIVE_S);
      const suback = (await Promise.race([s.request('suback', s.subscribePacket()), failed, timeout]).catch((e: Error) => {
        throw new Error(`cannot subscribe to '${o.topic}': ${e.message}`, { cause: e });
      })) as ISubackPacket;
      const granted = Number((suback.granted as number[])[0] ?? 0x80);
      if (granted >= 0x80)
        throw new Error(
          `the broker refused the subscription to '${o.topic}': ${granted === 0x80 ? 'refused (not authorized, or the topic filter is invalid)' : reasonText(granted, o.protocol_version)}`,
        );
      s.grantedQos = granted as QoS;
      if (granted < o.qos)
        h.warn?.(`the broker granted QoS ${granted} for '${o.topic}' where ${o.qos} was asked: messages are acknowledged as the broker sends them`);
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      s.starting = false;
      return s;
    } catch (e) {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      s.starting = false;
      s.ended = true;
      s.stopKeepalive();
      socket.destroy();
      throw e;
    }
  }

  /**
   * Acknowledges delivered messages, in the order they came: PUBACK for QoS 1, PUBREC for QoS 2
   * (the broker then sends PUBREL, answered with PUBCOMP). QoS 0 messages need nothing.
   */
  ack(messages: ArrayLike<Pick<Incoming, 'qos' | 'messageId'>>) {
    if (this.ended) return;
    // PUBACK and PUBREC are 4 bytes each (MQTT 5 too: reason code 0 and no properties may be left out).
    const out = Buffer.allocUnsafe(4 * messages.length);
    let n = 0;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      if (m.qos === 0) continue;
      out[n] = m.qos === 1 ? 0x40 : 0x50;
      out[n + 1] = 2;
      out.writeUInt16BE(m.messageId!, n + 2);
      n += 4;
    }
    if (n) this.socket.write(out.subarray(0, n));
  }

  pause() {
    this.paused = true;
    this.socket.pause();
  }

  resume() {
    this.paused = false;
    this.heardSincePing = true;
    this.socket.resume();
  }

  /**
   * Ends the session: DISCONNECT (the broker keeps a persistent session), then the socket once
   * what was written (acknowledgements) has gone out.
   */
  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.stopKeepalive();
    const closed = once(this.socket, 'close');
    // Read on (and drop) what still comes, or a paused socket never sees the broker's end and never closes.
    this.socket.removeAllListeners('data');
    this.socket.resume();
    this.socket.end(this.mp.generate({ cmd: 'disconnect' }, this.gen));
    const timer = setTimeout(() => this.socket.destroy(), 2000);
    await closed;
    clearTimeout(timer);
  }

  private connectPacket(): Packet {
    const o = this.o;
    return {
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: o.protocol_version,
      clientId: o.clientId,
      clean: o.clean,
      keepalive: o.keepaliveS ?? KEEPALIVE_S,
      username: o.username,
      password: o.password === undefined ? undefined : Buffer.from(o.password),
      properties: o.protocol_version === 5 ? { receiveMaximum: o.receiveMaximum, sessionExpiryInterval: o.clean ? 0 : SESSION_NEVER_EXPIRES } : undefined,
    };
  }

  private subscribePacket(): Packet {
    // MQTT 5 retain handling 1: retained messages only when the subscription is new, so resuming
    // a persistent session does not deliver them again on every reconnect.
    const rh = this.o.protocol_version === 5 && !this.o.clean ? 1 : 0;
    return { cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: this.o.topic, qos: this.o.qos, ...(this.o.protocol_version === 5 ? { rh } : {}) }] };
  }

  private request(cmd: 'connack' | 'suback', p: Packet): Promise<Packet> {
    return new Promise((resolve) => {
      this.waiting = { cmd, resolve };
      this.socket.write(this.mp.generate(p, this.gen));
    });
  }

  /**
   * Cuts the byte stream into packets. PUBLISH, the hot path, is decoded here (no copy: the payload
   * is a view of the received bytes); every other packet goes whole to mqtt-packet's parser.
   */
  private onData(chunk: Buffer) {
    let buf = chunk;
    if (this.rest.length) {
      this.rest.push(chunk);
      this.restBytes += chunk.length;
      if (this.restBytes < this.restNeed) return;
      buf = Buffer.concat(this.rest, this.restBytes);
      this.rest = [];
      this.restBytes = this.restNeed = 0;
    }
    const keep = (from: number, need: number) => {
      this.rest = [buf.subarray(from)];
      this.restBytes = buf.length - from;
      this.restNeed = need;
    };
    let i = 0;
    while (i < buf.length && !this.ended) {
      // Fixed header: type and flags, then the remaining length (1 to 4 bytes of 7 bits).
      let len = 0;
      let mul = 1;
      let j = i + 1;
      for (;;) {
        if (j >= buf.length) return keep(i, 0);
        const b = buf[j++]!;
        len += (b & 0x7f) * mul;
        if (!(b & 0x80)) break;
        mul *= 128;
        if (j - i > 4) return this.fail(new Error(`malformed packet from ${brokerAddress(this.o)}: remaining length over 4 bytes`));
      }
      const end = j + len;
      if (end > buf.length) return keep(i, end - i);
      const head = buf[i]!;
      if (head >> 4 === 3) {
        if (!this.publish(buf, head, j, end)) return this.fail(new Error(`malformed PUBLISH from ${brokerAddress(this.o)}`));
      } else this.parser.parse(buf.subarray(i, end));
      i = end;
    }
  }

  private publish(buf: Buffer, head: number, at: number, end: number): boolean {
    const q = (head >> 1) & 3;
    if (q === 3 || at + 2 > end) return false;
    const qos = q as QoS;
    const topicEnd = at + 2 + buf.readUInt16BE(at);
    let pos = topicEnd;
    let messageId: number | undefined;
    if (qos > 0) {
      if (pos + 2 > end) return false;
      messageId = buf.readUInt16BE(pos);
      pos += 2;
    }
    if (this.o.protocol_version === 5) {
      // Properties (none that we use: no topic alias was offered): their length, then skipped.
      let plen = 0;
      let mul = 1;
      for (;;) {
        if (pos >= end) return false;
        const b = buf[pos++]!;
        plen += (b & 0x7f) * mul;
        if (!(b & 0x80)) break;
        mul *= 128;
      }
      pos += plen;
    }
    if (pos > end) return false;
    this.h.message({
      topic: buf.toString('utf8', at + 2, topicEnd),
      payload: buf.subarray(pos, end),
      qos,
      retain: (head & 1) === 1,
      dup: (head & 8) === 8,
      messageId,
    });
    return true;
  }

  private onPacket(p: Packet) {
    switch (p.cmd) {
      case 'pubrel':
        this.socket.write(this.mp.generate({ cmd: 'pubcomp', messageId: p.messageId! }, this.gen));
        return;
      case 'pingresp':
        return;
      case 'connack':
      case 'suback':
        if (this.waiting?.cmd === p.cmd) {
          const w = this.waiting;
          this.waiting = undefined;
          w.resolve(p);
        }
        return;
      case 'disconnect': {
        const code = (p as { reasonCode?: number }).reasonCode ?? 0;
        this.fail(new Error(`the broker ended the session: ${reasonText(code, this.o.protocol_version)}`));
        return;
      }
      default:
        return;
    }
  }

  private startKeepalive(seconds: number) {
    if (seconds <= 0) return;
    this.pingTimer = setInterval(() => {
      // Paused, the replies wait in the unread socket: ping (the broker wants to hear from us) without checking.
      if (!this.paused && !this.heardSincePing) return this.fail(new Error(`${brokerAddress(this.o)} did not answer a keepalive ping within ${seconds} s`));
      this.heardSincePing = this.paused;
      this.socket.write(this.mp.generate({ cmd: 'pingreq' }, this.gen));
    }, seconds * 1000);
    this.pingTimer.unref();
  }

  private stopKeepalive() {
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
  }

  private fail(e: Error) {
    if (this.starting) {
      // open() reports it; a close before CONNACK says more than "closed".
      this.waiting = undefined;
      this.failStart(!this.connacked && isEarlyClose((e.cause as Error | undefined) ?? e) ? closedBeforeConnack(this.o) : e);
      return;
    }
    if (this.ended) return;
    this.ended = true;
    this.stopKeepalive();
    this.socket.destroy();
    this.h.lost(e);
  }
}

function once(emitter: net.Socket, event: string): Promise<void> {
  return new Promise((resolve) => emitter.once(event, () => resolve()));
}
