// Pass or fail. Flat: RSS and open descriptors grow less than 5 % from the reference point (10
// minutes into the load, or a third of the run when it is shorter than 20 minutes) to the end of
// the load. Each side is one minute of samples (the minute centred on the reference point, the
// last minute of the load): RSS takes its median, since the heap's GC sawtooth moves it by 10-20 %
// between two samples. Descriptors are the daemon's own (Sample.fds_own: less the connections the
// soak's HTTP clients keep open to it, whose number their keep-alive pools choose) and compare the
// least count of each minute, which may also gain FD_ALLOWANCE: what the daemon opens for a moment
// (the SNMP poll's UDP sockets, a spool file) lifts only the samples that catch it, while a leak
// raises every sample of the last minute. Lossless: every sequence number sent is at
// its sink. Event loop: the p99 of every sampling window (prom-client's histogram since the
// previous scrape) under 50 ms.
//
// A short run (under 20 minutes: CI's three) cannot see RSS settle: V8 grows the heap it reserves
// for the first minutes while the heap in use stays put. So a short run judges memory by the heap
// used after GC (the least of each window, within SHORT_RUN_MAX_GROWTH: a gross leak) and shows RSS
// beside it; and it judges the event loop by
// the delay the daemon adds over the soak process's own (an idle control on the same cores), since
// other work on a shared machine delays both alike. The hour-long run keeps the strict rules.
import type { Sample } from './sample.js';
import type { StreamCount } from './verify.js';

export const MAX_GROWTH = 0.05;
/** Runs shorter than this take the short-run rules above. */
export const SHORT_RUN_MINUTES = 20;
/**
 * A short run's limit on the growth of heap used after GC. Two minutes cannot tell a slow leak from
 * caches warming up (a CI run saw +7.9 % while RSS stayed flat), so it catches gross ones: a daemon
 * keeping every record would grow by far more (3 minutes carry about 200,000 records).
 */
export const SHORT_RUN_MAX_GROWTH = 0.25;
export const MAX_P99_MS = 50;
/**
 * Descriptors a run may gain and still be flat: at about 40 open, 5 % is 2 (a CI run failed on
 * 38 -> 40 by median). A leak keeps growing, past this within minutes.
 */
export const FD_ALLOWANCE = 2;
/** Seconds of samples summed up (median or least) at each end of the comparison. */
const WINDOW_S = 60;

const median = (xs: number[]) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : NaN;
};

/** Seconds into the load where flatness is measured from. */
export const referenceSeconds = (minutes: number) => (minutes < SHORT_RUN_MINUTES ? (minutes * 60) / 3 : 600);

export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

interface Flatness {
  pick: (s: Sample) => number;
  what: string;
  unit: string;
  /** How each minute is summed up: its median (RSS), or its least value (heap right after a GC, descriptors at rest). */
  level?: 'median' | 'least';
  /** Growth allowed, as a fraction (MAX_GROWTH unless given). */
  limit?: number;
  /** Growth allowed in units whatever the fraction (FD_ALLOWANCE for descriptors). */
  allowance?: number;
  /**
   * A figure shown beside the verdict, the least of each minute, in the same unit: the heap after its
   * GCs beside RSS (RSS that grew while it stayed put is V8 keeping a larger heap reserved), RSS
   * beside that heap, all descriptors beside the daemon's own.
   */
  beside?: { what: string; pick: (s: Sample) => number };
}

function growth(load: Sample[], refT: number, f: Flatness): Check {
  const { pick, what, unit, beside, level = 'median', limit = MAX_GROWTH, allowance = 0 } = f;
  const endT = load.at(-1)?.t ?? 0;
  const ref = load.filter((s) => Math.abs(s.t - refT) <= WINDOW_S / 2);
  const end = load.filter((s) => s.t > endT - WINDOW_S);
  const name = `${what} flat`;
  if (ref.length < 2 || end.length < 2 || endT - refT < WINDOW_S)
    return { name, pass: false, detail: `not enough samples to compare ${refT} s with the end (${endT} s)` };
  const least = (xs: Sample[], by: (s: Sample) => number) => Math.min(...xs.map(by));
  const sum = (xs: Sample[]) => (level === 'least' ? least(xs, pick) : median(xs.map(pick)));
  const [a, b] = [sum(ref), sum(end)];
  const g = b / a - 1;
  const also = beside ? `; ${beside.what} ${least(ref, beside.pick).toFixed(1)} -> ${least(end, beside.pick).toFixed(1)} ${unit}` : '';
  const or = allowance ? ` or ${allowance} ${unit}` : '';
  return {
    name,
    pass: g < limit || b - a <= allowance,
    detail: `${a.toFixed(1)} ${unit} around ${refT} s -> ${b.toFixed(1)} ${unit} in the last minute (${g >= 0 ? '+' : ''}${(g * 100).toFixed(1)} %, limit ${limit * 100} %${or})${also}`,
  };
}

