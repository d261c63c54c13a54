// Syslog message parsing: RFC 5424 (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID [SD] MSG`) and
// RFC 3164 / BSD (`<PRI>Mmm dd hh:mm:ss HOST TAG[PID]: MSG`) into one flat record. Pure and
// synchronous (no I/O, no clock but the one handed in): the source calls it once per message.
//
// What cannot be parsed is never lost: the record then carries the whole text in `message` and the
// reason in `parse_error` (with facility and severity when at least the <PRI> was valid).

/** Facility names by code (0..23), as Vector, rsyslog and syslog-ng spell them. */
export const FACILITIES = [
  'kern',
  'user',
  'mail',
  'daemon',
  'auth',
  'syslog',
  'lpr',
  'news',
  'uucp',
  'cron',
  'authpriv',
  'ftp',
  'ntp',
  'security',
  'console',
  'solaris-cron',
  'local0',
  'local1',
  'local2',
  'local3',
  'local4',
  'local5',
  'local6',
  'local7',
] as const;
/** Severity names by code (0..7). */
export const SEVERITIES = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'] as const;

export type StructuredData = Record<string, Record<string, string | string[]>>;

/** One parsed message, in the order its fields are written. */
export interface SyslogRecord {
  facility: number | null;
  facility_name: string | null;
  severity: number | null;
  severity_name: string | null;
  /** `rfc5424`, `rfc3164`, or null when the message could not be parsed. */
  format: 'rfc5424' | 'rfc3164' | null;
  /** RFC 5424: as sent (RFC 3339). RFC 3164: ISO 8601 in the receiver's time zone, the year guessed (see docs). */
  timestamp: string | null;
  hostname: string | null;
  app_name: string | null;
  procid: string | null;
  msgid: string | null;
  structured_data: StructuredData | null;
  message: string;
  peer: string | null;
  protocol: string | null;
  parse_error?: string;
}

const MONTHS: Record<string, number> = { Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11 };
/** RFC 3339 as RFC 5424 restricts it (FULL-DATE "T" PARTIAL-TIME TIME-OFFSET, at most 6 fraction digits). */
const RFC3339 = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
/** The BSD timestamp `Mmm dd hh:mm:ss` (day padded with a space) and the space after it. */
const BSD_TS = /^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ( [1-9]|[12]\d|3[01]|0[1-9]) ([01]\d|2[0-3]):([0-5]\d):([0-5]\d) /;
/** A 3164 TAG (program name, optional [pid]) and its colon. */
const TAG = /^([^\s[\]:]{1,48})(?:\[([^\]\s]{0,128})\])?:(?: |$)/;

export interface ParseContext {
  peer: string | null;
  protocol: string | null;
  /** The receive time (3164 year guess); default now. */
  now?: Date;
}

function base(ctx: ParseContext, message: string): SyslogRecord {
  return {
    facility: null,
    facility_name: null,
    severity: null,
    severity_name: null,
    format: null,
    timestamp: null,
    hostname: null,
    app_name: null,
    procid: null,
    msgid: null,
    structured_data: null,
    message,
    peer: ctx.peer,
    protocol: ctx.protocol,
  };
}

function failed(rec: SyslogRecord, raw: string, why: string): SyslogRecord {
  rec.format = null;
  rec.timestamp = rec.hostname = rec.app_name = rec.procid = rec.msgid = null;
  rec.structured_data = null;
  rec.message = raw;
  rec.parse_error = why;
  return rec;
}

