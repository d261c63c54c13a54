// A test peer that speaks the Confluent Schema Registry REST API (the subset serializers use): subjects
// and versions, global ids shared by identical schemas, lookup, basic auth, and the registry's error
// JSON `{error_code, message}` with its codes (40101, 40401, 40402, 40403, 42201). Bound to
// 127.0.0.1 on port 0.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Version {
  id: number;
  version: number;
  schema: string;
  schemaType: string;
}

export interface RegistryPeer {
  url: string;
  /** Every request as `METHOD path`. */
  requests: string[];
  /** Registers directly (test setup); returns the id. */
  add(subject: string, schema: string, schemaType?: string): number;
  close(): Promise<void>;
}

export async function startRegistryPeer(opts: { username?: string; password?: string } = {}): Promise<RegistryPeer> {
  const subjects = new Map<string, Version[]>();
  const ids = new Map<number, { schema: string; schemaType: string }>();
  let nextId = 1;
  const requests: string[] = [];

  const idFor = (schema: string, schemaType: string) => {
    for (const [id, s] of ids) if (s.schema === schema && s.schemaType === schemaType) return id;
    const id = nextId++;
    ids.set(id, { schema, schemaType });
    return id;
  };
  const add = (subject: string, schema: string, schemaType = 'AVRO') => {
    const list = subjects.get(subject) ?? [];
    const existing = list.find((v) => v.schema === schema && v.schemaType === schemaType);
    if (existing) return existing.id;
    const id = idFor(schema, schemaType);
    list.push({ id, version: list.length + 1, schema, schemaType });
    subjects.set(subject, list);
    return id;
  };

  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let s = '';
      req.on('data', (c: Buffer) => (s += c.toString('utf8')));
      req.on('end', () => resolve(s));
    });

  const server: Server = createServer(async (req, res) => {
    const send = (status: number, json: unknown) => {
      res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
      res.end(JSON.stringify(json));
    };
    const error = (status: number, code: number, message: string) => send(status, { error_code: code, message });
    const path = (req.url ?? '').split('?')[0]!;
    requests.push(`${req.method} ${path}`);
    if (opts.username !== undefined) {
      const want = 'Basic ' + Buffer.from(`${opts.username}:${opts.password ?? ''}`).toString('base64');
      if (req.headers.authorization !== want) return error(401, 40101, 'Unauthorized');
    }
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    const typeOf = (v: { schemaType: string }) => (v.schemaType === 'AVRO' ? {} : { schemaType: v.schemaType });

    if (req.method === 'GET' && parts[0] === 'schemas' && parts[1] === 'ids' && parts.length === 3) {
      const s = ids.get(Number(parts[2]));
      return s ? send(200, { schema: s.schema, ...typeOf(s) }) : error(404, 40403, `Schema ${parts[2]} not found`);
    }
    if (parts[0] !== 'subjects') return error(404, 404, 'HTTP 404 Not Found');
    if (req.method === 'GET' && parts.length === 1) return send(200, [...subjects.keys()]);
    const subject = parts[1]!;
    const list = subjects.get(subject);
    if (req.method === 'POST' && parts.length === 3 && parts[2] === 'versions') {
      const b = JSON.parse(await body(req)) as { schema?: string; schemaType?: string };
      if (typeof b.schema !== 'string') return error(422, 42201, 'Invalid schema');
      return send(200, { id: add(subject, b.schema, b.schemaType ?? 'AVRO') });
    }
    if (req.method === 'POST' && parts.length === 2) {
      const b = JSON.parse(await body(req)) as { schema: string; schemaType?: string };
      if (!list) return error(404, 40401, `Subject '${subject}' not found.`);
      const v = list.find((x) => x.schema === b.schema && x.schemaType === (b.schemaType ?? 'AVRO'));
      return v ? send(200, { subject, id: v.id, version: v.version, schema: v.schema, ...typeOf(v) }) : error(404, 40403, 'Schema not found');
    }
    if (req.method === 'GET' && parts[2] === 'versions') {
      if (!list) return error(404, 40401, `Subject '${subject}' not found.`);
      if (parts.length === 3)
        return send(
          200,
          list.map((v) => v.version),
        );
      const v = parts[3] === 'latest' ? list.at(-1) : list.find((x) => x.version === Number(parts[3]));
      if (!v) return error(404, 40402, `Version ${parts[3]} not found.`);
      return send(200, { subject, version: v.version, id: v.id, schema: v.schema, ...typeOf(v) });
    }
    return error(404, 404, 'HTTP 404 Not Found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    add,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
