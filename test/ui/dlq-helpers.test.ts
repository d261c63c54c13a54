// The dead-letter page's pure helpers: its filter in the hash (ui/src/pages/dlq/dlq-filter.ts), the
// replay form's edits (replay-edits.ts) and a parse failure's raw input as text or base64 (raw-text.ts).
import { describe, expect, it } from 'vitest';
import { filterOf, queryOf, viewOf } from '../../ui/src/pages/dlq/dlq-filter.js';
import { rawText } from '../../ui/src/pages/dlq/raw-text.js';
import { editsOf } from '../../ui/src/pages/dlq/replay-edits.js';

const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString('base64');

describe('the dead-letter page helpers', () => {
  it('reads the view from the hash, writes back only what differs from the defaults, and turns it into API filters', () => {
    const defaults = viewOf(new URLSearchParams(''));
    expect(defaults).toEqual({ stage: '', error: '', since: 'all', hideReplayed: false, run: '', page: 1 });
    expect(queryOf(defaults)).toEqual({ stage: undefined, error: undefined, since: undefined, replayed: undefined, page: undefined });
    expect(filterOf(defaults)).toEqual({ stage: undefined, error: undefined, since: undefined });

    const v = viewOf(new URLSearchParams('stage=transform&error=add_field&since=1h&replayed=hide&page=3'));
    expect(v).toEqual({ stage: 'transform', error: 'add_field', since: '1h', hideReplayed: true, run: '', page: 3 });
    expect(queryOf(v)).toEqual({ stage: 'transform', error: 'add_field', since: '1h', replayed: 'hide', page: '3' });
    const now = Date.parse('2026-11-27T06:00:00Z');
    expect(filterOf(v, now)).toEqual({ stage: 'transform', error: 'add_field', since: '2026-11-27T05:00:00.000Z' });
    // A run's page links here with its run (issue 29): the listing and a replay of all matching keep to it.
    const ofRun = viewOf(new URLSearchParams('run=0f3c2a9e-1111-4222-8333-444455556666'));
    expect(ofRun.run).toBe('0f3c2a9e-1111-4222-8333-444455556666');
    expect(queryOf(ofRun)).toMatchObject({ run: '0f3c2a9e-1111-4222-8333-444455556666' });
    expect(filterOf(ofRun)).toMatchObject({ run_id: '0f3c2a9e-1111-4222-8333-444455556666' });
    // A hand-edited hash cannot ask for a stage the API does not know or a page below 1.
    expect(filterOf(viewOf(new URLSearchParams('stage=write'))).stage).toBeUndefined();
    expect(viewOf(new URLSearchParams('page=0')).page).toBe(1);
    expect(viewOf(new URLSearchParams('page=x')).page).toBe(1);
  });

  it('sends the set rows and the JSON patch the form holds, and refuses a half row, a field set twice or a patch that is not a JSON array', () => {
    expect(editsOf([{ field: '', expr: '' }], '  ')).toEqual({});
    expect(
      editsOf(
        [
          { field: ' octets ', expr: 'int(octets)' },
          { field: '', expr: '' },
        ],
        '',
      ),
    ).toEqual({ set: { octets: 'int(octets)' } });
    expect(editsOf([], '[{"op": "replace", "path": "/host", "value": "core-1"}]')).toEqual({ patch: [{ op: 'replace', path: '/host', value: 'core-1' }] });
    expect(editsOf([{ field: 'octets', expr: '' }], '')).toBe('set: every row needs a field and an expression (octets)');
    expect(
      editsOf(
        [
          { field: 'a', expr: '1' },
          { field: 'a', expr: '2' },
        ],
        '',
      ),
    ).toBe('set: the field a is set twice');
    expect(editsOf([], '{"op": "replace"')).toMatch(/^JSON patch: /);
    expect(editsOf([], '{"op": "remove", "path": "/a"}')).toMatch(/^JSON patch: an array of operations/);
  });

  it('shows raw input as text when it is printable UTF-8, else as the base64 the envelope holds', () => {
    expect(rawText(b64('not json at all'))).toEqual({ text: 'not json at all', printable: true });
    expect(rawText(b64('cell;rsrp\tö\r\n'))).toEqual({ text: 'cell;rsrp\tö\r\n', printable: true });
    const binary = b64(new Uint8Array([0x30, 0x82, 0x01, 0x0a, 0x02]));
    expect(rawText(binary)).toEqual({ text: binary, printable: false });
    const latin1 = b64(new Uint8Array([0x63, 0xe9, 0x6c, 0x6c]));
    expect(rawText(latin1)).toEqual({ text: latin1, printable: false });
    expect(rawText('%%not base64%%')).toEqual({ text: '%%not base64%%', printable: false });
  });
});