/** Parses one message (without framing: no length prefix, no trailing newline). */
export function parseSyslog(text: string, ctx: ParseContext): SyslogRecord {
  const rec = base(ctx, text);
  // <PRI>: 1 to 3 digits, 0..191, no leading zero except "0" itself.
  if (text.charCodeAt(0) !== 60 /* < */) return failed(rec, text, 'no <PRI> at the start (not a syslog message)');
  const close = text.indexOf('>', 1);
  if (close < 2 || close > 4) return failed(rec, text, 'invalid <PRI>: expected 1 to 3 digits between < and >');
  const priText = text.slice(1, close);
  if (!/^(0|[1-9]\d{0,2})$/.test(priText)) return failed(rec, text, `invalid <PRI> '${priText}'`);
  const pri = Number(priText);
  if (pri > 191) return failed(rec, text, `invalid <PRI> ${pri}: above 191`);
  rec.facility = pri >> 3;
  rec.facility_name = FACILITIES[pri >> 3]!;
  rec.severity = pri & 7;
  rec.severity_name = SEVERITIES[pri & 7]!;
  const rest = text.slice(close + 1);
  // RFC 5424: VERSION (a non-zero digit, at most 3 digits) and a space.
  const c0 = rest.charCodeAt(0);
  if (c0 >= 49 && c0 <= 57) {
    const sp = rest.indexOf(' ');
    if (sp > 0 && sp <= 3 && /^[1-9]\d{0,2}$/.test(rest.slice(0, sp))) return parse5424(rec, text, rest.slice(sp + 1));
  }
  return parse3164(rec, rest, ctx.now ?? new Date());
}

/** The next space-delimited header field of `s` from `at`: [value or null for "-", index after the space]. */
function field(s: string, at: number, name: string, max: number): [string | null, number] {
  const sp = s.indexOf(' ', at);
  if (sp < 0) throw new Error(`RFC 5424 header ends before ${name}`);
  const v = s.slice(at, sp);
  if (v.length === 0) throw new Error(`RFC 5424 ${name} is empty (two spaces in the header)`);
  if (v.length > max) throw new Error(`RFC 5424 ${name} longer than ${max} characters`);
  return [v === '-' ? null : v, sp + 1];
}

function parse5424(rec: SyslogRecord, raw: string, s: string): SyslogRecord {
  try {
    const [ts, afterTs] = field(s, 0, 'TIMESTAMP', 64);
    let at = afterTs;
    if (ts !== null && !RFC3339.test(ts)) throw new Error(`RFC 5424 TIMESTAMP '${ts}' is not RFC 3339`);
    [rec.hostname, at] = field(s, at, 'HOSTNAME', 255);
    [rec.app_name, at] = field(s, at, 'APP-NAME', 48);
    [rec.procid, at] = field(s, at, 'PROCID', 128);
    // MSGID is followed by a space and the structured data.
    [rec.msgid, at] = field(s, at, 'MSGID', 32);
    rec.timestamp = ts;
    let msgAt: number;
    if (s.charCodeAt(at) === 45 /* - */) {
      msgAt = at + 1;
    } else if (s.charCodeAt(at) === 91 /* [ */) {
      const [sd, end] = parseSD(s, at);
      rec.structured_data = sd;
      msgAt = end;
    } else throw new Error('RFC 5424 STRUCTURED-DATA missing: expected - or [');
    if (msgAt < s.length) {
      if (s.charCodeAt(msgAt) !== 32) throw new Error('RFC 5424: expected a space after STRUCTURED-DATA');
      msgAt++;
    }
    let msg = s.slice(msgAt);
    if (msg.charCodeAt(0) === 0xfeff) msg = msg.slice(1); // the UTF-8 BOM RFC 5424 puts before a UTF-8 MSG
    rec.message = msg;
    rec.format = 'rfc5424';
    return rec;
  } catch (e) {
    return failed(rec, raw, (e as Error).message);
  }
}

/** Length of the SD-NAME at `at` (1..32 printable US-ASCII except space, =, ], "), 0 when none. */
function sdName(s: string, at: number): number {
  let i = at;
  const max = Math.min(s.length, at + 32);
  while (i < max) {
    const c = s.charCodeAt(i);
    if (c <= 32 || c >= 127 || c === 61 /* = */ || c === 93 /* ] */ || c === 34 /* " */) break;
    i++;
  }
  return i - at;
}

