// fast-check arbitraries that build inputs from a grammar rather than from a seed: well-formed
// structure with hostile values (huge numbers, deep nesting, odd strings), which mutating valid
// samples reaches only by luck. The fuzz loop draws a share of its inputs from them.
import fc from 'fast-check';
import { FUNCTION_NAMES } from '../src/expr/index.js';
import { encodeCommunity, PduType, type AnyPdu } from '../src/snmp/message.js';
import type { SnmpType, VarBind } from '../src/snmp/values.js';
import type { Rng } from './mutate.js';

/** Draws from an arbitrary in batches (one fast-check run per batch), seeded by the fuzz loop's Rng. */
export function drawFrom<T>(arb: fc.Arbitrary<T>, toBuffer: (v: T) => Buffer): (r: Rng) => Buffer {
  let batch: T[] = [];
  return (r) => {
    if (!batch.length) batch = fc.sample(arb, { seed: r.int(2 ** 31), numRuns: 200 });
    return toBuffer(batch.pop()!);
  };
}

const FIELDS = ['ifInOctets', 'host', 'tags', 'nested', 'nested.x.y', 's', 'n', 'big', 'f', 't', 'missing', "$['host']", '$.tags', 'nested.x.y[-1]', 'tags[0]'];
const OPS = ['+', '-', '*', '/', '//', '%', '**', '==', '!=', '<', '<=', '>', '>=', 'in', 'not in', 'is', 'is not', 'and', 'or'];

const literal = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => String(Math.abs(d))),
  fc.constantFrom('9007199254740991', '1e308', '.5', '0', 'true', 'false', 'null', 'None', "r'\\d+'", "'\\x41\\u00e9'", "''"),
  fc.string({ maxLength: 12 }).map((s) => `'${s.replace(/[\\']/g, '')}'`),
);

/** Expressions of the language's grammar (docs/expressions.md), nested a few levels. */
export const expression: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    literal,
    fc.constantFrom(...FIELDS),
    fc.tuple(tie('e'), fc.constantFrom(...OPS), tie('e')).map(([a, o, b]) => `(${a} ${o} ${b})`),
    fc.tuple(fc.constantFrom('not ', '-', '+'), tie('e')).map(([o, a]) => `${o}${a}`),
    fc.tuple(fc.constantFrom(...FUNCTION_NAMES), fc.array(tie('e'), { maxLength: 3 })).map(([f, args]) => `${f}(${args.join(', ')})`),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([a, c, b]) => `(${a} if ${c} else ${b})`),
    fc.array(tie('e'), { maxLength: 4 }).map((xs) => `[${xs.join(', ')}]`),
    fc.tuple(tie('e'), tie('e')).map(([a, i]) => `${a}[${i}]`),
  ),
})).e;

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const oid = fc
  .array(fc.oneof(fc.integer({ min: 0, max: 200 }), u32), { minLength: 0, maxLength: 12 })
  .map((arcs) => `1.3.${arcs.join('.')}`.replace(/\.$/, ''));

const varbind: fc.Arbitrary<VarBind> = fc.oneof(
  fc.tuple(oid, fc.integer({ min: -0x80000000, max: 0x7fffffff })).map(([o, v]) => ({ oid: o, type: 'Integer32' as SnmpType, value: v })),
  fc.tuple(oid, fc.constantFrom<SnmpType>('Counter32', 'Gauge32', 'TimeTicks'), u32).map(([o, type, v]) => ({ oid: o, type, value: v })),
  fc.tuple(oid, fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })).map(([o, v]) => ({ oid: o, type: 'Counter64' as SnmpType, value: v })),
  fc.tuple(oid, fc.uint8Array({ maxLength: 300 })).map(([o, v]) => ({ oid: o, type: 'OctetString' as SnmpType, value: Buffer.from(v) })),
  fc.tuple(oid, oid).map(([o, v]) => ({ oid: o, type: 'ObjectIdentifier' as SnmpType, value: v })),
  fc.tuple(oid, fc.ipV4()).map(([o, v]) => ({ oid: o, type: 'IpAddress' as SnmpType, value: v })),
  fc.tuple(oid, fc.constantFrom<SnmpType>('Null', 'NoSuchObject', 'NoSuchInstance', 'EndOfMibView')).map(([o, type]) => ({ oid: o, type, value: null })),
);

/** v1 and v2c messages of any PDU type with arbitrary varbinds, counters and request fields. */
export const snmpMessage: fc.Arbitrary<Buffer> = fc
  .tuple(
    fc.constantFrom<0 | 1>(0, 1),
    fc.constantFrom('public', 'private', ''),
    fc.constantFrom(...Object.values(PduType).filter((t) => t !== PduType.TrapV1)),
    fc.integer({ min: -0x80000000, max: 0x7fffffff }),
    fc.integer({ min: -5, max: 20000 }),
    fc.integer({ min: -5, max: 20000 }),
    fc.array(varbind, { maxLength: 20 }),
  )
  .map(([version, community, type, requestId, errorStatus, errorIndex, varbinds]) => {
    // Notifications start with sysUpTime.0 and snmpTrapOID.0, so the receiver reads them through.
    const lead: VarBind[] =
      type === PduType.TrapV2 || type === PduType.Inform
        ? [
            { oid: '1.3.6.1.2.1.1.3.0', type: 'TimeTicks', value: 1 },
            { oid: '1.3.6.1.6.3.1.1.4.1.0', type: 'ObjectIdentifier', value: '1.3.6.1.4.1.1' },
          ]
        : [];
    const pdu: AnyPdu = { type, requestId, errorStatus, errorIndex, varbinds: [...lead, ...varbinds] };
    return encodeCommunity(version, community, pdu);
  });
