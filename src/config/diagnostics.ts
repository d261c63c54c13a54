// Config diagnostics: every problem carries the YAML path, line and column and a stable code from
// one catalog (docs/errors.md is generated from it and a test checks both ways).

export const CODES = {
  CFG_YAML: 'The text is not valid YAML.',
  CFG_YAML_LIMIT:
    'YAML over a reading limit: nested more than 100 levels deep, or with aliases that would expand the document to more than 10 times its size (at least 1 MiB); refused before it is expanded.',
  CFG_VERSION: 'The top-level `version` is missing or is not "1".',
  CFG_REQUIRED: 'A required field is missing.',
  CFG_UNKNOWN_KEY: 'A key that the component does not take (often a typo: the nearest valid key is suggested).',
  CFG_TYPE: 'A value of the wrong type (text where a number is expected, ...).',
  CFG_INVALID_OPTION: 'A value that is not one of the allowed options.',
  CFG_RANGE: 'A number or length outside its allowed range, or a text that does not match its format.',
  CFG_UNKNOWN_PLUGIN: 'A `type` that names no registered source, sink, serializer or transform.',
  CFG_ENV_UNSET: 'A `${VAR}` reference to an environment variable that is not set (use `${VAR:-default}` for optional ones).',
  CFG_ENV_DENIED:
    "A `${VAR}` reference to an environment variable that SVC_CONFIG_ENV_ALLOW does not let pipelines read (by default every variable but svc's own `SVC_*`).",
  CFG_INVALID: 'A cross-field rule of a component or of the pipeline is broken (see the message).',
  CFG_EXPRESSION: 'An expression (filter, condition, add_field) that does not compile.',
  CFG_STATEFUL:
    'A stateful transform used where it cannot keep state (thread_workers > 1 or sink-level transforms, rule 4; a sharded run, for one that cannot keep its state by target).',
  CFG_SCHEDULE: 'A schedule that cannot run: missing interval or cron, a cron that does not parse, or a source mode that does not fit.',
  CFG_SERIALIZER: 'A serializer used in a direction it does not support (an input-only format as serializer_out).',
} as const;

export type DiagnosticCode = keyof typeof CODES;

export interface Diagnostic {
  code: DiagnosticCode;
  /** YAML path in dotted form, e.g. `pipeline.sinks[1].retry_count`. */
  path: string;
  message: string;
  severity: 'error' | 'warning';
  line?: number;
  column?: number;
}

/**
 * With a file: `file:line:col path: message [CODE]`, the form editors and CI logs link to.
 * Without (YAML sent to the API): `path: message (line N) [CODE]`.
 */
export function formatDiagnostic(d: Diagnostic, file?: string): string {
  const sev = d.severity === 'warning' ? 'warning: ' : '';
  const what = `${sev}${d.path ? d.path + ': ' : ''}${d.message}`;
  if (file) return `${d.line ? `${file}:${d.line}:${d.column ?? 1}` : file} ${what} [${d.code}]`;
  return `${what}${d.line ? ` (line ${d.line})` : ''} [${d.code}]`;
}

/**
 * Problems in the order of the file: by line, then column; the ones without a line (about the whole
 * document) first. Stable: problems at one place keep the order they were found in.
 */
export function inLineOrder<T extends Pick<Diagnostic, 'line' | 'column'>>(diagnostics: readonly T[]): T[] {
  return [...diagnostics].sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
}

/** Path segments to the dotted form: ['pipeline','sinks',1,'x'] -> pipeline.sinks[1].x */
export function formatPath(segments: readonly (string | number)[]): string {
  let s = '';
  for (const seg of segments) {
    if (typeof seg === 'number') s += `[${seg}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(seg)) s += s ? `.${seg}` : seg;
    else s += `[${JSON.stringify(seg)}]`;
  }
  return s;
}

export class ConfigInvalidError extends Error {
  override name = 'ConfigInvalidError';
  constructor(
    readonly diagnostics: Diagnostic[],
    readonly file?: string,
  ) {
    super(
      `pipeline configuration is invalid:\n` +
        diagnostics
          .filter((d) => d.severity === 'error')
          .map((d) => '  ' + formatDiagnostic(d, file))
          .join('\n'),
    );
  }
}
