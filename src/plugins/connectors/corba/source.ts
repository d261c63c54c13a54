// Source `corba` (batch): once per run, invokes one operation on a CORBA object over GIOP 1.2 /
// IIOP (the object found by IOR, corbaloc URL or a CosNaming name), with typed `args`, decodes the
// reply by the declared `returns` type, and hands it on as JSON: a sequence becomes one record per
// element, a struct one record, a scalar one record {result: value}, a `json` string its own text.
// With skip_processed, the key (operation, args, floor(now / dedupe_window_seconds)) is remembered
// once the unit is delivered, and a later run in the same window invokes nothing.
import { Type, type Static } from '@sinclair/typebox';
import { errorMessage, SourceError } from '../../../core/errors.js';
import { connectionReporter } from '../../connector-runtime/reconnect.js';
import { defineSource, type LintIssue, type SourceUnit } from '../../types.js';
import { CdrError, CdrWriter, encodeValue, parseType, TypeDescError, typeName, decodeValue, type IdlType } from './cdr.js';
import { CorbaClient, CorbaException, CorbaTimeoutError, CorbaTransportError } from './client.js';
import { GiopError } from './giop.js';
import { ObjectRefError, parseObjectUrl, whereOf, type ObjectRef } from './ior.js';
import { NameError, parseName, resolveName } from './naming.js';

const typeDesc = (description: string, extra: Record<string, unknown> = {}) =>
  Type.Union([Type.String(), Type.Record(Type.String(), Type.Unknown())], { description, ...extra });

