// One MIB table of a walk, pivoted: a row per INDEX (instance suffix), a column per object, with
// its own CSV export. Cell values come from the device: text only.
import type { WalkCell, WalkTable } from '../../api/console.js';
import { toCsv } from '../../lib/csv.js';
import { downloadText } from '../../lib/download.js';

/** What a cell shows: the enum label or DISPLAY-HINT form when the MIB gives one, else the value. */
export function cellText(c: WalkCell | undefined): string {
  if (c === undefined) return '';
  if (typeof c === 'string') return c;
  if (c.label !== undefined) return `${c.label}(${String(c.value)})`;
  if (c.display !== undefined) return c.display;
  return typeof c.value === 'object' ? JSON.stringify(c.value) : String(c.value);
}

const short = (name: string) => name.replace(/^.*::/, '');

export function WalkTableView({ name, table }: { name: string; table: WalkTable }) {
  const indexes = Object.keys(table.rows);
  const exportCsv = () => {
    const rows = [['index', ...table.columns], ...indexes.map((i) => [i, ...table.columns.map((c) => cellText(table.rows[i]![c]))])];
    downloadText(`${short(name)}.csv`, toCsv(rows));
  };
  return (
    <div class="walk-table" data-table={name}>
      <div class="section-head">
        <h3>
          {name}{' '}
          <span class="muted small">
            {table.row_count} rows · index {table.index.join(', ') || '–'}
          </span>
        </h3>
        <button type="button" onClick={exportCsv}>
          CSV
        </button>
      </div>
      <div class="scroll-x">
        <table class="table compact">
          <thead>
            <tr>
              <th>Index</th>
              {table.columns.map((c) => (
                <th key={c}>{c}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {indexes.map((i) => (
              <tr key={i}>
                <td class="mono">{i}</td>
                {table.columns.map((c) => {
                  const cell = table.rows[i]![c];
                  return (
                    <td key={c} title={typeof cell === 'object' ? cell.type : undefined}>
                      {cellText(cell)}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
