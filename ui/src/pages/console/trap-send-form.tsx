// The trap sender: target, port, version, community, notification OID (numeric or MODULE::name),
// varbinds (type optional where the MIB gives the syntax), trap or inform. The server resolves the
// names and names the first bad varbind.
import { useEffect, useState } from 'preact/hooks';
import { consoleApi, type TrapSend } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { OidRowsTable } from './oid-rows-table.js';
import { varbindValue } from './trap-feed.js';

const TYPES = ['', 'Integer32', 'OctetString', 'hex', 'ObjectIdentifier', 'IpAddress', 'Counter32', 'Gauge32', 'TimeTicks', 'Counter64', 'Opaque', 'Null'];

interface Row {
  oid: string;
  type: string;
  value: string;
}

export function TrapSendForm({ defaultPort }: { defaultPort: number }) {
  const [form, setForm] = useState({
    target: '127.0.0.1',
    port: String(defaultPort),
    version: '2c' as '1' | '2c',
    community: 'public',
    oid: 'IF-MIB::linkDown',
    inform: false,
  });
  const [rows, setRows] = useState<Row[]>([{ oid: 'IF-MIB::ifIndex.1', type: '', value: '1' }]);
  const [notice, setNotice] = useState<{ tone: 'ok' | 'error'; text: string }>();
  const [busy, setBusy] = useState(false);
  const [touchedPort, setTouchedPort] = useState(false);
  // Follows the receiver's port (send to ourselves) until the operator types another.
  useEffect(() => {
    if (!touchedPort) setForm((f) => ({ ...f, port: String(defaultPort) }));
  }, [defaultPort, touchedPort]);
  const set = (patch: Partial<typeof form>) => setForm({ ...form, ...patch });

  const send = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setNotice(undefined);
    const body: TrapSend = {
      target: form.target.trim(),
      port: Number(form.port),
      version: form.version,
      community: form.community,
      oid: form.oid.trim(),
      varbinds: rows
        .filter((r) => r.oid.trim() !== '')
        .map((r) => ({ oid: r.oid.trim(), ...(r.type ? { type: r.type } : {}), ...(r.type !== 'Null' ? { value: r.value } : {}) })),
    };
    if (form.inform) body.inform = true;
    try {
      const r = await consoleApi.sendTrap(body);
      const vbs = r.varbinds.map((v) => `${v.name ?? v.oid} = ${varbindValue(v)}`).join(', ');
      setNotice({
        tone: 'ok',
        text: `${r.kind} ${r.trap_name} sent to ${r.target}:${r.port} (SNMPv${r.version}${r.acknowledged ? ', acknowledged' : ''}) in ${r.duration_ms} ms${vbs ? `: ${vbs}` : ''}`,
      });
    } catch (err) {
      setNotice({ tone: 'error', text: (err as Error).message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card" onSubmit={send} aria-label="send trap">
      {notice && (
        <Notice tone={notice.tone} onClose={() => setNotice(undefined)}>
          {notice.text}
        </Notice>
      )}
      <div class="form-grid">
        <label>
          Target
          <input name="target" value={form.target} required onInput={(e) => set({ target: e.currentTarget.value })} />
        </label>
        <label>
          Port
          <input
            name="port"
            type="number"
            min="1"
            max="65535"
            value={form.port}
            onInput={(e) => {
              setTouchedPort(true);
              set({ port: e.currentTarget.value });
            }}
          />
        </label>
        <label>
          Version
          <select
            name="version"
            value={form.version}
            onChange={(e) => set({ version: e.currentTarget.value as '1' | '2c', inform: e.currentTarget.value === '1' ? false : form.inform })}
          >
            <option value="1">v1</option>
            <option value="2c">v2c</option>
          </select>
        </label>
        <label>
          Community
          <input name="community" value={form.community} onInput={(e) => set({ community: e.currentTarget.value })} />
        </label>
        <label class="wide">
          Notification OID or name
          <input
            name="oid"
            class="mono"
            value={form.oid}
            required
            placeholder="IF-MIB::linkDown or 1.3.6.1.6.3.1.1.5.3"
            onInput={(e) => set({ oid: e.currentTarget.value })}
          />
        </label>
      </div>
      <h3>Varbinds</h3>
      <OidRowsTable
        rows={rows}
        setRows={setRows}
        oidHeader="OID or name (with instance)"
        oidPlaceholder="IF-MIB::ifIndex.1"
        labelPrefix="varbind "
        typeOptions={() => TYPES}
        typeText={(t) => t || 'from the MIB'}
        valueDisabled={(r) => r.type === 'Null'}
      />
      <div class="form-actions send-actions">
        <button type="button" onClick={() => setRows([...rows, { oid: '', type: '', value: '' }])}>
          Add varbind
        </button>
        <label class="inline">
          <input
            type="checkbox"
            name="inform"
            checked={form.inform}
            disabled={form.version === '1'}
            onChange={(e) => set({ inform: e.currentTarget.checked })}
          />{' '}
          inform (wait for the acknowledgement)
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Send
        </button>
      </div>
    </form>
  );
}
