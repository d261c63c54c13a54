// pg-copy-streams ships no type declarations: the part used here (COPY ... FROM STDIN as a
// Submittable for client.query(), a Writable that emits 'finish' once the server has answered).
declare module 'pg-copy-streams' {
  import type { Writable, WritableOptions } from 'node:stream';
  import type { Connection, Submittable } from 'pg';
  export interface CopyFromStream extends Writable, Submittable {
    /** Rows the server reports (COPY n). */
    rowCount: number;
    /** Internals the driver guards (see pg-copy.ts): null once the query has ended. */
    connection: Connection | null;
    flush(callback?: () => void): void;
    _final(callback: (error?: Error | null) => void): void;
  }
  export function from(text: string, options?: WritableOptions): CopyFromStream;
}
