// /api/schemas (spec doc 2 sections 4, 5, 7): listing, reading, uploading and deleting schema files
// under SVC_SCHEMA_DIR, path traversal in every spelling the router lets through, and the reverse
// proxy to a schema registry, checked against a real node:http server that speaks the Confluent
// Schema Registry REST API. Multipart bodies come from undici's FormData and from curl, not from us.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { readSchemaFile, schemaPath } from '../../src/plugins/common/schema-file.js';
import { forward, registryTarget, RegistryUnreachableError } from '../../src/schemas/registry-proxy.js';
import { freePort, testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { expectError, type Res } from './_helpers.js';

const run = promisify(execFile);

const AVSC =
  JSON.stringify(
    {
      type: 'record',
      name: 'Counter',
      namespace: 'pm',
      fields: [
        { name: 'ne', type: 'string' },
        { name: 'value', type: 'long' },
      ],
    },
    null,
    2,
  ) + '\n';
const PROTO = 'syntax = "proto3";\npackage pm;\nmessage Counter {\n  string ne = 1;\n  int64 value = 2;\n}\n';

/** A schema folder with nested files, a hidden file, a symlink inside and one leading outside. */
function schemaTree() {
  const root = tempDir('svc-schemas-');
  const dir = join(root, 'schemas');
  const outside = join(root, 'outside');
  mkdirSync(join(dir, 'vendor', 'nokia'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.json'), '{"secret": true}\n');
  writeFileSync(join(root, 'secret.json'), '{"secret": "sibling"}\n');
  writeFileSync(join(dir, 'counter.avsc'), AVSC);
  writeFileSync(join(dir, 'vendor', 'nokia', 'pm.proto'), PROTO);
  writeFileSync(join(dir, 'vendor', 'types.xsd'), '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>\n');
  writeFileSync(join(dir, 'vendor', 'notes.txt'), 'hand-placed\n');
  writeFileSync(join(dir, '.hidden.json'), '{}');
  symlinkSync(join(dir, 'counter.avsc'), join(dir, 'alias.avsc'));
  symlinkSync(join(outside, 'secret.json'), join(dir, 'escape.json'));
  symlinkSync(outside, join(dir, 'outdir'));
  return { root, dir, outside };
}

/** A request sent byte for byte (fetch would resolve `..` and `%2e%2e` before sending). */
function raw(d: TestDaemon, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Res> {
  const u = new URL(d.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          /* raw text */
        }
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
        resolve({ status: res.statusCode ?? 0, headers: h, body, text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function upload(
  d: TestDaemon,
  name: string,
  content: string | Buffer,
  o: { query?: string; subdir?: string; field?: string; headers?: Record<string, string> } = {},
): Promise<Res> {
  const form = new FormData();
  form.append(o.field ?? 'file', new Blob([content]), name);
  if (o.subdir !== undefined) form.append('subdir', o.subdir);
  const res = await fetch(`${d.url}/api/schemas/upload${o.query ?? ''}`, { method: 'POST', body: form, headers: o.headers ?? {} });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* raw text */
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** Every name in a folder tree, hidden ones included (to see leftovers of atomic writes). */
function allNames(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: false }) as string[];
}

describe('GET /api/schemas', () => {
  it('lists every file recursively, sorted, with path, type, size_bytes, schema_file, modified; hidden files and escaping links left out', async () => {
    const t = schemaTree();
    const d = await testDaemon({ SVC_SCHEMA_DIR: t.dir });
    const r = await d.call('GET', '/api/schemas');
    expect(r.status).toBe(200);
    expect(r.body.map((f: { path: string }) => f.path)).toEqual([
      'alias.avsc',
      'counter.avsc',
      'vendor/nokia/pm.proto',
      'vendor/notes.txt',
      'vendor/types.xsd',
    ]);
    const byPath = Object.fromEntries(r.body.map((f: { path: string }) => [f.path, f]));
    expect(byPath['counter.avsc']).toEqual({
      path: 'counter.avsc',
      type: 'avro',
      size_bytes: Buffer.byteLength(AVSC),
      schema_file: join(t.dir, 'counter.avsc'),
      modified: statSync(join(t.dir, 'counter.avsc')).mtime.toISOString(),
    });
    expect(byPath['vendor/nokia/pm.proto']).toMatchObject({
      type: 'protobuf',
      size_bytes: Buffer.byteLength(PROTO),
      schema_file: join(t.dir, 'vendor', 'nokia', 'pm.proto'),
    });
    expect(byPath['vendor/types.xsd'].type).toBe('xml');
    expect(byPath['vendor/notes.txt'].type).toBe('other');
  });

  it('an absent schema folder lists as []', async () => {
    const d = await testDaemon({ SVC_SCHEMA_DIR: join(tempDir(), 'not-yet') });
    const r = await d.call('GET', '/api/schemas');
    expect(r.status).toBe(200);
    expect(r.body).toEqual([]);
  });
});

describe('GET and DELETE /api/schemas/{filepath}', () => {
  it('GET returns the raw bytes as text; nested paths work; 404 {detail} for a missing file or a folder', async () => {
    const t = schemaTree();
    const d = await testDaemon({ SVC_SCHEMA_DIR: t.dir });
    const a = await d.call('GET', '/api/schemas/counter.avsc');
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(a.text).toBe(AVSC);
    const p = await d.call('GET', '/api/schemas/vendor/nokia/pm.proto');
    expect(p.text).toBe(PROTO);
    expect((await d.call('GET', '/api/schemas/alias.avsc')).text).toBe(AVSC);
    expect(expectError(await d.call('GET', '/api/schemas/missing.avsc'), 404)).toContain('missing.avsc');
    expectError(await d.call('GET', '/api/schemas/vendor'), 404);
    expectError(await d.call('GET', '/api/schemas/vendor/nokia/nope.proto'), 404);
  });

  it('DELETE answers 204 and removes the file; again 404', async () => {
    const t = schemaTree();
    const d = await testDaemon({ SVC_SCHEMA_DIR: t.dir });
    const r = await d.call('DELETE', '/api/schemas/vendor/nokia/pm.proto');
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expect(existsSync(join(t.dir, 'vendor', 'nokia', 'pm.proto'))).toBe(false);
    expectError(await d.call('DELETE', '/api/schemas/vendor/nokia/pm.proto'), 404);
    expectError(await d.call('GET', '/api/schemas/vendor/nokia/pm.proto'), 404);
    expect((await d.call('GET', '/api/schemas')).body.map((f: { path: string }) => f.path)).not.toContain('vendor/nokia/pm.proto');
  });

  const TRAVERSALS = [
    '/api/schemas/../secret.json',
    '/api/schemas/vendor/../../secret.json',
    '/api/schemas/%2e%2e/secret.json',
    '/api/schemas/%2E%2E/secret.json',
    '/api/schemas/vendor/%2e%2e/%2e%2e/secret.json',
    '/api/schemas/..%2fsecret.json',
    '/api/schemas/%2e%2e%2fsecret.json',
    '/api/schemas/..%5csecret.json',
    '/api/schemas/vendor\\..\\..\\secret.json',
    '/api/schemas/vendor%5c..%5c..%5csecret.json',
    '/api/schemas/%2fetc%2fpasswd',
    '/api/schemas//etc/passwd',
    '/api/schemas/escape.json',
    '/api/schemas/outdir/secret.json',
  ];

  it.each(['GET', 'DELETE'])(
    '%s: traversal (dot-dot segments plain and percent-encoded, backslashes, absolute paths, escaping symlinks) is 400 {detail}; nothing outside is touched',
    async (method) => {
      const t = schemaTree();
      const d = await testDaemon({ SVC_SCHEMA_DIR: t.dir });
      for (const path of TRAVERSALS) {
        const r = await raw(d, method, path);
        expect(r.status, `${method} ${path}: ${r.text}`).toBe(400);
        expectError(r, 400);
        expect(r.text).not.toContain('secret": ');
      }
      expect(readFileSync(join(t.root, 'secret.json'), 'utf8')).toContain('sibling');
      expect(readFileSync(join(t.outside, 'secret.json'), 'utf8')).toContain('secret');
      expect(existsSync(join(t.dir, 'escape.json'))).toBe(true);
      // Encoded once more, the dots are a plain name: looked up inside the folder, not found.
      expectError(await raw(d, method, '/api/schemas/%252e%252e/secret.json'), 404);
    },
  );
});

describe('POST /api/schemas/upload', () => {
  it('201 with path, type, size_bytes, schema_file, replaced and schema_dir; the bytes land in the folder; listed afterwards', async () => {
    const dir = join(tempDir(), 'schemas'); // created by the first upload
    const d = await testDaemon({ SVC_SCHEMA_DIR: dir });
    const r = await upload(d, 'counter.avsc', AVSC);
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({
      path: 'counter.avsc',
      type: 'avro',
      size_bytes: Buffer.byteLength(AVSC),
      schema_file: join(dir, 'counter.avsc'),
      modified: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      replaced: false,
      schema_dir: dir,
    });
    expect(readFileSync(join(dir, 'counter.avsc'), 'utf8')).toBe(AVSC);
    const list = await d.call('GET', '/api/schemas');
    expect(list.body).toEqual([
      { path: 'counter.avsc', type: 'avro', size_bytes: Buffer.byteLength(AVSC), schema_file: join(dir, 'counter.avsc'), modified: r.body.modified },
    ]);
    // Replacing keeps one file, new content, and leaves no temporary file behind.
    const again = await upload(d, 'counter.avsc', PROTO);
    expect(again.status).toBe(201);
    expect(again.body.replaced).toBe(true);
    expect(readFileSync(join(dir, 'counter.avsc'), 'utf8')).toBe(PROTO);
    expect(allNames(dir)).toEqual(['counter.avsc']);
    // A folder of that name is not replaced.
    mkdirSync(join(dir, 'taken.json'));
    expectError(await upload(d, 'taken.json', '{}'), 409);
  });

  it('subdir as a query parameter (spec) or a form field places the file in nested folders', async () => {
    const dir = tempDir('svc-schemas-');
    const d = await testDaemon({ SVC_SCHEMA_DIR: dir });
    const q = await upload(d, 'pm.proto', PROTO, { query: '?subdir=vendor/nokia' });
    expect(q.status, q.text).toBe(201);
    expect(q.body).toMatchObject({ path: 'vendor/nokia/pm.proto', type: 'protobuf', schema_file: join(dir, 'vendor', 'nokia', 'pm.proto'), schema_dir: dir });
    const f = await upload(d, 'types.xsd', '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>', { subdir: 'vendor/ericsson/' });
    expect(f.status, f.text).toBe(201);
    expect(f.body.path).toBe('vendor/ericsson/types.xsd');
    expect(f.body.type).toBe('xml');
    expect(readFileSync(join(dir, 'vendor', 'ericsson', 'types.xsd'), 'utf8')).toContain('xs:schema');
    const both = await upload(d, 'x.json', '{}', { query: '?subdir=a', subdir: 'a' });
    expect(both.body.path).toBe('a/x.json');
    expectError(await upload(d, 'x.json', '{}', { query: '?subdir=a', subdir: 'b' }), 400);
    const list = (await d.call('GET', '/api/schemas')).body.map((x: { path: string }) => x.path);
    expect(list).toEqual(['a/x.json', 'vendor/ericsson/types.xsd', 'vendor/nokia/pm.proto']);
  });

  it('an independent client (curl -F) uploads too', async () => {
    const dir = tempDir('svc-schemas-');
    const d = await testDaemon({ SVC_SCHEMA_DIR: dir });
    const src = join(tempDir(), 'events.yaml');
    writeFileSync(src, 'type: object\nproperties:\n  ne: {type: string}\n');
    const { stdout } = await run('curl', ['-sS', '-F', `file=@${src}`, '-F', 'subdir=yaml', '-w', '\n%{http_code}', `${d.url}/api/schemas/upload`]);
    const [body, code] = stdout.split('\n');
    expect(code).toBe('201');
    expect(JSON.parse(body!)).toMatchObject({ path: 'yaml/events.yaml', type: 'yaml', size_bytes: statSync(src).size });
    expect(readFileSync(join(dir, 'yaml', 'events.yaml'), 'utf8')).toBe(readFileSync(src, 'utf8'));
  });

  it.each(['.proto', '.avsc', '.json', '.xsd', '.yaml', '.yml', '.asn', '.asn1', '.JSON'])('accepts %s', async (ext) => {
    const d = await testDaemon({ SVC_SCHEMA_DIR: tempDir('svc-schemas-') });
    expect((await upload(d, `s${ext}`, 'x')).status).toBe(201);
  });

  it('other extensions, odd names, a missing file field, extra files and bad subdirs are 400 {detail}; nothing is written', async () => {
    const root = tempDir('svc-schemas-');
    const dir = join(root, 'schemas');
    mkdirSync(dir);
    const d = await testDaemon({ SVC_SCHEMA_DIR: dir });
    for (const name of ['run.sh', 'data.avro', 'schema', 'pm.proto.exe', '.hidden.json']) {
      const detail = expectError(await upload(d, name, 'x'), 400);
      if (!name.startsWith('.')) expect(detail).toMatch(/accepted: \.proto, \.avsc, \.json, \.xsd, \.yaml, \.yml/);
    }
    expect(expectError(await upload(d, 'a.json', '{}', { field: 'schema' }), 400)).toContain('"file"');
    for (const sub of ['../up', 'a/../../up', '/abs', 'a\\..\\..\\up', 'registry', 'registry/x']) {
      expectError(await upload(d, 'a.json', '{}', { query: `?subdir=${encodeURIComponent(sub)}` }), 400);
      expectError(await upload(d, 'a.json', '{}', { subdir: sub }), 400);
    }
    // No file part at all, and two files.
    const empty = new FormData();
    empty.append('subdir', 'x');
    expectError(await fetchRes(`${d.url}/api/schemas/upload`, { method: 'POST', body: empty }), 400);
    const two = new FormData();
    two.append('file', new Blob(['{}']), 'a.json');
    two.append('file', new Blob(['{}']), 'b.json');
    expectError(await fetchRes(`${d.url}/api/schemas/upload`, { method: 'POST', body: two }), 400);
    expect(allNames(dir)).toEqual([]);
    expect(readdirSync(root)).toEqual(['schemas']);
  });

  it('a JSON body instead of multipart is 415 {detail}', async () => {
    const d = await testDaemon({ SVC_SCHEMA_DIR: tempDir('svc-schemas-') });
    expect(expectError(await d.call('POST', '/api/schemas/upload', { body: { file: 'x' } }), 415)).toMatch(/multipart/);
  });

  it(`a file over the limit (10 MiB) is 413 {detail}; exactly the limit is accepted`, async () => {
    const dir = tempDir('svc-schemas-');
    const d = await testDaemon({ SVC_SCHEMA_DIR: dir });
    const limit = 10 * 1024 * 1024;
    expect(expectError(await upload(d, 'big.json', Buffer.alloc(limit + 1, 0x20)), 413)).toContain(String(limit));
    expect(existsSync(join(dir, 'big.json'))).toBe(false);
    expect(allNames(dir)).toEqual([]);
    const ok = await upload(d, 'big.json', Buffer.alloc(limit, 0x20));
    expect(ok.status).toBe(201);
    expect(ok.body.size_bytes).toBe(limit);
  });

  it("the returned schema_file (absolute) and path (relative to SVC_SCHEMA_DIR) both resolve with the serializers' schemaPath()", async () => {
    const dir = tempDir('svc-schemas-');
    const d = await testDaemon({ SVC_SCHEMA_DIR: dir });
    const r = await upload(d, 'pm.proto', PROTO, { query: '?subdir=vendor' });
    expect(r.status).toBe(201);
    expect(schemaPath(r.body.schema_file, undefined)).toBe(r.body.schema_file);
    expect(readSchemaFile(r.body.schema_file, undefined)).toBe(PROTO);
    expect(schemaPath(r.body.path, r.body.schema_dir)).toBe(r.body.schema_file);
    expect(readSchemaFile(r.body.path, dir)).toBe(PROTO);
  });
});

describe('API key', () => {
  it('every /api/schemas route needs X-API-Key when SVC_API_KEY is set', async () => {
    const t = schemaTree();
    const d = await testDaemon({ SVC_SCHEMA_DIR: t.dir, SVC_API_KEY: 'k3y' });
    expectError(await d.call('GET', '/api/schemas'), 401);
    expectError(await d.call('GET', '/api/schemas/counter.avsc'), 401);
    expectError(await d.call('DELETE', '/api/schemas/counter.avsc'), 401);
    expectError(await upload(d, 'a.json', '{}'), 401);
    expectError(await d.call('GET', '/api/schemas/registry/subjects'), 401);
    expectError(await raw(d, 'GET', '/api/schemas/../../etc/passwd'), 401);
    expect(existsSync(join(t.dir, 'counter.avsc'))).toBe(true);
    expect((await d.call('GET', '/api/schemas', { headers: { 'x-api-key': 'k3y' } })).status).toBe(200);
    expect((await upload(d, 'a.json', '{}', { headers: { 'x-api-key': 'k3y' } })).status).toBe(201);
  });

  it('the schema endpoints are in the OpenAPI document', async () => {
    const d = await testDaemon();
    const paths = Object.keys((await d.call('GET', '/openapi.json')).body.paths);
    expect(paths).toEqual(expect.arrayContaining(['/api/schemas', '/api/schemas/upload', '/api/schemas/{*}', '/api/schemas/registry/{*}']));
  });
});

async function fetchRes(url: string, init: RequestInit): Promise<Res> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* raw text */
  }
  return { status: res.status, headers: res.headers, body, text };
}

// ---------------------------------------------------------------------------------------------
// Schema registry proxy

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/**
 * A small Confluent Schema Registry: subjects, versions, config; basic auth checked when `auth` is
 * given (401 {error_code, message} otherwise, as the real one answers). `prefix` is a base path.
 */
async function fakeRegistry(o: { auth?: [string, string]; prefix?: string } = {}) {
  const seen: Seen[] = [];
  const subjects = new Map<string, string[]>([['orders-value', ['{"type":"string"}']]]);
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const send = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
        res.end(JSON.stringify(value));
      };
      if (o.auth) {
        const [scheme, cred] = (req.headers.authorization ?? '').split(' ');
        const [user, pass] = Buffer.from(cred ?? '', 'base64')
          .toString()
          .split(':');
        if (scheme !== 'Basic' || user !== o.auth[0] || pass !== o.auth[1]) return send(401, { error_code: 401, message: 'Unauthorized' });
      }
      const u = new URL(req.url!, 'http://x');
      let path = u.pathname;
      if (o.prefix) {
        if (!path.startsWith(o.prefix)) return send(404, { error_code: 404, message: 'HTTP 404 Not Found' });
        path = path.slice(o.prefix.length);
      }
      const m = /^\/subjects\/([^/]+)\/versions$/.exec(path);
      if (req.method === 'GET' && path === '/subjects') return send(200, [...subjects.keys()]);
      if (m && req.method === 'POST') {
        const subject = decodeURIComponent(m[1]!);
        const schema = (JSON.parse(body) as { schema: string }).schema;
        const list = subjects.get(subject) ?? [];
        list.push(schema);
        subjects.set(subject, list);
        return send(200, { id: 100 + list.length });
      }
      if (m && req.method === 'GET') {
        const list = subjects.get(decodeURIComponent(m[1]!));
        if (!list) return send(404, { error_code: 40401, message: `Subject '${decodeURIComponent(m[1]!)}' not found.` });
        return send(200, { versions: list.map((_, i) => i + 1), deleted: u.searchParams.get('deleted') });
      }
      const s = /^\/subjects\/([^/]+)$/.exec(path);
      if (s && req.method === 'DELETE') {
        const list = subjects.get(decodeURIComponent(s[1]!)) ?? [];
        subjects.delete(decodeURIComponent(s[1]!));
        return send(
          200,
          list.map((_, i) => i + 1),
        );
      }
      if (path.startsWith('/config/') && (req.method === 'PUT' || req.method === 'PATCH')) return send(200, JSON.parse(body));
      if (req.method === 'DELETE' && path === '/nothing') {
        res.writeHead(204);
        return res.end();
      }
      return send(404, { error_code: 404, message: 'HTTP 404 Not Found' });
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${o.prefix ?? ''}`;
  return { url, seen, subjects };
}

const REG_JSON = 'application/vnd.schemaregistry.v1+json';

describe('/api/schemas/registry/{path}', () => {
  it('forwards GET, POST (body), PUT, PATCH, DELETE with query and basic auth; relays status, content type and body', async () => {
    const reg = await fakeRegistry({ auth: ['reg-user', 'reg-pass'] });
    const d = await testDaemon({ SVC_SCHEMA_REGISTRY_URL: reg.url, SVC_SCHEMA_REGISTRY_USERNAME: 'reg-user', SVC_SCHEMA_REGISTRY_PASSWORD: 'reg-pass' });

    const list = await d.call('GET', '/api/schemas/registry/subjects');
    expect(list.status).toBe(200);
    expect(list.headers.get('content-type')).toBe(REG_JSON);
    expect(list.body).toEqual(['orders-value']);

    const schema = JSON.stringify({ type: 'record', name: 'Counter', fields: [{ name: 'value', type: 'long' }] });
    const reg1 = await d.call('POST', '/api/schemas/registry/subjects/pm-value/versions', {
      body: JSON.stringify({ schema }),
      headers: { 'content-type': REG_JSON },
    });
    expect(reg1.status).toBe(200);
    expect(reg1.body).toEqual({ id: 101 });
    const post = reg.seen.at(-1)!;
    expect(post).toMatchObject({ method: 'POST', url: '/subjects/pm-value/versions' });
    expect(JSON.parse(post.body)).toEqual({ schema });
    expect(post.headers['content-type']).toBe(REG_JSON);
    expect(reg.subjects.get('pm-value')).toEqual([schema]);

    const versions = await d.call('GET', '/api/schemas/registry/subjects/pm-value/versions?deleted=true');
    expect(versions.body).toEqual({ versions: [1], deleted: 'true' });
    expect(reg.seen.at(-1)!.url).toBe('/subjects/pm-value/versions?deleted=true');

    const put = await d.call('PUT', '/api/schemas/registry/config/pm-value', { body: { compatibility: 'BACKWARD' } });
    expect(put.body).toEqual({ compatibility: 'BACKWARD' });
    const patch = await d.call('PATCH', '/api/schemas/registry/config/pm-value', { body: { compatibility: 'FULL' } });
    expect(patch.body).toEqual({ compatibility: 'FULL' });

    // Upstream errors are relayed as they are (status and the registry's own body).
    const missing = await d.call('GET', '/api/schemas/registry/subjects/nope/versions');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error_code: 40401, message: "Subject 'nope' not found." });

    const del = await d.call('DELETE', '/api/schemas/registry/subjects/pm-value');
    expect(del.status).toBe(200);
    expect(del.body).toEqual([1]);
    const none = await d.call('DELETE', '/api/schemas/registry/nothing');
    expect(none.status).toBe(204);
    expect(none.text).toBe('');

    // A body without any content type is forwarded as it is, without one.
    const bareBody = JSON.stringify({ schema: '"int"' });
    const bare = await raw(d, 'POST', '/api/schemas/registry/subjects/bare/versions', { 'content-length': String(Buffer.byteLength(bareBody)) }, bareBody);
    expect(bare.status, bare.text).toBe(200);
    expect(reg.seen.at(-1)!.headers['content-type']).toBeUndefined();
    expect(reg.subjects.get('bare')).toEqual(['"int"']);

    for (const s of reg.seen) expect(s.headers.authorization).toBe(`Basic ${Buffer.from('reg-user:reg-pass').toString('base64')}`);
  });

  it('keeps percent-encoding (subject names with %2F) and joins a base URL that has a path', async () => {
    const reg = await fakeRegistry({ prefix: '/sr' });
    const d = await testDaemon({ SVC_SCHEMA_REGISTRY_URL: `${reg.url}/` });
    const r = await d.call('POST', '/api/schemas/registry/subjects/team%2Fpm/versions', { body: { schema: '"string"' } });
    expect(r.status, r.text).toBe(200);
    expect(reg.seen.at(-1)!.url).toBe('/sr/subjects/team%2Fpm/versions');
    expect(reg.subjects.has('team/pm')).toBe(true);
    expect((await d.call('GET', '/api/schemas/registry/subjects')).body).toEqual(['orders-value', 'team/pm']);
    // Climbing out of the base path is refused before anything is sent.
    const before = reg.seen.length;
    for (const p of ['/api/schemas/registry/../subjects', '/api/schemas/registry/%2e%2e/subjects', '/api/schemas/registry/a/%2E%2E/%2e%2e/x']) {
      expectError(await raw(d, 'GET', p), 400);
    }
    // A body over the limit (10 MiB) is 413 {detail}, not forwarded.
    const big = await d.call('POST', '/api/schemas/registry/subjects/big/versions', { body: JSON.stringify({ schema: 'x'.repeat(10 * 1024 * 1024) }) });
    expect(expectError(big, 413)).toContain('10485760');
    expect(reg.seen.length).toBe(before);
  });

  it("forwards the client's headers but not X-API-Key nor an svc session token; credentials in the URL become basic auth", async () => {
    const reg = await fakeRegistry({ auth: ['u', 'p w'] });
    const d = await testDaemon({ SVC_SCHEMA_REGISTRY_URL: reg.url.replace('http://', 'http://u:p%20w@'), SVC_API_KEY: 'k3y', SVC_AUTH_USERS: 'ops:pa55' });
    const r = await d.call('GET', '/api/schemas/registry/subjects', { headers: { 'x-api-key': 'k3y', 'x-request-id': 'abc', accept: REG_JSON } });
    expect(r.status, r.text).toBe(200);
    const s = reg.seen.at(-1)!;
    expect(s.headers['x-api-key']).toBeUndefined();
    expect(s.headers['x-request-id']).toBe('abc');
    expect(s.headers.accept).toBe(REG_JSON);
    expect(s.headers.authorization).toBe(`Basic ${Buffer.from('u:p w').toString('base64')}`);

    // Without registry credentials the client's own Authorization goes through, a session token does not.
    const open = await fakeRegistry();
    const d2 = await testDaemon({ SVC_SCHEMA_REGISTRY_URL: open.url, SVC_API_KEY: 'k3y', SVC_AUTH_USERS: 'ops:pa55' });
    await d2.call('GET', '/api/schemas/registry/subjects', { headers: { 'x-api-key': 'k3y', authorization: 'Basic Y2xpZW50OnNlY3JldA==' } });
    expect(open.seen.at(-1)!.headers.authorization).toBe('Basic Y2xpZW50OnNlY3JldA==');
    const login = await d2.call('POST', '/api/auth/login', { body: { username: 'ops', password: 'pa55' } });
    const viaToken = await d2.call('GET', '/api/schemas/registry/subjects', { headers: { authorization: `Bearer ${login.body.token}` } });
    expect(viaToken.status).toBe(200);
    expect(open.seen.at(-1)!.headers.authorization).toBeUndefined();
  });

  it('503 {detail} when SVC_SCHEMA_REGISTRY_URL is unset or not an http URL', async () => {
    const d = await testDaemon({ SVC_SCHEMA_REGISTRY_URL: '' });
    expect(expectError(await d.call('GET', '/api/schemas/registry/subjects'), 503)).toContain('SVC_SCHEMA_REGISTRY_URL');
    expectError(await d.call('POST', '/api/schemas/registry/subjects/x/versions', { body: { schema: '"string"' } }), 503);
    const bad = await testDaemon({ SVC_SCHEMA_REGISTRY_URL: 'ftp://registry' });
    expectError(await bad.call('GET', '/api/schemas/registry/subjects'), 503);
  });

  it('502 {detail} when the registry is unreachable (closed port)', async () => {
    const port = await freePort();
    const d = await testDaemon({ SVC_SCHEMA_REGISTRY_URL: `http://127.0.0.1:${port}` });
    expect(expectError(await d.call('GET', '/api/schemas/registry/subjects'), 502)).toMatch(/unreachable.*ECONNREFUSED/);
    expectError(await d.call('POST', '/api/schemas/registry/subjects/x/versions', { body: { schema: '"string"' } }), 502);
  });

  it('a registry that accepts but never answers counts as unreachable after the timeout', async () => {
    const hung = createServer(() => {
      /* never answers */
    });
    servers.push(hung);
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    const target = registryTarget(`http://127.0.0.1:${(hung.address() as AddressInfo).port}`)!;
    const started = Date.now();
    const err = await forward(target, { method: 'GET', url: `${target.base}/subjects`, headers: {} }, 300).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RegistryUnreachableError);
    expect((err as Error).message).toContain('no answer within 0.3 seconds');
    expect(Date.now() - started).toBeLessThan(5000);
    hung.closeAllConnections();
  });
});
