// Aggregated console counters (GET/DELETE /api/stats/): one object per area, numbers only, plus the
// time they were last reset. The simulator, trap tools, walker and MIB catalog increment them.
export function emptyStats() {
  return {
    simulator: { requests: 0, get: 0, getnext: 0, getbulk: 0, set: 0, errors: 0 },
    traps: { received: 0, sent: 0, send_errors: 0, informs_acknowledged: 0, dropped: 0, replays: 0 },
    walker: { walks: 0, oids: 0, errors: 0, last_duration_ms: 0 },
    mibs: { uploads: 0, compiled: 0, failed: 0 },
  };
}
export type StatsAreas = ReturnType<typeof emptyStats>;
export type StatsArea = keyof StatsAreas;

export class ConsoleStats {
  private areas = emptyStats();
  private since = new Date();

  inc<A extends StatsArea>(area: A, field: keyof StatsAreas[A], n = 1) {
    (this.areas[area] as Record<string, number>)[field as string]! += n;
  }

  /** Gauges such as walker.last_duration_ms. */
  set<A extends StatsArea>(area: A, field: keyof StatsAreas[A], value: number) {
    (this.areas[area] as Record<string, number>)[field as string] = value;
  }

  snapshot() {
    return { ...structuredClone(this.areas), since: this.since.toISOString() };
  }

  reset() {
    this.areas = emptyStats();
    this.since = new Date();
  }
}
