// The syslog parser and TCP framer alone (pure functions): the RFC 5424 and RFC 3164 examples,
// structured data escapes, what cannot be parsed (kept raw with parse_error), and every way a
// stream can be cut into reads (the Fluent Bit and Telegraf cases: a frame split across reads, a
// length prefix split in the middle, several frames in one read).
import { describe, expect, it } from 'vitest';
import { Framer } from '../../src/plugins/connectors/syslog/framing.js';
import { bsdDate, localIso, parseSyslog } from '../../src/plugins/connectors/syslog/parse.js';
import { messageText } from '../../src/plugins/connectors/syslog/source.js';

const ctx = { peer: '192.0.2.7:40000', protocol: 'udp', now: new Date(2026, 10, 26, 12, 0, 0) };

describe('syslog parser: RFC 5424', () => {
  it('parses the RFC 5424 example 1 (no structured data, BOM before the message)', () => {
    const r = parseSyslog("<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \uFEFF'su root' failed for lonvick on /dev/pts/8", ctx);
    expect(r).toEqual({
      facility: 4,
      facility_name: 'auth',
      severity: 2,
      severity_name: 'crit',
      format: 'rfc5424',
      timestamp: '2003-10-11T22:14:15.003Z',
      hostname: 'mymachine.example.com',
      app_name: 'su',
      procid: null,
      msgid: 'ID47',
      structured_data: null,
      message: "'su root' failed for lonvick on /dev/pts/8",
      peer: '192.0.2.7:40000',
      protocol: 'udp',
    });
  });

  it('keeps the timestamp as sent (offset and fraction), and NILVALUE fields are null', () => {
    const r = parseSyslog("<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to make the do-nuts.", ctx);
    expect(r).toMatchObject({
      facility: 20,
      facility_name: 'local4',
      severity: 5,
      severity_name: 'notice',
      timestamp: '2003-08-24T05:14:15.000003-07:00',
      hostname: '192.0.2.1',
      app_name: 'myproc',
      procid: '8710',
      msgid: null,
      message: "%% It's time to make the do-nuts.",
    });
    const nil = parseSyslog('<13>1 - - - - - -', ctx);
    expect(nil).toMatchObject({
      format: 'rfc5424',
      timestamp: null,
      hostname: null,
      app_name: null,
      procid: null,
      msgid: null,
      structured_data: null,
      message: '',
    });
  });

  it('parses structured data into {sd-id: {param: value}}, with escapes and repeated params as lists', () => {
    const r = parseSyslog(
      '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"] An application event',
      ctx,
    );
    expect(r.structured_data).toEqual({
      'exampleSDID@32473': { iut: '3', eventSource: 'Application', eventID: '1011' },
      'examplePriority@32473': { class: 'high' },
    });
    expect(r.message).toBe('An application event');
    const only = parseSyslog('<165>1 2003-10-11T22:14:15.003Z host app - ID47 [exampleSDID@32473 iut="3"]', ctx);
    expect(only.structured_data).toEqual({ 'exampleSDID@32473': { iut: '3' } });
    expect(only.message).toBe('');
    const esc = parseSyslog('<14>1 - h a - - [x@1 q="say \\"hi\\"" b="a\\\\b" c="[x\\]" d="\\n" ip="10.0.0.1" ip="10.0.0.2"] m', ctx);
    expect(esc.structured_data).toEqual({ 'x@1': { q: 'say "hi"', b: 'a\\b', c: '[x]', d: '\\n', ip: ['10.0.0.1', '10.0.0.2'] } });
    expect(esc.message).toBe('m');
  });

  it('keeps a broken RFC 5424 message raw with parse_error (and its facility and severity)', () => {
    for (const [text, why] of [
      ['<34>1 yesterday host app - - - hello', /TIMESTAMP 'yesterday' is not RFC 3339/],
      ['<34>1 2003-10-11T22:14:15Z host app - - [bad', /SD-ELEMENT/],
      ['<34>1 2003-10-11T22:14:15Z host app - - [id@1 a="unterminated] x', /unterminated value/],
      ['<34>1 2003-10-11T22:14:15Z host', /header ends before/],
      ['<34>1 2003-10-11T22:14:15Z host app - - x', /STRUCTURED-DATA missing/],
    ] as const) {
      const r = parseSyslog(text, ctx);
      expect(r.parse_error, text).toMatch(why);
      expect(r).toMatchObject({ message: text, facility: 4, severity: 2, format: null, timestamp: null, peer: ctx.peer });
    }
  });
});