const config = Type.Object(
  {
    ior: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'The object to invoke: a stringified IOR (`IOR:0100...`) or a corbaloc URL (`corbaloc:iiop:host:port/ObjectKey`). Exclusive with naming_service.',
      }),
    ),
    naming_service: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'A CosNaming naming context (usually `corbaloc:iiop:host:2809/NameService`, or its IOR) in which `object_name` is resolved. Exclusive with ior.',
      }),
    ),
    object_name: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "The object's name in naming_service, in the INS form `id.kind/id.kind` (e.g. `pm.collectors/ne42`; `\\` escapes a '/' or '.'). Required with naming_service.",
      }),
    ),
    operation: Type.String({ minLength: 1, description: 'The IDL operation to invoke (an attribute is read with `_get_<name>`).' }),
    args: Type.Array(
      Type.Object(
        {
          type: typeDesc(
            'The IDL type of the argument: boolean, octet, char, short, ushort, long, ulong, longlong, ulonglong, float, double, string, `{sequence: T}`, `{array: T, length: N}`, `{struct: {field: T, ...}}` or `{enum: [LABELS]}`.',
          ),
          value: Type.Unknown({
            description:
              'The value, as JSON: a number, a string (64-bit integers beyond 2^53 as decimal strings), a list for a sequence, an object for a struct, a label for an enum.',
          }),
        },
        { additionalProperties: false },
      ),
      { default: [], description: 'The in parameters of the operation, in IDL order, each `{type, value}`.' },
    ),
    returns: typeDesc(
      'The IDL type of the result, to decode the reply: `void` (no records), a type as in args, or `json` (a string whose text is a JSON document). A sequence or array gives one record per element; a struct one record; any other value one record `{result: value}`.',
      { default: 'void' },
    ),
    timeout_seconds: Type.Number({
      exclusiveMinimum: 0,
      default: 30,
      description: 'Seconds for the whole invocation: connecting, the name lookup, forwards and the reply.',
    }),
    skip_processed: Type.Boolean({
      default: false,
      description:
        'Invoke at most once per dedupe window: a run whose operation and args were already delivered in the current window invokes nothing and says so in a note.',
    }),
    dedupe_window_seconds: Type.Integer({
      minimum: 1,
      default: 300,
      description: 'The window of skip_processed: the key is the operation, the args and floor(now / window).',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

/** The first problem in a reference, or undefined. */
function refIssue(text: string): string | undefined {
  try {
    parseObjectUrl(text);
    return undefined;
  } catch (e) {
    return errorMessage(e);
  }
}

function lint(c: Config): LintIssue[] {
  const issues: LintIssue[] = [];
  if (c.ior !== undefined && c.naming_service !== undefined)
    issues.push({
      path: 'naming_service',
      message: 'ior and naming_service are mutually exclusive: give the object by IOR, or by object_name in a naming service',
    });
  if (c.ior === undefined && c.naming_service === undefined)
    issues.push({ path: 'ior', message: 'give the object: ior (an IOR or a corbaloc URL), or naming_service with object_name' });
  if (c.naming_service !== undefined && c.object_name === undefined)
    issues.push({ path: 'object_name', message: 'naming_service needs object_name, the name to resolve in it' });
  if (c.naming_service === undefined && c.object_name !== undefined)
    issues.push({ path: 'object_name', message: 'object_name is resolved in naming_service, which is not set' });
  for (const f of ['ior', 'naming_service'] as const) {
    const v = c[f];
    if (v !== undefined && !v.includes('${')) {
      const m = refIssue(v);
      if (m) issues.push({ path: f, message: m });
    }
  }
  if (c.object_name !== undefined) {
    try {
      parseName(c.object_name);
    } catch (e) {
      issues.push({ path: 'object_name', message: errorMessage(e) });
    }
  }
  (c.args ?? []).forEach((a, i) => {
    let t: IdlType;
    try {
      t = parseType(a.type);
      if (t.kind === 'void' || t.kind === 'json') throw new TypeDescError(`${t.kind} is not an argument type`, '');
    } catch (e) {
      const p = e instanceof TypeDescError && e.path ? `.${e.path}` : '';
      issues.push({ path: `args.${i}.type${p}`, message: errorMessage(e) });
      return;
    }
    try {
      encodeValue(new CdrWriter(), t, a.value, 'value');
    } catch (e) {
      const p = e instanceof TypeDescError ? e.path.replace(/^value/, '') : '';
      issues.push({ path: `args.${i}.value${p}`, message: errorMessage(e) });
    }
  });
  try {
    parseType(c.returns ?? 'void');
  } catch (e) {
    const p = e instanceof TypeDescError && e.path ? `.${e.path}` : '';
    issues.push({ path: `returns${p}`, message: errorMessage(e) });
  }
  return issues;
}

/** Hints for the system exceptions a misconfiguration produces. */
const HINTS: Record<string, string> = {
  BAD_OPERATION: 'the object has no such operation: check operation against its IDL',
  OBJECT_NOT_EXIST: 'the object is gone (a stale IOR or name binding): check ior or object_name',
  MARSHAL: 'the server could not read the arguments: check the args types against the IDL',
  BAD_PARAM: 'the server refused an argument value: check args',
  TRANSIENT: 'the object is unreachable for now: the next run tries again',
  COMM_FAILURE: 'the connection failed mid-call: the next run tries again',
  NO_PERMISSION: 'the server refused the call',
  DATA_CONVERSION: 'the server could not convert a string to its code set',
};

function sourceError(e: unknown, c: Config, where: string): SourceError {
  const ms = c.timeout_seconds * 1000;
  if (e instanceof SourceError) return e;
  if (e instanceof CorbaException) {
    if (e.kind === 'system') {
      const name = /IDL:omg\.org\/CORBA\/(\w+):/.exec(e.id)?.[1] ?? '';
      return new SourceError(`corba: ${e.message} at ${where}${HINTS[name] ? `: ${HINTS[name]}` : ''}`, { cause: e });
    }
    return new SourceError(`corba: ${e.message} at ${where}: the servant refused the call (see its IDL for when it raises this)`, { cause: e });
  }
  if (e instanceof CorbaTimeoutError)
    return new SourceError(`corba: ${e.message.replace(/within [\d.]+ s/, `within timeout_seconds (${ms / 1000} s)`)}`, { cause: e });
  if (e instanceof NameError || e instanceof ObjectRefError) return new SourceError(`corba: ${e.message}`, { cause: e });
  if (e instanceof CorbaTransportError || e instanceof GiopError) return new SourceError(`corba: ${e.message}`, { cause: e });
  if (e instanceof CdrError)
    return new SourceError(
      `corba: the reply of '${c.operation}' does not decode as returns (${typeName(parseType(c.returns))}): ${e.message}; check returns against the IDL`,
      { cause: e },
    );
  return new SourceError(`corba: ${errorMessage(e)}`, { cause: e });
}

/** The object to invoke: the IOR or corbaloc, or the name resolved in the naming service. */
async function target(client: CorbaClient, c: Config, timeoutMs: number): Promise<ObjectRef> {
  if (c.ior !== undefined) return parseObjectUrl(c.ior);
  const ns = parseObjectUrl(c.naming_service!);
  return resolveName(client, ns, parseName(c.object_name!), timeoutMs);
}

const argsWriter = (c: Config) => {
  const typed = (c.args ?? []).map((a) => ({ t: parseType(a.type), v: a.value }));
  return typed.length ? (w: CdrWriter) => typed.forEach((a, i) => encodeValue(w, a.t, a.v, `args.${i}.value`)) : undefined;
};

/** One message (a JSON document) per record. */
export function recordMessages(value: unknown, t: IdlType): Buffer[] {
  const one = (v: unknown, et: IdlType): Buffer => {
    if (et.kind === 'json') return Buffer.from(v as string, 'utf8');
    if (et.kind === 'struct') return Buffer.from(JSON.stringify(v));
    return Buffer.from(JSON.stringify({ result: v }));
  };
  if (t.kind === 'void') return [];
  if (t.kind === 'sequence' || t.kind === 'array') return (value as unknown[]).map((e) => one(e, t.of));
  return [one(value, t)];
}

/** The skip_processed key of an invocation at `nowMs`. */
export function dedupeKey(c: Pick<Config, 'operation' | 'args' | 'dedupe_window_seconds'>, nowMs: number): string {
  return `corba:${JSON.stringify([c.operation, c.args ?? [], Math.floor(nowMs / 1000 / c.dedupe_window_seconds)])}`;
}

export default defineSource({
  key: 'corba',
  summary: 'Invoke an operation on a CORBA object over GIOP 1.2/IIOP (IOR, corbaloc or a NameService name) and read its typed reply.',
  mode: 'batch',
  status: 'beta',
  delivery: {
    guarantee: 'at-least-once',
    why: 'an invocation consumes nothing unless the servant’s operation does: a run that fails (the call, a sink) leaves the next run to invoke again, so a reply can be read twice but none is dropped by the source; with skip_processed the dedupe key is remembered only after every record of the reply was delivered.',
  },
  config,
  lint,
  examples: [
    {
      title: 'PM counters of one network element, found in the NameService, every run',
      yaml: 'type: corba\nnaming_service: corbaloc:iiop:ems.internal:2809/NameService\nobject_name: pm.collectors/ne42\noperation: counters\nargs:\n  - { type: string, value: ne42 }\n  - { type: long, value: 100 }\nreturns: { sequence: { struct: { name: string, value: longlong } } }\ntimeout_seconds: 20',
    },
    {
      title: 'JSON documents from an object given by corbaloc, at most once per 15 minutes',
      yaml: 'type: corba\nior: corbaloc:iiop:alarms.internal:2810/AlarmExport\noperation: take\nargs:\n  - { type: string, value: alarms }\nreturns: { sequence: json }\nskip_processed: true\ndedupe_window_seconds: 900',
    },
    {
      title: 'A version string from an IOR',
      yaml: 'type: corba\nior: ${EMS_IOR:-IOR:010000000f00000049444c3a5376632f506d3a312e3000000100000000000000240000000101020008000000656d732e6c616e00aa0a000008000000506d4f626a65637400000000}\noperation: version\nreturns: string',
    },
  ],
  async test(c) {
    const client = new CorbaClient();
    const ms = c.timeout_seconds * 1000;
    try {
      const ref = await target(client, c, ms);
      await client.locate(ref, { timeoutMs: ms });
    } catch (e) {
      throw sourceError(e, c, c.ior ? whereOf(safeRef(c.ior)) : whereOf(safeRef(c.naming_service!)));
    } finally {
      client.close();
    }
  },
  create(c, ctx) {
    const report = connectionReporter(ctx, 'corba');
    const notes: string[] = [];
    const returns = parseType(c.returns);
    const skip = c.skip_processed || ctx.skipProcessed;
    return {
      notes,
      async *units(signal) {
        if (signal.aborted) return;
        const key = skip ? dedupeKey(c, Date.now()) : undefined;
        if (key && (await ctx.processed.has(key))) {
          notes.push(
            `corba: '${c.operation}' with these args was already delivered in this ${c.dedupe_window_seconds}-second window (skip_processed): not invoked again`,
          );
          return;
        }
        const ms = c.timeout_seconds * 1000;
        const client = new CorbaClient();
        let where = '(unresolved)';
        let messages: Buffer[];
        // A stop while the call is in flight closes the connection: the run ends without waiting for the reply.
        const onAbort = () => client.close();
        signal.addEventListener('abort', onAbort, { once: true });
        report('connecting');
        try {
          const ref = await target(client, c, ms);
          where = whereOf(ref);
          const { result, target: reached } = await client.invoke(ref, c.operation, argsWriter(c), { timeoutMs: ms });
          where = whereOf(reached);
          report('connected');
          messages = recordMessages(decodeValue(result, returns), returns);
        } catch (e) {
          if (signal.aborted) return;
          // The peer answered (an exception, a reply that does not decode, a name not bound): the connection was fine.
          if (e instanceof CorbaTransportError || e instanceof CorbaTimeoutError || e instanceof GiopError) report('disconnected', errorMessage(e));
          else report('connected');
          throw sourceError(e, c, where);
        } finally {
          signal.removeEventListener('abort', onAbort);
          client.close();
        }
        if (messages.length === 0)
          notes.push(
            returns.kind === 'void'
              ? `corba: '${c.operation}' returns void (see returns): no records`
              : `corba: '${c.operation}' returned an empty ${typeName(returns)}`,
          );
        const unit: SourceUnit = {
          meta: { source_path: `${where}/${c.operation}`, corba_operation: c.operation },
          messages: true,
          size: messages.reduce((n, m) => n + m.length, 0),
          async *read() {
            yield* messages;
          },
          async done(delivered) {
            if (delivered && key) await ctx.processed.add(key);
          },
        };
        if (messages.length > 0 || key) yield unit;
      },
    };
  },
});

function safeRef(text: string): ObjectRef {
  try {
    return parseObjectUrl(text);
  } catch {
    return { typeId: '', profiles: [] };
  }
}
