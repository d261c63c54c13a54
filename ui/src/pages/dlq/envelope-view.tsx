// One dead letter inspected: where it is kept, what failed and when, the record as formatted JSON
// and the raw input of a parse failure (as text when it is printable UTF-8, else base64). Everything
// here can be device text: it is rendered as text nodes only.
import type { DlqItem } from '../../api/dlq.js';
import { fmtTime } from '../../lib/format.js';
import { href } from '../../lib/router.js';
import { rawText } from './raw-text.js';

export function EnvelopeView({ item }: { item: DlqItem }) {
  const e = item.envelope;
  const raw = e.raw === null ? undefined : rawText(e.raw);
  return (
    <div class="dlq-envelope" data-testid="dlq-envelope">
      <dl class="facts">
        <dt>Id</dt>
        <dd class="mono">{item.id}</dd>
        <dt>Location</dt>
        <dd class="mono">{item.location}</dd>
        <dt>Stage</dt>
        <dd>{e._stage}</dd>
        <dt>Failed at</dt>
        <dd>{fmtTime(e._timestamp)}</dd>
        <dt>Run</dt>
        <dd>
          {e._run_id ? (
            <a href={href(['runs', e._run_id])} class="mono">
              {e._run_id}
            </a>
          ) : (
            '–'
          )}
        </dd>
        <dt>Replayed</dt>
        <dd>
          {item.replayed ? (
            <>
              {fmtTime(item.replayed_at)} by run{' '}
              {item.replayed_run_id && (
                <a href={href(['runs', item.replayed_run_id])} class="mono">
                  {item.replayed_run_id.slice(0, 8)}
                </a>
              )}
            </>
          ) : (
            'no'
          )}
        </dd>
      </dl>
      <h3>Error</h3>
      <pre class="error-text" data-testid="dlq-error">
        {e._error}
      </pre>
      {e.record !== null && (
        <>
          <h3>Record</h3>
          <pre class="dlq-json" data-testid="dlq-record">
            {JSON.stringify(e.record, null, 2)}
          </pre>
        </>
      )}
      {raw && (
        <>
          <h3>Raw input {raw.printable ? '(text)' : '(base64: not printable text)'}</h3>
          <pre class="dlq-json" data-testid="dlq-raw">
            {raw.text}
          </pre>
        </>
      )}
    </div>
  );
}