describe('syslog parser: RFC 3164 and what is not syslog', () => {
  it("parses the RFC 3164 example: the year guessed, the receiver's time zone", () => {
    const r = parseSyslog("<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8", ctx);
    expect(r).toMatchObject({
      facility: 4,
      severity: 2,
      format: 'rfc3164',
      hostname: 'mymachine',
      app_name: 'su',
      procid: null,
      msgid: null,
      structured_data: null,
      message: "'su root' failed for lonvick on /dev/pts/8",
    });
    expect(r.timestamp).toBe(localIso(new Date(2026, 9, 11, 22, 14, 15)));
    expect(r.timestamp).toMatch(/^2026-10-11T22:14:15[+-]\d\d:\d\d$/);
  });

  it('a December message read in early January belongs to the previous year', () => {
    expect(bsdDate(11, 31, 23, 59, 59, new Date(2027, 0, 1, 0, 0, 5)).getFullYear()).toBe(2026);
    expect(bsdDate(0, 1, 0, 0, 1, new Date(2027, 0, 1, 0, 0, 5)).getFullYear()).toBe(2027);
  });

  it('reads TAG[PID], a space-padded day, a missing hostname and an RFC 3339 timestamp in place of the BSD one', () => {
    expect(parseSyslog('<13>Feb  5 01:02:03 host sshd[4242]: Accepted publickey', ctx)).toMatchObject({
      timestamp: localIso(new Date(2026, 1, 5, 1, 2, 3)),
      hostname: 'host',
      app_name: 'sshd',
      procid: '4242',
      message: 'Accepted publickey',
    });
    expect(parseSyslog('<13>Feb 15 01:02:03 cron[7]: job done', ctx)).toMatchObject({ hostname: null, app_name: 'cron', procid: '7', message: 'job done' });
    expect(parseSyslog('<13>2026-11-26T10:00:00.123+01:00 rtr1 kernel: link down', ctx)).toMatchObject({
      format: 'rfc3164',
      timestamp: '2026-11-26T10:00:00.123+01:00',
      hostname: 'rtr1',
      app_name: 'kernel',
      message: 'link down',
    });
    expect(parseSyslog('<13>Feb 15 01:02:03 rtr1 %LINK-3-UPDOWN no tag here', ctx)).toMatchObject({
      hostname: 'rtr1',
      app_name: null,
      message: '%LINK-3-UPDOWN no tag here',
    });
  });

  it('without a timestamp the whole rest is the message (RFC 3164 4.3.2)', () => {
    expect(parseSyslog('<13>just some text: here', ctx)).toMatchObject({
      format: 'rfc3164',
      facility: 1,
      severity: 5,
      timestamp: null,
      hostname: null,
      app_name: null,
      message: 'just some text: here',
    });
    expect(parseSyslog('<0>', ctx)).toMatchObject({ facility: 0, facility_name: 'kern', severity: 0, severity_name: 'emerg', message: '' });
  });

  it('keeps what is not syslog raw, with parse_error, never dropped', () => {
    for (const [text, why] of [
      ['hello world', /no <PRI>/],
      ['<192>Oct 11 22:14:15 h x: y', /above 191/],
      ['<01>Oct 11 22:14:15 h x: y', /invalid <PRI>/],
      ['<abc>x', /invalid <PRI>/],
      ['<1234>x', /invalid <PRI>/],
      ['', /no <PRI>/],
    ] as const) {
      const r = parseSyslog(text, ctx);
      expect(r.parse_error, text).toMatch(why);
      expect(r).toMatchObject({ message: text, facility: null, severity: null, format: null, peer: ctx.peer, protocol: 'udp' });
    }
  });

  it('a UDP datagram loses its trailing LF and a stray octet-count prefix', () => {
    expect(messageText('<13>1 - - - - - - hi\n')).toBe('<13>1 - - - - - - hi');
    expect(messageText('20 <13>1 - - - - - - hi')).toBe('<13>1 - - - - - - hi');
    expect(messageText('7 apples')).toBe('7 apples');
    expect(messageText('20 <13>1 - - - - - - hi\r\n', false)).toBe('20 <13>1 - - - - - - hi');
  });
});

/** Feeds `reads` to a framer; returns the messages (and whether each was truncated). */
function frame(reads: (string | Buffer)[], maxSize = 1000, close = false) {
  const out: [string, boolean][] = [];
  const fallbacks: string[] = [];
  const f = new Framer({ maxSize, onMessage: (m, t) => out.push([m.toString(), t]), onFallback: (d) => fallbacks.push(d) });
  for (const r of reads) f.push(Buffer.from(r));
  const lost = close ? f.end() : 0;
  return { out, kind: f.kind, fallbacks, lost };
}

