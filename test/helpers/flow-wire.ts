// Encoders of flow datagrams for tests and fuzz seeds, written from the formats' specifications
// (Cisco's NetFlow v5 layout, RFC 3954, RFC 7011, sFlow v5), independently of the decoders.

export const u8 = (v: number) => Buffer.from([v & 0xff]);
export const u16 = (v: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
};
export const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
};
export const u64 = (v: number | bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(v));
  return b;
};
export const ip4 = (s: string) => Buffer.from(s.split('.').map(Number));
/** An IPFIX variable-length value (RFC 7011 section 7): 1 length byte, or 255 and 2 bytes. */
export const varlen = (v: Buffer) => Buffer.concat([v.length < 255 ? u8(v.length) : Buffer.concat([u8(255), u16(v.length)]), v]);

export interface V5Flow {
  src: string;
  dst: string;
  packets: number;
  bytes: number;
  sport: number;
  dport: number;
  protocol: number;
  first?: number;
  last?: number;
  input?: number;
  output?: number;
}

export function netflow5(h: { seq: number; uptime?: number; secs?: number; sampling?: number }, flows: V5Flow[]): Buffer {
  const head = Buffer.concat([
    u16(5),
    u16(flows.length),
    u32(h.uptime ?? 100_000),
    u32(h.secs ?? 1_780_000_000),
    u32(0),
    u32(h.seq),
    u8(0),
    u8(0),
    u16(h.sampling ?? 0),
  ]);
  const recs = flows.map((f) => {
    const r = Buffer.alloc(48);
    ip4(f.src).copy(r, 0);
    ip4(f.dst).copy(r, 4);
    r.writeUInt16BE(f.input ?? 0, 12);
    r.writeUInt16BE(f.output ?? 0, 14);
    r.writeUInt32BE(f.packets, 16);
    r.writeUInt32BE(f.bytes, 20);
    r.writeUInt32BE(f.first ?? 90_000, 24);
    r.writeUInt32BE(f.last ?? 95_000, 28);
    r.writeUInt16BE(f.sport, 32);
    r.writeUInt16BE(f.dport, 34);
    r[38] = f.protocol;
    return r;
  });
  return Buffer.concat([head, ...recs]);
}

/** A set (IPFIX) or flowset (v9): id, length, body. */
export const set = (id: number, ...body: Buffer[]) => {
  const b = Buffer.concat(body);
  return Buffer.concat([u16(id), u16(4 + b.length), b]);
};

/** Field specifiers [id, length, enterprise?]. */
export type Field = [number, number, number?];

export const templateRecord = (id: number, fields: Field[]) =>
  Buffer.concat([
    u16(id),
    u16(fields.length),
    ...fields.map(([f, len, pen]) => (pen ? Buffer.concat([u16(f | 0x8000), u16(len), u32(pen)]) : Buffer.concat([u16(f), u16(len)]))),
  ]);

export const ipfixOptionsTemplate = (id: number, scope: Field[], fields: Field[]) =>
  Buffer.concat([u16(id), u16(scope.length + fields.length), u16(scope.length), ...[...scope, ...fields].map(([f, len]) => Buffer.concat([u16(f), u16(len)]))]);

export const v9OptionsTemplate = (id: number, scope: Field[], fields: Field[]) =>
  Buffer.concat([u16(id), u16(scope.length * 4), u16(fields.length * 4), ...[...scope, ...fields].map(([f, len]) => Buffer.concat([u16(f), u16(len)]))]);

export function ipfix(h: { seq: number; domain?: number; exportTime?: number }, ...sets: Buffer[]): Buffer {
  const body = Buffer.concat(sets);
  return Buffer.concat([u16(10), u16(16 + body.length), u32(h.exportTime ?? 1_780_000_000), u32(h.seq), u32(h.domain ?? 1), body]);
}

export function netflow9(h: { seq: number; sourceId?: number; uptime?: number; secs?: number; count?: number }, ...sets: Buffer[]): Buffer {
  return Buffer.concat([
    u16(9),
    u16(h.count ?? sets.length),
    u32(h.uptime ?? 100_000),
    u32(h.secs ?? 1_780_000_000),
    u32(h.seq),
    u32(h.sourceId ?? 0),
    ...sets,
  ]);
}

/** The usual IPv4 5-tuple template: addresses, ports, protocol, bytes, packets. */
export const FIVE_TUPLE: Field[] = [
  [8, 4],
  [12, 4],
  [7, 2],
  [11, 2],
  [4, 1],
  [1, 8],
  [2, 4],
];
export const fiveTuple = (src: string, dst: string, sport: number, dport: number, proto: number, bytes: number, packets: number) =>
  Buffer.concat([ip4(src), ip4(dst), u16(sport), u16(dport), u8(proto), u64(bytes), u32(packets)]);

// ---- sFlow v5 ------------------------------------------------------------------------------

export function sflow(h: { seq: number; agent?: string; subAgent?: number; uptime?: number }, ...samples: Buffer[]): Buffer {
  return Buffer.concat([
    u32(5),
    u32(1),
    ip4(h.agent ?? '192.0.2.1'),
    u32(h.subAgent ?? 0),
    u32(h.seq),
    u32(h.uptime ?? 100_000),
    u32(samples.length),
    ...samples,
  ]);
}

const xdr = (format: number, body: Buffer) => Buffer.concat([u32(format), u32(body.length), body]);

/** A flow sample (format 1) with its records. */
export const flowSample = (s: { seq: number; rate: number; pool?: number; input?: number; output?: number }, ...records: Buffer[]) =>
  xdr(
    1,
    Buffer.concat([
      u32(s.seq),
      u32(s.input ?? 3),
      u32(s.rate),
      u32(s.pool ?? s.seq * s.rate),
      u32(0),
      u32(s.input ?? 3),
      u32(s.output ?? 7),
      u32(records.length),
      ...records,
    ]),
  );

/** A raw packet header record (format 1) of an Ethernet frame. */
export function sampledHeader(frame: Buffer, frameLength = frame.length + 4): Buffer {
  const pad = Buffer.alloc((4 - (frame.length % 4)) % 4);
  return xdr(1, Buffer.concat([u32(1), u32(frameLength), u32(4), u32(frame.length), frame, pad]));
}

/** A counter sample (format 2) with one generic interface record (format 1). */
export function counterSample(s: { seq: number; ifIndex: number; inOctets: number; outOctets: number; speed?: number }): Buffer {
  const c = Buffer.concat([
    u32(s.ifIndex),
    u32(6),
    u64(s.speed ?? 1_000_000_000),
    u32(1),
    u32(3),
    u64(s.inOctets),
    ...[1, 2, 3, 4, 5, 6].map(u32),
    u64(s.outOctets),
    ...[7, 8, 9, 10, 11, 0].map(u32),
  ]);
  return xdr(2, Buffer.concat([u32(s.seq), u32(s.ifIndex), u32(1), xdr(1, c)]));
}
