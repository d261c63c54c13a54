// Which lines of a write InfluxDB refused, from its answer, so that the sink can name the records.
// The servers say it in different ways:
//
// - a line that does not parse: `unable to parse '<the line>': <reason>` (1.x and 2.x; several are
//   joined by newlines). 1.x writes the other lines and answers 400 `partial write: ...`; 2.x
//   writes nothing and answers 400 `{"code":"invalid"}`.
// - a field type conflict: `partial write: field type conflict: input field "f" on measurement "m"
//   is type float, already exists as type integer dropped=N` (1.x: 400, 2.x: 422 `unprocessable
//   entity`): the lines whose field f has the input type, which the sink knows.
// - a field name InfluxDB refuses: `invalid field name: input field "f" on measurement "m" is invalid`.
// - the v2 API's LineProtocolError `line` (1-based), and InfluxDB 3's `data: [{line_number, error_message}]`.
//
// When the named lines do not account for `dropped=N` (points beyond the retention policy, several
// conflicts of which the server names one), the refused lines cannot be told: undefined.
import type { FieldType, Line } from './line-protocol.js';

export interface WriteAnswer {
  status: number;
  /** The server's message (JSON `message` or `error`, else the body). */
  message: string;
  json?: unknown;
}

export interface RefusedLines {
  /** Line index to the server's reason. */
  lines: Map<number, string>;
  /** The other lines were written (a partial write), or the server refused the batch whole. */
  othersWritten: boolean;
}

const Q = '"((?:[^"\\\\]|\\\\.)*)"';
const CONFLICT = new RegExp(`field type conflict: input field ${Q} on measurement ${Q} is type (\\w+), already exists as type (\\w+)`);
const INVALID_FIELD = new RegExp(`invalid field name: input field ${Q} on measurement ${Q} is invalid`);
const unquote = (s: string) => s.replace(/\\(.)/g, '$1');

/** The server's type names as the sink's. */
const TYPE: Record<string, FieldType | undefined> = { float: 'float', integer: 'integer', string: 'string', boolean: 'boolean' };

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The reason a parse error gives for one line: the text after the quoted line, up to the next error. */
function parseReason(message: string, at: number): string {
  const rest = message.slice(at);
  const end = rest.search(/\nunable to parse '| dropped=\d+/);
  return (end < 0 ? rest : rest.slice(0, end)).replace(/^:\s*/, '').trim();
}

export function refusedLines(lines: Line[], a: WriteAnswer): RefusedLines | undefined {
  const msg = a.message;
  const othersWritten = a.status === 422 || /partial write/i.test(msg);
  const out = new Map<number, string>();
  const json = isObj(a.json) ? a.json : undefined;

  if (json && Array.isArray(json.data)) {
    for (const d of json.data) {
      if (isObj(d) && Number.isInteger(d.line_number)) out.set((d.line_number as number) - 1, String(d.error_message ?? msg));
    }
  }
  if (json && Number.isInteger(json.line)) out.set((json.line as number) - 1, msg);

  for (let i = 0; i < lines.length; i++) {
    const quoted = `unable to parse '${lines[i]!.text}'`;
    const at = msg.indexOf(quoted);
    if (at >= 0) out.set(i, `unable to parse the line: ${parseReason(msg, at + quoted.length)}`);
  }

  // Refusals counted in dropped=N: every line they name must be found, and no other may be left.
  let named = 0;
  const conflict = CONFLICT.exec(msg);
  if (conflict) {
    const field = unquote(conflict[1]!);
    const type = TYPE[conflict[3]!];
    const reason = conflict[0];
    for (let i = 0; i < lines.length; i++) {
      if (type !== undefined && lines[i]!.fields.get(field) === type) {
        out.set(i, reason);
        named++;
      }
    }
  }
  const invalid = INVALID_FIELD.exec(msg);
  if (invalid) {
    const field = unquote(invalid[1]!);
    for (let i = 0; i < lines.length; i++) {
      if (lines[i]!.fields.has(field)) {
        out.set(i, invalid[0]);
        named++;
      }
    }
  }
  const dropped = /dropped=(\d+)/.exec(msg);
  if (dropped && Number(dropped[1]) !== named) return undefined;
  for (const i of out.keys()) if (i < 0 || i >= lines.length) return undefined;
  if (out.size === 0) return undefined;
  return { lines: out, othersWritten };
}
