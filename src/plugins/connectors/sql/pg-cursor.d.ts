// pg-cursor ships no type declarations: the part used here (a Submittable for client.query()).
declare module 'pg-cursor' {
  import type { Connection, CustomTypesConfig, Submittable } from 'pg';
  export default class Cursor<R = Record<string, unknown>> implements Submittable {
    constructor(text: string, values?: unknown[], config?: { rowMode?: 'array'; types?: CustomTypesConfig });
    submit(connection: Connection): void;
    /** Up to `rows` more rows; [] once the result is exhausted. */
    read(rows: number): Promise<R[]>;
    close(): Promise<void>;
  }
}
