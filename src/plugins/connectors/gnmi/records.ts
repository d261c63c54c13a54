// One record per update of a gNMI Notification, and one per deleted path:
//   {timestamp, timestamp_ns, target, path, type, value}         an update
//   {timestamp, timestamp_ns, target, path, deleted: true}       a delete
// `path` is the notification's prefix joined with the update's path (`origin:/a/b[k=v]/leaf`),
// `target` the prefix's target when the notification names one (a gateway in front of several
// devices), else host:port. `timestamp` is ISO 8601 (milliseconds); `timestamp_ns` keeps the
// nanoseconds since the epoch exactly, as a decimal string. A notification without a timestamp
// gives null for both.
import type { Notification } from './client.js';
import { formatPath } from './path.js';
import { decodeTypedValue } from './typed-value.js';

export interface GnmiRecord {
  timestamp: string | null;
  timestamp_ns: string | null;
  target: string;
  path: string;
  type?: string | null;
  value?: unknown;
  deleted?: true;
  /** Updates the target coalesced into this one (Update.duplicates), when not 0. */
  duplicates?: number;
}

/** ns since the epoch (decimal string) → ISO 8601, millisecond precision. */
export function isoOfNs(ns: string): string | null {
  try {
    const ms = BigInt(ns) / 1_000_000n;
    const d = new Date(Number(ms));
    return Number.isNaN(d.getTime()) ? null : d.toISOString();
  } catch {
    return null;
  }
}

export function notificationRecords(n: Notification, defaultTarget: string): GnmiRecord[] {
  const ns = n.timestamp && n.timestamp !== '0' ? n.timestamp : null;
  const timestamp = ns ? isoOfNs(ns) : null;
  const target = n.prefix?.target || defaultTarget;
  const out: GnmiRecord[] = [];
  for (const u of n.update ?? []) {
    const { type, value } = decodeTypedValue(u.val);
    const r: GnmiRecord = { timestamp, timestamp_ns: ns, target, path: formatPath(n.prefix, u.path), type, value };
    if (u.duplicates) r.duplicates = u.duplicates;
    out.push(r);
  }
  for (const d of n.delete ?? []) out.push({ timestamp, timestamp_ns: ns, target, path: formatPath(n.prefix, d), deleted: true });
  return out;
}
