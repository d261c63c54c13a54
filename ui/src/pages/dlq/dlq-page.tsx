// A pipeline's dead letters (issue 17): the envelopes its DLQ sink holds, filtered and paged; one
// inspected beside the table; ticked rows (or all that match) replayed with edits, the replay run
// linked. A DLQ that cannot be read back (none, or a sink with no reader) shows the server's 409
// detail as it is. Read on demand (a read can take seconds on a large DLQ), not polled.
import { useEffect, useRef, useState } from 'preact/hooks';
import { dlqApi, type DlqItem } from '../../api/dlq.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { SelectField } from '../../components/select-field.js';
import type { ApiFailure } from '../../lib/http.js';
import { fmtInt, fmtTime } from '../../lib/format.js';
import { href, navigate } from '../../lib/router.js';
import { usePoll } from '../../lib/use-poll.js';
import { SINCE_OPTIONS } from '../runs/run-filter.js';
import { filterOf, PAGE_SIZE, queryOf, STAGES, viewOf, type DlqView } from './dlq-filter.js';
import { EnvelopeView } from './envelope-view.js';
import { ReplayPanel } from './replay-panel.js';
import './dlq.css';

export function DlqPage({ name, query }: { name: string; query: URLSearchParams }) {
  const view = viewOf(query);
  const key = JSON.stringify(queryOf(view));
  const [unreadable, setUnreadable] = useState<string>();
  const list = usePoll(
    () =>
      dlqApi.list(name, { ...filterOf(view), replayed: view.hideReplayed ? false : undefined, limit: PAGE_SIZE, offset: (view.page - 1) * PAGE_SIZE }).then(
        (page) => (setUnreadable(undefined), page),
        (e: ApiFailure) => {
          // 409: no DLQ sink, or one svc cannot read back: not a failure of this page, the answer.
          if (e.status === 409) setUnreadable(e.message);
          throw e;
        },
      ),
    0,
    [name, key],
  );
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [inspected, setInspected] = useState<string>();
  // The error text as typed; it follows the hash only when the hash changes from elsewhere (a link,
  // back), never over what is being typed after this input's own change.
  const [errorText, setErrorText] = useState(view.error);
  const errorInHash = useRef(view.error);
  if (errorInHash.current !== view.error) {
    errorInHash.current = view.error;
    setErrorText(view.error);
  }
  // The ticks belong to one selection of envelopes: a new filter starts a new one.
  const filterKey = JSON.stringify({ ...queryOf(view), page: undefined });
  useEffect(() => setSelected(new Set()), [name, filterKey]);

  const setView = (change: Partial<DlqView>) => {
    if (change.error !== undefined) errorInHash.current = change.error;
    navigate(href(['pipelines', name, 'dlq'], queryOf({ ...view, page: 1, ...change })));
  };
  const items = list.data?.items ?? [];
  const total = list.data?.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const shown = items.find((i) => i.id === inspected);
  const allTicked = items.length > 0 && items.every((i) => selected.has(i.id));
  const tick = (ids: string[], on: boolean) => {
    const next = new Set(selected);
    for (const id of ids) on ? next.add(id) : next.delete(id);
    setSelected(next);
  };

  return (
    <section>
      <PageHeader
        title={`Dead letters of ${name}`}
        subtitle="Records the pipeline could not parse, transform or write, as its DLQ sink keeps them; oldest first."
      >
        <button type="button" onClick={() => void list.refresh()}>
          Refresh
        </button>
        <a class="button" href={href(['pipelines', name])}>
          Open pipeline
        </a>
        <a class="button" href={href(['runs'], { pipeline: name })}>
          Runs
        </a>
      </PageHeader>
      {unreadable !== undefined ? (
        <div class="empty" data-testid="dlq-unreadable">
          <p>The dead letters of this pipeline cannot be listed:</p>
          <p class="dlq-detail">{unreadable}</p>
        </div>
      ) : (
        <>
          <form
            class="filters"
            aria-label="filter dead letters"
            onSubmit={(e) => {
              e.preventDefault();
              setView({ error: errorText.trim() });
            }}
          >
            <SelectField label="Stage" name="stage" value={view.stage} any="any stage" options={STAGES} onChange={(stage) => setView({ stage })} />
            <label>
              Error contains
              <input
                name="error"
                type="search"
                value={errorText}
                placeholder="text, any case"
                onInput={(e) => setErrorText(e.currentTarget.value)}
                onChange={(e) => setView({ error: e.currentTarget.value.trim() })}
              />
            </label>
            <SelectField label="Failed" name="since" value={view.since} options={SINCE_OPTIONS} onChange={(since) => setView({ since })} />
            {view.run && (
              // Not a label: a click on its text must not press the button.
              <div class="dlq-check dlq-run" data-testid="dlq-run-filter">
                <span>
                  Run{' '}
                  <a href={href(['runs', view.run])} class="mono">
                    {view.run.slice(0, 8)}
                  </a>{' '}
                  <button type="button" class="link" onClick={() => setView({ run: '' })}>
                    all runs
                  </button>
                </span>
              </div>
            )}
            <label class="dlq-check">
              <span>
                <input
                  type="checkbox"
                  name="show-replayed"
                  checked={!view.hideReplayed}
                  onChange={(e) => setView({ hideReplayed: !e.currentTarget.checked })}
                />{' '}
                show replayed
              </span>
            </label>
          </form>
          {list.error && <Notice tone="error">{list.error}</Notice>}
          {list.data?.truncated && <Notice tone="info">The DLQ holds more envelopes than one read keeps (100,000): the oldest are listed.</Notice>}
          {!!list.data?.skipped && (
            <Notice tone="info">
              {plural(list.data.skipped, 'stored item')} of the DLQ sink are not envelopes and are not listed (the daemon's log says why).
            </Notice>
          )}
          <ReplayPanel
            name={name}
            selected={[...selected]}
            matching={total}
            filter={filterOf(view)}
            hideReplayed={view.hideReplayed}
            onReplayed={() => (setSelected(new Set()), void list.refresh())}
          />
          {list.loading && !list.data ? (
            <p class="muted">Reading the DLQ…</p>
          ) : items.length === 0 ? (
            !list.error && (
              <div class="empty">
                <p>
                  {view.stage || view.error || view.since !== 'all' || view.hideReplayed || view.run
                    ? 'No dead letters match this filter.'
                    : 'The DLQ of this pipeline is empty.'}
                </p>
              </div>
            )
          ) : (
            <div class={shown ? 'dlq-layout' : ''}>
              <div>
                <table class="table dlq-table" data-testid="dlq-table">
                  <thead>
                    <tr>
                      <th class="dlq-tick">
                        <input
                          type="checkbox"
                          aria-label="select all on this page"
                          checked={allTicked}
                          onChange={(e) =>
                            tick(
                              items.map((i) => i.id),
                              e.currentTarget.checked,
                            )
                          }
                        />
                      </th>
                      <th>Failed at</th>
                      <th>Stage</th>
                      <th>Error</th>
                      <th>Run</th>
                      <th>Replayed</th>
                    </tr>
                  </thead>
                  <tbody>
                    {items.map((i) => (
                      <DlqRow
                        key={i.id}
                        item={i}
                        ticked={selected.has(i.id)}
                        inspected={i.id === inspected}
                        onTick={(on) => tick([i.id], on)}
                        onInspect={() => setInspected(i.id === inspected ? undefined : i.id)}
                      />
                    ))}
                  </tbody>
                </table>
                <div class="dlq-paging" data-testid="dlq-paging">
                  <span class="muted">
                    {fmtInt((view.page - 1) * PAGE_SIZE + 1)}–{fmtInt((view.page - 1) * PAGE_SIZE + items.length)} of {fmtInt(total)}
                    {selected.size > 0 && ` · ${fmtInt(selected.size)} selected`}
                  </span>
                  <button
                    type="button"
                    disabled={view.page <= 1}
                    onClick={() => navigate(href(['pipelines', name, 'dlq'], queryOf({ ...view, page: view.page - 1 })))}
                  >
                    Previous
                  </button>
                  <button
                    type="button"
                    disabled={view.page >= pages}
                    onClick={() => navigate(href(['pipelines', name, 'dlq'], queryOf({ ...view, page: view.page + 1 })))}
                  >
                    Next
                  </button>
                </div>
              </div>
              {shown && (
                <aside class="dlq-side" aria-label="envelope">
                  <div class="section-head">
                    <h2>Envelope</h2>
                    <button type="button" class="link" aria-label="close the envelope" onClick={() => setInspected(undefined)}>
                      ×
                    </button>
                  </div>
                  <EnvelopeView item={shown} />
                </aside>
              )}
            </div>
          )}
        </>
      )}
    </section>
  );
}

const plural = (n: number, one: string) => `${fmtInt(n)} ${one}${n === 1 ? '' : 's'}`;

function DlqRow({
  item,
  ticked,
  inspected,
  onTick,
  onInspect,
}: {
  item: DlqItem;
  ticked: boolean;
  inspected: boolean;
  onTick: (on: boolean) => void;
  onInspect: () => void;
}) {
  const e = item.envelope;
  return (
    <tr
      data-dlq-id={item.id}
      data-stage={e._stage}
      class={inspected ? 'selected' : ''}
      onClick={(ev) => !(ev.target as HTMLElement).closest('input, a, button') && onInspect()}
    >
      <td class="dlq-tick">
        <input type="checkbox" aria-label={`select ${item.location}`} checked={ticked} onChange={(ev) => onTick(ev.currentTarget.checked)} />
      </td>
      <td class="nowrap">
        <button type="button" class="link" aria-expanded={inspected} onClick={onInspect} title="inspect the envelope">
          {fmtTime(e._timestamp)}
        </button>
      </td>
      <td>{e._stage}</td>
      <td class="dlq-error-cell">{e._error}</td>
      <td>
        {e._run_id ? (
          <a href={href(['runs', e._run_id])} class="mono">
            {e._run_id.slice(0, 8)}
          </a>
        ) : (
          '–'
        )}
      </td>
      <td class="nowrap">
        {item.replayed ? (
          <span class="badge badge-ok" title={`replayed ${fmtTime(item.replayed_at)}`}>
            replayed
          </span>
        ) : (
          <span class="muted">no</span>
        )}
      </td>
    </tr>
  );
}
