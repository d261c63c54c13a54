// The Live tab (issue 29, item 3): records as they pass one stage of the pipeline, through the tap
// WebSocket (GET /api/pipelines/{name}/tap, docs/live.md). The server samples (rate, filter) and
// masks secrets; the page keeps the newest MAX_SHOWN records, newest first.
import { useEffect, useRef, useState } from 'preact/hooks';
import { tapNeedsSession, tapRefusal, tapUrl, type TapQuery } from '../../api/daemon.js';
import type { PipelineConfigView, TapFrame } from '../../api/types.js';
import { Notice } from '../../components/notice.js';
import { fmtInt, fmtTime } from '../../lib/format.js';

const MAX_SHOWN = 200;
/** The tap ends after `limit` records; the page asks for the most the server allows, so it is the operator who stops it. */
const LIMIT = 100_000;
const RATES = [1, 10, 100];

type Phase = 'idle' | 'connecting' | 'open' | 'paused' | 'ended' | 'failed';

interface Shown {
  seq: number;
  at: string;
  json: string;
}

function stageOptions(config: PipelineConfigView): [string, string][] {
  const n = config.transforms?.length ?? 0;
  return [
    ['source', 'source: records as decoded'],
    ['transforms', n > 0 ? `after the transforms (${n}): what every sink's condition sees` : 'transforms (none: as decoded)'],
    ...config.sinks.map((s, i): [string, string] => [String(i), `sinks[${i}] (${s.type})${s.condition ? `: if ${s.condition}` : ''}`]),
    ...(config.dlq ? [['dlq', `dlq (${config.dlq.type}): the dead letters`] as [string, string]] : []),
  ];
}

function TapRecord({ r }: { r: Shown }) {
  // Compact on one line; opened, indented (only then: 200 of them re-render with the page). Device text stays text (Preact children).
  const [open, setOpen] = useState(false);
  return (
    <li class="tap-record">
      <details onToggle={(e) => setOpen(e.currentTarget.open)}>
        <summary>
          <span class="muted small">{r.at}</span> <code>{r.json}</code>
        </summary>
        {open && <pre>{JSON.stringify(JSON.parse(r.json), null, 2)}</pre>}
      </details>
    </li>
  );
}