/** Sets `o[k]`, also for the key `__proto__` (an own property, not the prototype). */
function put<T>(o: Record<string, T>, k: string, v: T) {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

/** Structured data from `s[at] === '['`: {sd-id: {param: value}} and the index after the last element. */
function parseSD(s: string, at: number): [StructuredData, number] {
  const sd: StructuredData = {};
  while (s.charCodeAt(at) === 91 /* [ */) {
    at++;
    const idLen = sdName(s, at);
    if (!idLen) throw new Error('RFC 5424 SD-ELEMENT without a valid SD-ID');
    const id = s.slice(at, at + idLen);
    at += idLen;
    let params = Object.hasOwn(sd, id) ? sd[id]! : undefined;
    if (!params) put(sd, id, (params = {}));
    for (;;) {
      const ch = s.charCodeAt(at);
      if (ch === 93 /* ] */) {
        at++;
        break;
      }
      if (ch !== 32) throw new Error(`RFC 5424 SD-ELEMENT [${id}: expected a space or ]`);
      at++;
      const nameLen = sdName(s, at);
      if (!nameLen) throw new Error(`RFC 5424 SD-ELEMENT [${id}: invalid PARAM-NAME`);
      const name = s.slice(at, at + nameLen);
      at += nameLen;
      if (s.charCodeAt(at) !== 61 /* = */ || s.charCodeAt(at + 1) !== 34 /* " */) throw new Error(`RFC 5424 SD-PARAM ${id}/${name}: expected ="value"`);
      at += 2;
      // PARAM-VALUE: \" \\ \] are escapes; a backslash before anything else is kept as is.
      let value = '';
      let from = at;
      for (;;) {
        if (at >= s.length) throw new Error(`RFC 5424 SD-PARAM ${id}/${name}: unterminated value`);
        const c = s.charCodeAt(at);
        if (c === 92 /* \ */) {
          const n = s.charCodeAt(at + 1);
          if (n === 34 || n === 92 || n === 93) {
            value += s.slice(from, at);
            from = at + 1;
            at += 2;
            continue;
          }
        } else if (c === 34) break;
        at++;
      }
      value += s.slice(from, at);
      at++; // the closing quote
      const prev = Object.hasOwn(params, name) ? params[name] : undefined;
      // A repeated PARAM-NAME (allowed by RFC 5424) makes the value a list, in order.
      put(params, name, prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value]);
    }
  }
  return [sd, at];
}

const pad2 = (n: number) => (n < 10 ? '0' : '') + n;

/** ISO 8601 with the local offset of the process's time zone (TZ): 2026-10-11T22:14:15+02:00. */
export function localIso(d: Date): string {
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? '+' : '-';
  const a = Math.abs(off);
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}T${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}${sign}${pad2(Math.floor(a / 60))}:${pad2(a % 60)}`;
}

/**
 * The year of a BSD timestamp (which has none): the receiver's current year, or the previous one
 * when that would put the message more than a day in the future (a December message read in January).
 */
export function bsdDate(month: number, day: number, h: number, m: number, sec: number, now: Date): Date {
  let d = new Date(now.getFullYear(), month, day, h, m, sec);
  if (d.getTime() - now.getTime() > 86_400_000) d = new Date(now.getFullYear() - 1, month, day, h, m, sec);
  return d;
}

function parse3164(rec: SyslogRecord, s: string, now: Date): SyslogRecord {
  rec.format = 'rfc3164';
  let at: number;
  const bsd = BSD_TS.exec(s);
  if (bsd) {
    const d = bsdDate(MONTHS[bsd[1]!]!, Number(bsd[2]!.trim()), Number(bsd[3]), Number(bsd[4]), Number(bsd[5]), now);
    rec.timestamp = localIso(d);
    at = bsd[0].length;
  } else {
    // Many devices put an RFC 3339 timestamp where BSD's goes (rsyslog's RSYSLOG_ForwardFormat).
    const sp = s.indexOf(' ');
    if (sp > 0 && RFC3339.test(s.slice(0, sp))) {
      rec.timestamp = s.slice(0, sp);
      at = sp + 1;
    } else {
      // RFC 3164 4.3.2: no valid TIMESTAMP: the whole rest is the MSG.
      rec.message = s;
      return rec;
    }
  }
  // HOSTNAME, unless the next word is already the TAG (senders that leave the host out).
  const sp = s.indexOf(' ', at);
  const word = sp < 0 ? s.slice(at) : s.slice(at, sp);
  if (word && !TAG.test(word + ' ') && !word.includes('[')) {
    rec.hostname = word;
    at = sp < 0 ? s.length : sp + 1;
  }
  const rest = s.slice(at);
  const tag = TAG.exec(rest);
  if (tag) {
    rec.app_name = tag[1]!;
    rec.procid = tag[2] === undefined || tag[2] === '' ? null : tag[2];
    rec.message = rest.slice(tag[0].length);
  } else rec.message = rest;
  return rec;
}
