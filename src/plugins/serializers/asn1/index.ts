import { Type } from '@sinclair/typebox';
import { decodeRecords, decodeOne, splitRecords, topTags, type MessageClass } from '../../../asn1/ber-records.js';
import { Asn1DecodeError } from '../../../asn1/ber.js';
import { loadSchema } from '../../../asn1/load.js';
import { decodeDocument } from '../../../asn1/documents.js';
import { asRecord, splitAt } from '../../../asn1/records.js';
import { schemaPath } from '../../common/schema-file.js';
import { defineSerializer, type DecodeOut, type LintIssue, type Rec, type SerializerContext } from '../../types.js';

const ENCODINGS = ['ber', 'der', 'per', 'uper', 'xer', 'jer'] as const;

const config = Type.Object(
  {
    schema_file: Type.String({
      minLength: 1,
      description:
        'ASN.1 module file, or a directory whose *.asn / *.asn1 files are compiled together (IMPORTS resolve across them). Relative paths are under SVC_SCHEMA_DIR.',
    }),
    message_class: Type.Optional(
      Type.String({ minLength: 1, description: 'The type of each record (`Type` or `Module.Type`). Exactly one of message_class and message_classes.' }),
    ),
    message_classes: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        description:
          'Several record types, tried in order: the first whose tag fits (BER/DER) and that decodes wins. Exactly one of message_class and message_classes.',
      }),
    ),
    encoding: Type.Union(
      ENCODINGS.map((e) => Type.Literal(e)),
      { default: 'ber', description: 'Encoding rules: ber (also reads DER and CER), der, per (aligned), uper (unaligned), xer, jer.' },
    ),
    split_records: Type.Boolean({
      default: false,
      description: 'The input is concatenated top-level records (a CDR file): decode them one by one, streamed. BER/DER only.',
    }),
    split_path: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Dot path to a list inside one decoded document (e.g. `value.listOfServiceData`): one record per element. Excludes split_records; the pipeline needs record_chunk_size above 0.',
      }),
    ),
    split_path_context: Type.Optional(
      Type.Record(Type.String(), Type.String({ minLength: 1 }), {
        description:
          "Output field -> dot path in the document: these sibling values are copied into every split record (the record's own fields win). Needs split_path.",
      }),
    ),
  },
  { additionalProperties: false },
);

type Config = (typeof config)['static'];

const classNames = (c: Config): string[] => c.message_classes ?? (c.message_class ? [c.message_class] : []);

function classesOf(c: Config, schemaDir: string | undefined): MessageClass[] {
  const schema = loadSchema(schemaPath(c.schema_file, schemaDir));
  return classNames(c).map((name) => ({ name, type: schema.type(name) }));
}

function lint(c: Config, ctx?: SerializerContext): LintIssue[] {
  const issues: LintIssue[] = [];
  if ((c.message_class === undefined) === (c.message_classes === undefined)) {
    issues.push({ path: 'message_class', message: 'set exactly one of message_class and message_classes' });
  }
  if (c.split_records && c.encoding !== 'ber' && c.encoding !== 'der')
    issues.push({ path: 'split_records', message: `split_records applies to ber and der only, not ${c.encoding}` });
  if (c.split_records && c.split_path !== undefined) issues.push({ path: 'split_path', message: 'split_path and split_records exclude each other' });
  if (c.split_path_context !== undefined && c.split_path === undefined)
    issues.push({ path: 'split_path_context', message: 'split_path_context needs split_path' });
  try {
    classesOf(c, ctx?.schemaDir);
  } catch (err) {
    const e = err as Error;
    const path =
      e.name === 'Asn1SchemaError' && e.message.startsWith('unknown message class') ? (c.message_classes ? 'message_classes' : 'message_class') : 'schema_file';
    issues.push({ path, message: e.message });
  }
  return issues;
}

