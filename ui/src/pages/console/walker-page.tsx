// The walker: walk an agent's subtree (v1, v2c or v3) and see the result the way a MIB browser
// shows it: scalars, and tables pivoted by INDEX, parsed or raw, each table exportable as CSV.
import { useEffect, useRef, useState } from 'preact/hooks';
import { consoleApi, type WalkRequest, type WalkResult } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { PageHeader } from '../../components/page-header.js';
import { simulatorStatus } from '../../lib/console-socket.js';
import { cellText, WalkTableView } from './walk-table.js';

const AUTH = ['', 'MD5', 'SHA', 'SHA224', 'SHA256', 'SHA384', 'SHA512'];
const PRIV = ['', 'DES', '3DES', 'AES128', 'AES192', 'AES256'];

interface Form {
  target: string;
  port: string;
  version: '1' | '2c' | '3';
  community: string;
  oid: string;
  max_repetitions: string;
  timeout_ms: string;
  use_mibs: boolean;
  parse: boolean;
  username: string;
  auth_protocol: string;
  auth_key: string;
  priv_protocol: string;
  priv_key: string;
}

function requestOf(f: Form): WalkRequest {
  const r: WalkRequest = {
    target: f.target.trim(),
    port: Number(f.port),
    version: f.version,
    oid: f.oid.trim() || undefined,
    parse: f.parse,
    use_mibs: f.use_mibs,
    json_format: 'grouped',
  };
  if (f.timeout_ms) r.timeout_ms = Number(f.timeout_ms);
  if (f.version !== '1' && f.max_repetitions) r.max_repetitions = Number(f.max_repetitions);
  if (f.version === '3') {
    r.username = f.username;
    if (f.auth_key) Object.assign(r, { auth_protocol: f.auth_protocol || undefined, auth_key: f.auth_key });
    if (f.priv_key) Object.assign(r, { priv_protocol: f.priv_protocol || undefined, priv_key: f.priv_key });
  } else r.community = f.community;
  return r;
}

/** A v3 protocol (empty: none) and its key: `auth_protocol` and `auth_key`, or the `priv_` pair. */
function ProtocolAndKey({
  kind,
  label,
  protocols,
  form,
  set,
}: {
  kind: 'auth' | 'priv';
  label: string;
  protocols: string[];
  form: Form;
  set: (patch: Partial<Form>) => void;
}) {
  const protocol = `${kind}_protocol` as const;
  const key = `${kind}_key` as const;
  return (
    <>
      <label>
        {label}
        <select name={protocol} value={form[protocol]} onChange={(e) => set({ [protocol]: e.currentTarget.value })}>
          {protocols.map((a) => (
            <option key={a} value={a}>
              {a || 'none'}
            </option>
          ))}
        </select>
      </label>
      <label>
        {label} key
        <input name={key} type="password" autocomplete="off" value={form[key]} onInput={(e) => set({ [key]: e.currentTarget.value })} />
      </label>
    </>
  );
}

