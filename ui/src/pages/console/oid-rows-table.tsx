// An editable list of OID, type and value rows with a Remove button on each: the simulator's
// overrides and the trap sender's varbinds. Adding a row is the caller's (its defaults differ).

interface OidRow {
  oid: string;
  type: string;
  value: string | number;
}

export function OidRowsTable<R extends OidRow>({
  rows,
  setRows,
  oidHeader,
  oidPlaceholder,
  labelPrefix = '',
  typeOptions,
  typeText = (t) => t,
  valueDisabled,
}: {
  rows: R[];
  setRows: (rows: R[]) => void;
  oidHeader: string;
  oidPlaceholder: string;
  /** Before `oid 0`, `type 0`, `value 0` in the inputs' accessible names. */
  labelPrefix?: string;
  /** The type choices for a row. */
  typeOptions: (row: R) => string[];
  typeText?: (type: string) => string;
  valueDisabled?: (row: R) => boolean;
}) {
  const set = (i: number, patch: Partial<OidRow>) => setRows(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <table class="table compact" hidden={rows.length === 0}>
      <thead>
        <tr>
          <th>{oidHeader}</th>
          <th>Type</th>
          <th>Value</th>
          <th aria-label="actions" />
        </tr>
      </thead>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i}>
            <td>
              <input
                aria-label={`${labelPrefix}oid ${i}`}
                class="mono wide-input"
                value={r.oid}
                placeholder={oidPlaceholder}
                onInput={(e) => set(i, { oid: e.currentTarget.value })}
              />
            </td>
            <td>
              <select aria-label={`${labelPrefix}type ${i}`} value={r.type} onChange={(e) => set(i, { type: e.currentTarget.value })}>
                {typeOptions(r).map((t) => (
                  <option key={t} value={t}>
                    {typeText(t)}
                  </option>
                ))}
              </select>
            </td>
            <td>
              <input
                aria-label={`${labelPrefix}value ${i}`}
                class="wide-input"
                value={String(r.value)}
                disabled={valueDisabled?.(r)}
                onInput={(e) => set(i, { value: e.currentTarget.value })}
              />
            </td>
            <td>
              <button type="button" class="danger" onClick={() => setRows(rows.filter((_, j) => j !== i))}>
                Remove
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
