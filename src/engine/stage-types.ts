// The shapes of a run's per-stage figures (issue 29), in a module of types only, with no imports,
// so that the UI (ui/src/api/types.ts) shares them with the API instead of keeping a copy.

export interface SourceFigures {
  type: string;
  /** Records decoded (and inputs that failed to decode, each counted once). */
  records: number;
  bytes: number;
  parse_errors: number;
}

export interface TransformFigures {
  /** `transforms[1] (filter)`, as in messages and dead-letter reasons. */
  label: string;
  type: string;
  /** Records handed to the transform. */
  in: number;
  /** Records it handed on (more than `in` for transforms that split records). */
  out: number;
  /** Records it failed on (dead-lettered at stage transform). */
  errors: number;
}

export interface SinkFigures {
  label: string;
  type: string;
  /** Records its condition let through (all of them when it has none). */
  matched: number;
  /** Records its own transforms failed on. */
  transform_errors: number;
  /** Records written. */
  written: number;
  /** Records whose write failed for good (dead-lettered, or kept in the unit). */
  failed: number;
  /** Write attempts, and of these the ones that were retries. */
  writes: number;
  retries: number;
  bytes: number;
  /** `open` while the circuit breaker skips the sink. */
  circuit: 'closed' | 'open';
}

export interface DlqFigures {
  label: string;
  type: string;
  /** Envelopes written, by the stage that failed. */
  records: number;
  parse: number;
  transform: number;
  sink: number;
  /** Envelopes that could not be written (their input stays in place). */
  failed: number;
}

export interface StageFigures {
  source: SourceFigures;
  transforms: TransformFigures[];
  sinks: SinkFigures[];
  dlq: DlqFigures | null;
}

/** A stage's figures with its rate (`per_sec`: records/s read, handed on, written, dead-lettered). */
type WithRate<T> = T & { per_sec: number };

/** The pipeline graph's live figures (GET /api/pipelines/{name} `live.stages`, `svc top`). */
export interface LiveStages {
  source: WithRate<SourceFigures>;
  transforms: WithRate<TransformFigures>[];
  sinks: WithRate<SinkFigures>[];
  dlq: WithRate<DlqFigures> | null;
}
