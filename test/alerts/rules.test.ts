import { describe, expect, it } from 'vitest';
import { AlertRuleSchema, parseAlertRule, validateAlertRule, MAX_RECIPIENTS } from '../../src/alerts/rules.js';

const webhook = { name: 'high-errors', condition: 'error_rate > 0.05', action: 'webhook', webhook_url: 'https://hooks.example.com/x', cooldown_seconds: 300 };
const email = { name: 'failed', condition: 'failed', action: 'email', email_to: 'ops@example.com', subject: 'Run failed', cooldown_seconds: 0 };

const problems = (over: Record<string, unknown>, base: Record<string, unknown> = webhook) => validateAlertRule({ ...base, ...over });

describe('parseAlertRule: valid rules', () => {
  it('accepts a webhook rule and a mail rule', () => {
    expect(parseAlertRule(webhook)).toEqual({
      ok: true,
      rule: { ...webhook, email_to: null, subject: null },
    });
    expect(parseAlertRule(email)).toEqual({ ok: true, rule: { ...email, webhook_url: null } });
  });

  it('cooldown_seconds defaults to 0; subject is optional', () => {
    const { cooldown_seconds: _c, subject: _s, ...rest } = email;
    const r = parseAlertRule(rest);
    expect(r).toEqual({ ok: true, rule: { ...rest, cooldown_seconds: 0, subject: null, webhook_url: null } });
  });

  it("normalizes a recipient list and drops the other action's fields", () => {
    const r = parseAlertRule({ ...email, email_to: ' a@example.com,b.c+tag@mail.example.org ,, ', webhook_url: 'http://x' });
    expect(r.ok && r.rule).toMatchObject({ email_to: 'a@example.com, b.c+tag@mail.example.org', webhook_url: null });
    const w = parseAlertRule({ ...webhook, email_to: 'nobody', subject: 'x' });
    expect(w.ok && w.rule).toMatchObject({ email_to: null, subject: null });
  });

  it('accepts a condition using every variable, $[...], http and single-label domains', () => {
    expect(
      problems({
        condition:
          "records_in > 0 and records_out < records_in and records_skipped > 0 and error_rate >= 0.1 and status != 'success' and failed and duration_seconds > 60 and $['records_in'] > 1",
      }),
    ).toEqual([]);
    expect(problems({ webhook_url: 'http://127.0.0.1:8080/alerts?k=v' })).toEqual([]);
    expect(problems({ webhook_url: 'https://user:secret@hooks.example.com/x' })).toEqual([]);
    expect(problems({ email_to: 'root@localhost' }, email)).toEqual([]);
  });

  it('does not convert types: a string cooldown is refused', () => {
    const r = parseAlertRule({ ...webhook, cooldown_seconds: '60' });
    expect(r).toEqual({ ok: false, problems: ['cooldown_seconds: expected integer, got "60"'] });
  });
});