export default defineSerializer({
  key: 'asn1',
  summary: 'ASN.1 records compiled from module text: BER/DER (concatenated CDR files streamed), PER/UPER, XER, JER.',
  direction: 'in',
  status: 'beta',
  config,
  lint,
  examples: [
    {
      title: 'A 3GPP-style CDR file: concatenated BER CallEventRecords',
      yaml: 'type: asn1\nschema_file: cdr\nmessage_class: CallEventRecord\nsplit_records: true',
      worked: {
        // Two SMSRecords made by asn1c's der_encode (see docs/formats/asn1.md).
        input:
          'bf502980015481082143658709214355820591214365f784092311051230452b010085020001870100880101' +
          'bf502380015481092143658709214365f7840923110512310' +
          '02b010085010287020400880100',
        encoding: 'hex',
        records: [
          {
            type: 'smsRecord',
            value: {
              recordType: 84,
              servedIMSI: '2143658709214355',
              servedMSISDN: '91214365f7',
              eventTimeStamp: '2311051230452b0100',
              messageReference: '0001',
              messageSize: 0,
              smsType: 'mt',
            },
          },
          {
            type: 'smsRecord',
            value: {
              recordType: 84,
              servedIMSI: '2143658709214365f7',
              eventTimeStamp: '2311051231002b0100',
              messageReference: '02',
              messageSize: 1024,
              smsType: 'mo',
            },
          },
        ],
      },
    },
    {
      title: 'One record per service data container, with the IMSI and charging ID copied in',
      yaml: 'type: asn1\nschema_file: cdr\nmessage_class: PGWRecord\nencoding: der\nsplit_path: listOfServiceData\nsplit_path_context:\n  imsi: servedIMSI\n  chargingID: chargingID',
    },
    {
      title: 'Several record types from a directory of modules',
      yaml: 'type: asn1\nschema_file: cdr\nmessage_classes: [ChargingRecords.SGWRecord, ChargingRecords.PGWRecord]\nencoding: uper',
    },
  ],
  decoder: (c, ctx) => {
    const classes = classesOf(c, ctx?.schemaDir);
    const tops = topTags(classes);
    const emit = (doc: unknown, raw: Buffer, out: DecodeOut): void => {
      if (c.split_path === undefined) return out.record(asRecord(doc));
      let recs: Rec[];
      try {
        recs = splitAt(doc, c.split_path, c.split_path_context);
      } catch (err) {
        return out.error((err as Error).message, raw);
      }
      for (const r of recs) out.record(r);
    };
    if (c.split_records) {
      return {
        framing: {
          kind: 'split',
          // Each piece carries its byte offset in the unit (as text) so messages give unit offsets.
          async *split(stream, opts) {
            for await (const p of splitRecords(stream, tops, opts.targetBytes, opts.maxRecords)) yield { data: p.data, header: Buffer.from(String(p.offset)) };
          },
        },
        decode({ data, header }, out) {
          const base = header ? Number(header.toString()) : 0;
          decodeRecords(data, base, classes, tops, { record: (v) => emit(v, data, out), error: (m, raw) => out.error(m, raw) });
        },
      };
    }
    return {
      framing: { kind: 'whole' },
      decode({ data }, out) {
        if (data.length === 0) return;
        let doc: unknown;
        try {
          if (c.encoding === 'ber' || c.encoding === 'der') {
            const r = decodeOne(classes, data, 0, data.length);
            if (r.end !== data.length)
              throw new Asn1DecodeError(`${data.length - r.end} bytes after the record (concatenated records need split_records: true)`, r.end);
            doc = r.value;
          } else doc = decodeDocument(c.encoding, classes, data);
        } catch (err) {
          const at = err instanceof Asn1DecodeError ? ` at byte ${err.offset}` : '';
          return out.error(`ASN.1 ${c.encoding.toUpperCase()} document${at}: ${(err as Error).message}`, data);
        }
        emit(doc, data, out);
      },
    };
  },
});