const M1 = '<13>1 2026-11-26T10:00:00Z h app - - - first';
const M2 = '<13>1 2026-11-26T10:00:01Z h app - - - second message';
const oc = (m: string) => `${Buffer.byteLength(m)} ${m}`;

describe('syslog TCP framing (RFC 6587)', () => {
  it('octet counting: several frames in one read', () => {
    const r = frame([oc(M1) + oc(M2) + oc(M1)]);
    expect(r.kind).toBe('octet-counted');
    expect(r.out).toEqual([
      [M1, false],
      [M2, false],
      [M1, false],
    ]);
  });

  it('octet counting: a frame split across reads at every byte (fluent-bit#10910)', () => {
    const stream = oc(M1) + oc(M2);
    for (let cut = 1; cut < stream.length; cut++) {
      expect(frame([stream.slice(0, cut), stream.slice(cut)]).out, `cut at ${cut}`).toEqual([
        [M1, false],
        [M2, false],
      ]);
    }
  });

  it('octet counting: the length prefix split in the middle, and one byte per read', () => {
    const long = '<13>1 - h a - - - ' + 'x'.repeat(200);
    const s = oc(long); // "218 <13>..."
    expect(frame([s.slice(0, 1), s.slice(1, 2), s.slice(2)]).out).toEqual([[long, false]]);
    expect(frame([...(oc(M1) + oc(M2))]).out).toEqual([
      [M1, false],
      [M2, false],
    ]);
  });

  it('octet counting counts bytes, not characters (multi-byte UTF-8), and a message may hold LF', () => {
    const m = '<13>1 - h a - - - grüße\nzweite Zeile';
    const buf = Buffer.from(oc(m));
    expect(frame([buf.subarray(0, 25), buf.subarray(25)]).out).toEqual([[m, false]]);
  });

  it('LF framing: several messages per read, split messages, CRLF, NUL and blank lines', () => {
    expect(frame([`${M1}\n${M2}\n`]).out).toEqual([
      [M1, false],
      [M2, false],
    ]);
    expect(frame([`${M1}\n${M2.slice(0, 10)}`, `${M2.slice(10)}\r\n\n\n`]).out).toEqual([
      [M1, false],
      [M2, false],
    ]);
    expect(frame([`${M1}\0${M2}\0`]).out).toEqual([
      [M1, false],
      [M2, false],
    ]);
    expect(frame([`${M1}\n`]).kind).toBe('lf');
  });

  it('LF framing: the last message without its LF is handed on when the sender closes', () => {
    expect(frame([`${M1}\n${M2}`], 1000, true)).toMatchObject({
      out: [
        [M1, false],
        [M2, false],
      ],
      lost: 0,
    });
  });

  it('octet counting: a connection closed inside a frame reports the partial bytes lost', () => {
    const s = oc(M1); // "46 <13>1 ...": the prefix is read, 17 bytes of the message are left
    expect(frame([s.slice(0, 20)], 1000, true)).toMatchObject({ out: [], lost: 17 });
    expect(frame([s.slice(0, 2)], 1000, true)).toMatchObject({ out: [], lost: 2 });
  });

  it('max_message_size truncates an octet-counted frame and skips its rest, however it is split', () => {
    const big = '<13>1 - h a - - - ' + 'y'.repeat(300);
    const stream = oc(big) + oc(M1);
    for (const cut of [2, 50, 100, 150, 319]) {
      expect(frame([stream.slice(0, cut), stream.slice(cut)], 100).out, `cut at ${cut}`).toEqual([
        [big.slice(0, 100), true],
        [M1, false],
      ]);
    }
  });

  it('max_message_size truncates an LF-framed message, skips to the next LF, and continues', () => {
    const big = '<13>1 - h a - - - ' + 'z'.repeat(300);
    expect(frame([`${big}\n${M1}\n`], 100).out).toEqual([
      [big.slice(0, 100), true],
      [M1, false],
    ]);
    // The long message arrives in pieces: cut as soon as it passes the limit, its rest skipped.
    expect(frame([big.slice(0, 150), big.slice(150, 250), big.slice(250) + '\n' + M1 + '\n'], 100).out).toEqual([
      [big.slice(0, 100), true],
      [M1, false],
    ]);
  });

  it('an octet-counted connection that sends a frame without a prefix falls back to LF framing', () => {
    const r = frame([oc(M1) + `${M2}\n${M1}\n`]);
    expect(r.out).toEqual([
      [M1, false],
      [M2, false],
      [M1, false],
    ]);
    expect(r.fallbacks.length).toBe(1);
    expect(r.kind).toBe('lf');
  });
});