describe('validateAlertRule: problems name the field', () => {
  it('not an object', () => {
    expect(validateAlertRule(null)).toEqual(['body: expected a JSON object with the alert rule fields']);
    expect(validateAlertRule([webhook])).toHaveLength(1);
    expect(validateAlertRule('x')).toHaveLength(1);
  });

  it('missing required fields', () => {
    const p = validateAlertRule({});
    expect(p.some((m) => m.startsWith('name:'))).toBe(true);
    expect(p.some((m) => m.startsWith('condition:'))).toBe(true);
    expect(p.some((m) => m.startsWith('action:'))).toBe(true);
  });

  it('name: empty, unsafe characters, too long', () => {
    expect(problems({ name: '' })[0]).toMatch(/^name: /);
    for (const bad of ['a b', 'a/b', '../x', '-x', 'ä', 'x?y', '%2F']) {
      const p = problems({ name: bad });
      expect(p, bad).toHaveLength(1);
      expect(p[0]).toMatch(/^name: .*letters, digits/);
    }
    expect(problems({ name: 'x'.repeat(129) })[0]).toMatch(/^name: /);
    expect(problems({ name: 'A.b_c-1' })).toEqual([]);
  });

  it('condition: compiler errors are passed on', () => {
    expect(problems({ condition: 'error_rate >' })).toEqual([expect.stringMatching(/^condition: .*at column/)]);
    expect(problems({ condition: 'exec(1)' })).toEqual([expect.stringMatching(/^condition: unknown function 'exec'/)]);
    expect(problems({ condition: '' })[0]).toMatch(/^condition: /);
    expect(problems({ condition: '   ' })).toEqual(['condition: empty expression']);
    expect(problems({ condition: 'records_in = 1' })[0]).toMatch(/^condition: /);
    expect(problems({ condition: 42 })[0]).toMatch(/^condition: expected string/);
  });

  it('condition: unknown variables are reported with a suggestion', () => {
    expect(problems({ condition: 'eror_rate > 0.1' })).toEqual([
      expect.stringMatching(/^condition: unknown variable 'eror_rate' \(did you mean 'error_rate'\?\); the variables are records_in, /),
    ]);
    expect(problems({ condition: 'foo or bar' })).toHaveLength(2);
  });

  it('action: only webhook or email', () => {
    expect(problems({ action: 'sms' })).toEqual([expect.stringMatching(/^action: must be one of 'webhook', 'email'/)]);
  });

  it('webhook_url: required for webhook, http(s) only', () => {
    expect(problems({ webhook_url: undefined })).toEqual(['webhook_url: is required for action webhook']);
    expect(problems({ webhook_url: null })).toEqual(['webhook_url: is required for action webhook']);
    expect(problems({ webhook_url: '  ' })).toEqual(['webhook_url: is required for action webhook']);
    expect(problems({ webhook_url: 'ftp://x.example.com/' })).toEqual(['webhook_url: must be an http:// or https:// URL, got ftp://']);
    expect(problems({ webhook_url: 'file:///etc/passwd' })[0]).toMatch(/^webhook_url: must be an http/);
    expect(problems({ webhook_url: 'not a url' })[0]).toMatch(/^webhook_url: is not a valid URL/);
    expect(problems({ webhook_url: 5 })[0]).toMatch(/^webhook_url: /);
  });

  it('email_to: required for email, basic address syntax, recipient limit', () => {
    expect(problems({ email_to: undefined }, email)).toEqual(['email_to: is required for action email (comma-separated addresses)']);
    expect(problems({ email_to: ' , ' }, email)).toEqual(['email_to: is required for action email (comma-separated addresses)']);
    for (const bad of ['ops', 'ops@', '@example.com', 'a b@example.com', 'ops@exa mple.com', 'ops@-x.com', 'ops@x..com', 'Ops <ops@example.com>', 'a@b@c']) {
      const p = problems({ email_to: bad }, email);
      expect(p, bad).toHaveLength(1);
      expect(p[0], bad).toMatch(/^email_to: ".*" (is not of the form|has an invalid)/);
    }
    expect(problems({ email_to: 'good@example.com, bad' }, email)).toEqual(['email_to: "bad" is not of the form name@domain']);
    const many = Array.from({ length: MAX_RECIPIENTS + 1 }, (_, i) => `u${i}@example.com`).join(',');
    expect(problems({ email_to: many }, email)).toEqual([`email_to: at most ${MAX_RECIPIENTS} recipients, got ${MAX_RECIPIENTS + 1}`]);
  });

  it('subject: one line', () => {
    expect(problems({ subject: 'a\r\nBcc: x@example.com' }, email)).toEqual(['subject: must be a single line without control characters']);
    expect(problems({ subject: 'x'.repeat(256) }, email)[0]).toMatch(/^subject: /);
    expect(problems({ subject: null }, email)).toEqual([]);
  });

  it('cooldown_seconds: integer >= 0', () => {
    expect(problems({ cooldown_seconds: -1 })[0]).toMatch(/^cooldown_seconds: /);
    expect(problems({ cooldown_seconds: 1.5 })[0]).toMatch(/^cooldown_seconds: expected integer/);
    expect(problems({ cooldown_seconds: 'soon' })[0]).toMatch(/^cooldown_seconds: expected integer/);
    expect(problems({ cooldown_seconds: 2 ** 31 })[0]).toMatch(/^cooldown_seconds: /);
    expect(problems({ cooldown_seconds: 0 })).toEqual([]);
  });

  it('unknown fields are refused with a suggestion', () => {
    expect(problems({ cooldown_second: 5 })).toEqual([
      expect.stringMatching(/^cooldown_second: unknown key 'cooldown_second' \(did you mean 'cooldown_seconds'\?\)/),
    ]);
  });

  it('reports every problem at once', () => {
    const p = validateAlertRule({ name: 'a b', condition: 'x >', action: 'email', email_to: 'nope', cooldown_seconds: -5 });
    expect(p.map((m) => m.split(':')[0]).sort()).toEqual(['condition', 'cooldown_seconds', 'email_to', 'name']);
  });

  it('the schema is a plain JSON schema for the API docs', () => {
    const json = JSON.parse(JSON.stringify(AlertRuleSchema));
    expect(json.type).toBe('object');
    expect(Object.keys(json.properties)).toEqual(['name', 'condition', 'action', 'webhook_url', 'email_to', 'subject', 'cooldown_seconds']);
    expect(json.required).toEqual(['name', 'condition', 'action', 'cooldown_seconds']);
  });
});

describe('validateAlertRule: messages', () => {
  it('reads well', () => {
    expect(validateAlertRule({ name: '', condition: 'failed', action: 'webhook', webhook_url: 'http://x', cooldown_seconds: 1.5 })).toEqual([
      'name: must not be empty',
      'cooldown_seconds: expected integer, got 1.5',
    ]);
    expect(validateAlertRule({ condition: 'failed', action: 'webhook', webhook_url: 'http://x' })).toEqual(['name: is required']);
    expect(validateAlertRule({ ...webhook, cooldown_seconds: -1 })).toEqual([expect.stringMatching(/^cooldown_seconds: .*0.*got -1$/)]);
  });
});