export function PipelineTap({ name, config, stage: initialStage }: { name: string; config: PipelineConfigView; stage?: string }) {
  const options = stageOptions(config);
  const [stage, setStage] = useState(initialStage && options.some(([v]) => v === initialStage) ? initialStage : 'transforms');
  const [filter, setFilter] = useState('');
  const [rate, setRate] = useState(10);
  const [phase, setPhase] = useState<Phase>('idle');
  const [running, setRunning] = useState<boolean>();
  const [records, setRecords] = useState<Shown[]>([]);
  const [received, setReceived] = useState(0);
  const [dropped, setDropped] = useState(0);
  const [message, setMessage] = useState<string>();
  const socket = useRef<WebSocket | undefined>(undefined);
  const seq = useRef(0);

  // A link from the graph names a stage: follow it (the tap in progress, if any, goes on until stopped).
  useEffect(() => {
    if (initialStage && options.some(([v]) => v === initialStage)) setStage(initialStage);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [initialStage]);

  useEffect(() => () => socket.current?.close(1000), []);

  const start = () => {
    const q: TapQuery = { stage, rate, limit: LIMIT, ...(filter.trim() ? { filter: filter.trim() } : {}) };
    const ws = new WebSocket(tapUrl(name, q));
    socket.current = ws;
    let opened = false;
    let ended = false;
    setPhase('connecting');
    setMessage(undefined);
    setRunning(undefined);
    ws.onopen = () => {
      opened = true;
      if (socket.current === ws) setPhase('open');
    };
    ws.onmessage = (ev: MessageEvent<string>) => {
      if (socket.current !== ws) return;
      const f = JSON.parse(ev.data) as TapFrame;
      // In a cluster, status frames tagged with a worker are that worker's; the pipeline's state is the untagged one.
      if (f.type === 'status') {
        if (f.worker === undefined) setRunning(f.running);
      } else if (f.type === 'dropped') setDropped((d) => d + f.count);
      else if (f.type === 'end') {
        ended = true;
        setPhase('ended');
        setMessage(f.reason);
      } else if (f.type === 'records') {
        const at = fmtTime(new Date().toISOString()).slice(11);
        const fresh = f.records.map((r) => ({ seq: ++seq.current, at, json: JSON.stringify(r) })).reverse();
        setReceived((n) => n + f.records.length);
        setRecords((old) => [...fresh, ...old].slice(0, MAX_SHOWN));
      }
    };
    ws.onclose = (ev) => {
      if (socket.current !== ws) return;
      socket.current = undefined;
      if (ended) return;
      if (!opened) {
        // The upgrade was refused: ask the same URL as a plain request for the server's reason.
        setPhase('failed');
        void tapRefusal(name, q).then((detail) =>
          setMessage(detail ?? 'the server refused the connection; check the stage and the filter, or reload the page if you were signed out'),
        );
        return;
      }
      setPhase('failed');
      setMessage(`the connection closed (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''}); press Start to tap again`);
    };
  };

  const stop = () => {
    const ws = socket.current;
    socket.current = undefined;
    ws?.close(1000);
    setPhase('paused');
  };

  const clear = () => {
    setRecords([]);
    setReceived(0);
    setDropped(0);
  };

  const active = phase === 'connecting' || phase === 'open';
  const needsSession = tapNeedsSession();
  const status =
    phase === 'idle'
      ? 'Not tapping. Pick a stage, optionally a filter, and press Start.'
      : phase === 'connecting'
        ? 'Connecting…'
        : phase === 'open'
          ? running === false
            ? 'Tapping: the pipeline is not running; waiting for it to run (a stream started, a schedule’s next run).'
            : running
              ? 'Tapping: the pipeline is running; records show as they pass.'
              : 'Tapping…'
          : phase === 'paused'
            ? 'Stopped. The records below stay; Start taps again.'
            : phase === 'ended'
              ? 'The tap ended.'
              : 'Could not open the tap:';

  return (
    <section class="tap" data-testid="tap">
      <form
        class="tap-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (!active) start();
        }}
      >
        <label>
          Stage
          <select value={stage} disabled={active} onChange={(e) => setStage(e.currentTarget.value)} data-testid="tap-stage">
            {options.map(([v, label]) => (
              <option key={v} value={v}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label class="tap-filter">
          Filter (optional)
          <input
            type="text"
            class="mono"
            value={filter}
            disabled={active}
            placeholder="severity == 'major'"
            title="only records for which this expression is true: the language of the filter transform"
            onInput={(e) => setFilter(e.currentTarget.value)}
            data-testid="tap-filter"
          />
        </label>
        <label>
          At most
          <select value={String(rate)} disabled={active} onChange={(e) => setRate(Number(e.currentTarget.value))} data-testid="tap-rate">
            {RATES.map((r) => (
              <option key={r} value={String(r)}>
                {r} record{r > 1 ? 's' : ''}/s
              </option>
            ))}
          </select>
        </label>
        <div class="tap-buttons">
          {/* Two elements, not one re-typed: a Stop re-rendered into a submit button during its own click would submit (start again). */}
          {active ? (
            <button key="stop" type="button" onClick={stop}>
              Stop
            </button>
          ) : (
            <button key="start" type="submit" class="primary" disabled={needsSession}>
              Start
            </button>
          )}
          <button type="button" onClick={clear} disabled={records.length === 0}>
            Clear
          </button>
        </div>
      </form>
      {needsSession && (
        <Notice tone="info">
          The Live tab needs a signed-in session: this tab uses an API key, which a browser cannot send on a WebSocket. Sign out and sign in with a user.
        </Notice>
      )}
      <p class="tap-status" data-testid="tap-status">
        {active && <span class={running ? 'live-dot' : 'wait-dot'} aria-hidden="true" />} {status}
        {message && (
          <>
            {' '}
            <span class={phase === 'failed' ? 'bad' : ''} data-testid="tap-message">
              {message}
            </span>
          </>
        )}
      </p>
      <p class="muted small" data-testid="tap-counts">
        {fmtInt(received)} record{received === 1 ? '' : 's'} received
        {received > MAX_SHOWN ? `, the newest ${MAX_SHOWN} shown` : ''}
        {dropped > 0 && <span class="bad">{` · ${fmtInt(dropped)} dropped (the page read too slowly)`}</span>}
        {' · samples at most '}
        {rate}/s, secrets masked; click a record to open it
      </p>
      {records.length > 0 ? (
        <ol class="tap-records" data-testid="tap-records">
          {records.map((r) => (
            <TapRecord key={r.seq} r={r} />
          ))}
        </ol>
      ) : (
        active && <p class="empty small">No records yet{filter.trim() ? ' match the filter' : ''}.</p>
      )}
    </section>
  );
}