/** `oid`: the start OID to fill in (the MIB catalog's "walk from here"). */
export function WalkerPage({ oid }: { oid?: string }) {
  const sim = simulatorStatus.value;
  const [form, setForm] = useState<Form>({
    target: '127.0.0.1',
    port: String(sim?.state === 'running' ? sim.port : 161),
    version: '2c',
    community: 'public',
    oid: oid ?? '1.3.6.1.2.1',
    max_repetitions: '25',
    timeout_ms: '3000',
    use_mibs: true,
    parse: true,
    username: '',
    auth_protocol: 'SHA',
    auth_key: '',
    priv_protocol: 'AES128',
    priv_key: '',
  });
  const [result, setResult] = useState<WalkResult>();
  const [error, setError] = useState<string>();
  const [started, setStarted] = useState<number>();
  const [elapsed, setElapsed] = useState(0);
  const abort = useRef<AbortController>(undefined);
  const set = (patch: Partial<Form>) => setForm({ ...form, ...patch });
  // A link with another OID while the page is open (the hash changed, the page stayed).
  useEffect(() => {
    if (oid) setForm((f) => ({ ...f, oid }));
  }, [oid]);

  useEffect(() => {
    if (started === undefined) return;
    const t = setInterval(() => setElapsed(Date.now() - started), 100);
    return () => clearInterval(t);
  }, [started]);

  const walk = async (f: Form) => {
    abort.current?.abort();
    const ac = new AbortController();
    abort.current = ac;
    setError(undefined);
    setStarted(Date.now());
    setElapsed(0);
    try {
      setResult(await consoleApi.walk(requestOf(f), ac.signal));
    } catch (e) {
      if (!ac.signal.aborted) {
        setError((e as Error).message);
        // The previous walk's tables would read as this walk's answer: only the error stays.
        setResult(undefined);
      }
    } finally {
      if (abort.current === ac) setStarted(undefined);
    }
  };

  const submit = (e: Event) => {
    e.preventDefault();
    void walk(form);
  };

  const toggleParse = (parse: boolean) => {
    const next = { ...form, parse };
    setForm(next);
    if (result) void walk(next);
  };

  return (
    <section>
      <PageHeader title="Walker" subtitle="Walk an SNMP agent: GETBULK for v2c and v3, GETNEXT for v1. Tables are pivoted by their INDEX." />
      <form class="card form-grid" onSubmit={submit} aria-label="walk">
        <label>
          Target
          <input name="target" value={form.target} onInput={(e) => set({ target: e.currentTarget.value })} required />
        </label>
        <label>
          Port
          <input name="port" type="number" min="1" max="65535" value={form.port} onInput={(e) => set({ port: e.currentTarget.value })} />
        </label>
        <label>
          Version
          <select name="version" value={form.version} onChange={(e) => set({ version: e.currentTarget.value as Form['version'] })}>
            <option value="1">v1</option>
            <option value="2c">v2c</option>
            <option value="3">v3</option>
          </select>
        </label>
        {form.version === '3' ? (
          <>
            <label>
              User
              <input name="username" value={form.username} onInput={(e) => set({ username: e.currentTarget.value })} required />
            </label>
            <ProtocolAndKey kind="auth" label="Auth" protocols={AUTH} form={form} set={set} />
            <ProtocolAndKey kind="priv" label="Privacy" protocols={PRIV} form={form} set={set} />
          </>
        ) : (
          <label>
            Community
            <input name="community" value={form.community} onInput={(e) => set({ community: e.currentTarget.value })} />
          </label>
        )}
        <label>
          Start OID or name
          <input name="oid" class="mono" value={form.oid} placeholder="IF-MIB::ifTable" onInput={(e) => set({ oid: e.currentTarget.value })} />
        </label>
        <label>
          Max-repetitions
          <input
            name="max_repetitions"
            type="number"
            min="1"
            value={form.max_repetitions}
            disabled={form.version === '1'}
            onInput={(e) => set({ max_repetitions: e.currentTarget.value })}
          />
        </label>
        <label>
          Timeout (ms)
          <input name="timeout_ms" type="number" min="1" value={form.timeout_ms} onInput={(e) => set({ timeout_ms: e.currentTarget.value })} />
        </label>
        <label class="inline">
          <input type="checkbox" name="use_mibs" checked={form.use_mibs} onChange={(e) => set({ use_mibs: e.currentTarget.checked })} /> labels from MIBs
        </label>
        <div class="form-actions wide">
          <button type="submit" class="primary" disabled={started !== undefined}>
            Walk
          </button>
          {started !== undefined && (
            <>
              <span class="muted" role="status" data-testid="walk-progress">
                walking… {(elapsed / 1000).toFixed(1)} s
              </span>
              <button type="button" onClick={() => abort.current?.abort()}>
                Cancel
              </button>
            </>
          )}
        </div>
      </form>
      {error && <Notice tone="error">{error}</Notice>}
      {result && (
        <div data-testid="walk-result">
          <div class="section-head">
            <p class="muted">
              {result.count} OIDs from {result.target}:{result.port} (SNMPv{result.version}, {result.operation}) in {result.duration_ms} ms
              {result.truncated ? ' · truncated at the OID limit' : ''}
            </p>
            <div class="segmented" role="group" aria-label="value format">
              <button type="button" class={form.parse ? 'active' : ''} aria-pressed={form.parse} onClick={() => toggleParse(true)}>
                Parsed
              </button>
              <button type="button" class={!form.parse ? 'active' : ''} aria-pressed={!form.parse} onClick={() => toggleParse(false)}>
                Raw
              </button>
            </div>
          </div>
          {Object.entries(result.tables ?? {}).map(([name, t]) => (
            <WalkTableView key={name} name={name} table={t} />
          ))}
          {Object.keys(result.scalars ?? {}).length > 0 && (
            <>
              <h3>Scalars</h3>
              <table class="table compact" data-testid="walk-scalars">
                <tbody>
                  {Object.entries(result.scalars ?? {}).map(([name, c]) => (
                    <tr key={name}>
                      <td class="mono">{name}</td>
                      <td>{typeof c === 'object' ? c.type : ''}</td>
                      <td>{cellText(c)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
          {(result.other ?? []).length > 0 && (
            <>
              <h3>Not placed by the loaded MIBs</h3>
              <pre class="raw-lines">{(result.other ?? []).map((o) => (typeof o === 'string' ? o : JSON.stringify(o))).join('\n')}</pre>
            </>
          )}
        </div>
      )}
    </section>
  );
}
