// The simulator's custom OID overrides: rows of OID, type and value, saved as one list (the server
// validates every row and names the first bad one).
import { useEffect, useState } from 'preact/hooks';
import { consoleApi, type Override } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { OidRowsTable } from './oid-rows-table.js';

const TYPES = ['Integer32', 'OctetString', 'hex', 'ObjectIdentifier', 'IpAddress', 'Counter32', 'Gauge32', 'TimeTicks', 'Counter64', 'Opaque'];

export function OverridesEditor() {
  const [rows, setRows] = useState<Override[]>();
  const [notice, setNotice] = useState<{ tone: 'ok' | 'error'; text: string }>();
  useEffect(() => {
    consoleApi
      .overrides()
      .then((r) => setRows(r.overrides))
      .catch((e: Error) => setNotice({ tone: 'error', text: e.message }));
  }, []);
  if (!rows) return notice ? <Notice tone="error">{notice.text}</Notice> : <p class="muted">Loading…</p>;

  const save = async () => {
    setNotice(undefined);
    try {
      const r = await consoleApi.saveOverrides(rows.filter((o) => o.oid.trim() !== ''));
      setNotice({ tone: 'ok', text: `${r.count} override${r.count === 1 ? '' : 's'} saved${r.applied_live ? ' and served now' : ''}` });
    } catch (e) {
      setNotice({ tone: 'error', text: (e as Error).message });
    }
  };

  return (
    <div class="card" data-testid="overrides">
      {notice && (
        <Notice tone={notice.tone} onClose={() => setNotice(undefined)}>
          {notice.text}
        </Notice>
      )}
      {rows.length === 0 && <p class="muted">No overrides: the simulator serves its default device. Add one to replace or add an OID.</p>}
      <OidRowsTable
        rows={rows}
        setRows={setRows}
        oidHeader="OID (numeric instance)"
        oidPlaceholder="1.3.6.1.2.1.1.5.0"
        typeOptions={(r) => [...new Set([r.type, ...TYPES])]}
      />
      <div class="form-actions">
        <button type="button" onClick={() => setRows([...rows, { oid: '', type: 'OctetString', value: '' }])}>
          Add override
        </button>
        <button type="button" class="primary" onClick={save}>
          Save overrides
        </button>
      </div>
    </div>
  );
}