/** Which kinds of descriptor (Sample.fd_kinds) differ between the sample nearest `refT` and the last one, e.g. `tcp to :5432 +2, pipe: -1`. */
export function kindsChanged(load: Sample[], refT: number): string {
  const last = load.at(-1);
  const ref = load.reduce<Sample | undefined>((n, s) => (!n || Math.abs(s.t - refT) < Math.abs(n.t - refT) ? s : n), undefined);
  if (!ref?.fd_kinds || !last?.fd_kinds) return '';
  const names = new Set([...Object.keys(ref.fd_kinds), ...Object.keys(last.fd_kinds)]);
  const diff = [...names].map((k) => [k, (last.fd_kinds[k] ?? 0) - (ref.fd_kinds[k] ?? 0)] as const).filter(([, d]) => d !== 0);
  return diff.map(([k, d]) => `${k} ${d > 0 ? '+' : ''}${d}`).join(', ');
}

export function verdict(samples: Sample[], minutes: number, counts: Record<string, StreamCount>): Check[] {
  const load = samples.filter((s) => s.phase === 'load');
  const refT = referenceSeconds(minutes);
  const short = minutes < SHORT_RUN_MINUTES;
  const memory = short
    ? growth(load, refT, {
        pick: (s) => s.heap_used_mb,
        what: 'heap used after GC (short run)',
        unit: 'MB',
        beside: { what: 'RSS', pick: (s) => s.proc_rss_mb },
        level: 'least',
        limit: SHORT_RUN_MAX_GROWTH,
      })
    : growth(load, refT, { pick: (s) => s.proc_rss_mb, what: 'RSS', unit: 'MB', beside: { what: 'least heap used', pick: (s) => s.heap_used_mb } });
  const fds = growth(load, refT, {
    pick: (s) => s.fds_own,
    what: 'open descriptors',
    unit: 'fds',
    level: 'least',
    allowance: FD_ALLOWANCE,
    beside: { what: "with the clients' connections", pick: (s) => s.fds },
  });
  const kinds = kindsChanged(load, refT);
  if (kinds) fds.detail += `; by kind, from ${refT} s to the end: ${kinds}`;
  const checks = [memory, fds];
  for (const [stream, c] of Object.entries(counts)) {
    checks.push({
      name: `${stream}: no record lost`,
      pass: c.sent > 0 && c.missing === 0,
      detail: `${c.sent} sent, ${c.received} received, ${c.missing} missing, ${c.duplicates} duplicates${c.firstMissing.length ? ` (first missing: ${c.firstMissing.join(', ')})` : ''}`,
    });
  }
  const over = load.filter((s) => s.eventloop_p99_ms >= MAX_P99_MS);
  const controls = over.map((s) => s.control_p99_ms);
  const busy = over.length
    ? `; ${over.length} of ${load.length} windows over the limit, while the soak process's own p99 was ${Math.min(...controls)}-${Math.max(...controls)} ms`
    : '';
  const worst = load.reduce((w, s) => (s.eventloop_p99_ms > w.eventloop_p99_ms ? s : w), load[0] ?? ({ eventloop_p99_ms: NaN, t: 0 } as Sample));
  if (short) {
    const added = (s: Sample) => s.eventloop_p99_ms - s.control_p99_ms;
    const most = load.reduce((w, s) => (added(s) > added(w) ? s : w), load[0] ?? worst);
    checks.push({
      name: 'event-loop delay p99 over the idle control (short run)',
      pass: added(most) < MAX_P99_MS,
      detail: `most added ${added(most).toFixed(1)} ms at ${most.t} s (daemon ${most.eventloop_p99_ms} ms, control ${most.control_p99_ms} ms; limit ${MAX_P99_MS} ms); worst daemon window ${worst.eventloop_p99_ms} ms${busy}`,
    });
    return checks;
  }
  checks.push({
    name: 'event-loop delay p99',
    pass: worst.eventloop_p99_ms < MAX_P99_MS,
    detail: `worst window ${worst.eventloop_p99_ms} ms at ${worst.t} s (limit ${MAX_P99_MS} ms; the soak process's own p99 then: ${worst.control_p99_ms} ms, load average ${worst.loadavg?.toFixed(1)}), median window ${median(load.map((s) => s.eventloop_p99_ms))} ms${busy}`,
  });
  return checks;
}
