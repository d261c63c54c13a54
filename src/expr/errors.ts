// The one error type of the expression language: syntax, compile and evaluation errors alike, so
// callers (filter, add_field, alert rules) need a single catch. Messages end with the location.

/** Where a node sits in its source; evaluation closures keep one so runtime errors can point at it. */
export interface Site {
  readonly pos: number;
  readonly source: string;
}

export class ExprError extends Error {
  override name = 'ExprError';
  /** 0-based character offset into the expression source, when the error has a place. */
  readonly position?: number;

  constructor(message: string, site?: Site) {
    super(site === undefined ? message : `${message} ${describeLocation(site.source, site.pos)}`);
    if (site !== undefined) this.position = site.pos;
  }
}

/** Throws an ExprError at `site`; typed `never` so call sites read as a statement. */
export function fail(message: string, site?: Site): never {
  throw new ExprError(message, site);
}

/** "at column 12", or "at line 2, column 5" when the expression spans several lines (YAML blocks). */
export function describeLocation(source: string, pos: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < pos && i < source.length; i++) {
    if (source.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  const column = pos - lineStart + 1;
  return source.includes('\n') ? `at line ${line}, column ${column}` : `at column ${column}`;
}

/** A value quoted for a message, cut short so a huge field cannot flood a log line. */
export function quote(v: string, max = 40): string {
  const cut = v.length > max ? `${v.slice(0, max)}...` : v;
  // eslint-disable-next-line no-control-regex -- control characters are what is escaped (\xNN) here
  return `'${cut.replace(/[\\']/g, (c) => `\\${c}`).replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}'`;
}
