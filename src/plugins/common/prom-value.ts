// A Prometheus sample value as a record value, for the sources that read Prometheus' formats
// (prometheus_rw, prometheus_scrape): JSON has no NaN or infinities, so they are the strings
// Prometheus' own text format spells them with.

/** A number; NaN and the infinities as "NaN", "+Inf", "-Inf". */
export function sampleValue(v: number): number | string {
  if (Number.isFinite(v)) return v;
  if (Number.isNaN(v)) return 'NaN';
  return v > 0 ? '+Inf' : '-Inf';
}
