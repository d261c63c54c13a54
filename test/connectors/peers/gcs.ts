// A test peer for the gcs connector: no Cloud Storage emulator installs here, so this node:http
// server speaks the subset of the Cloud Storage JSON API that @google-cloud/storage uses, and checks
// what Google checks:
// - the OAuth2 token endpoint of a service account (`POST /token`, grant_type jwt-bearer): the
//   assertion's RS256 signature against the account's public key, its issuer, audience, scope and
//   lifetime; a bad one is a 400 `invalid_grant` as Google answers;
// - every storage request carries `Authorization: Bearer <token>` issued here and not expired (401
//   `authError` otherwise), with a scope that allows the operation and a role on the bucket (403);
// - bucket get; object list with prefix, maxResults (capped like Google's 1000) and pageToken;
//   object metadata; media download (`alt=media`, `generation`) with `x-goog-hash` (crc32c, md5);
//   multipart upload (`uploadType=multipart`, a multipart/related body of JSON metadata and media)
//   answered with the stored object's crc32c and md5Hash, computed here independently of the client;
//   delete. Errors have Google's JSON shape.
// Objects live in memory and survive restart() (the server closes every connection and listens
// again on the same port), as objects at Google survive a dropped connection. dropDownload() cuts
// one download's connection after some bytes, for the mid-file cases.
import { createHash, generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { pace } from '../../helpers/wait.js';

/** Google caps a list page at 1000 objects whatever maxResults asks. */
const GOOGLE_MAX_PAGE = 1000;
const TOKEN_LIFETIME_S = 3600;
/** The audiences Google's token endpoint accepts in a service account's assertion. */
const GOOGLE_TOKEN_AUDIENCES = ['https://www.googleapis.com/oauth2/v4/token', 'https://oauth2.googleapis.com/token'];
const READ_SCOPES = ['devstorage.read_only', 'devstorage.read_write', 'devstorage.full_control', 'cloud-platform', 'cloud-platform.read-only'];
const WRITE_SCOPES = ['devstorage.read_write', 'devstorage.full_control', 'cloud-platform'];

export interface StoredObject {
  name: string;
  data: Buffer;
  contentType: string;
  generation: string;
  created: Date;
  updated: Date;
  md5: string;
  crc32c: string;
}

export interface LoggedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  authorization?: string;
  status: number;
}

/** What a service account may do: `admin` reads and writes, `reader` only reads. */
export type Role = 'admin' | 'reader';

// ---- CRC32C (Castagnoli), written here so the peer does not trust the client's own ----------
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

export function crc32c(data: Buffer): string {
  let crc = 0xffffffff;
  for (let i = 0; i < data.length; i++) crc = CRC_TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  const out = Buffer.alloc(4);
  out.writeUInt32BE((crc ^ 0xffffffff) >>> 0);
  return out.toString('base64');
}

const md5 = (data: Buffer) => createHash('md5').update(data).digest('base64');

/** Google's JSON error body. */
function googleError(res: ServerResponse, code: number, message: string, reason: string, extra: Record<string, string> = {}) {
  const body = JSON.stringify({ error: { code, message, errors: [{ message, domain: 'global', reason, ...extra }] } });
  res.writeHead(code, {
    'content-type': 'application/json; charset=UTF-8',
    ...(code === 401 ? { 'www-authenticate': 'Bearer realm="https://accounts.google.com/"' } : {}),
  });
  res.end(body);
}

const readBody = (req: IncomingMessage, onBytes?: (n: number) => void) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      onBytes?.(c.length);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('aborted', () => reject(new Error('client aborted')));
  });

const b64url = (s: string) => Buffer.from(s, 'base64url');

/** The parts of a multipart/related body: headers (lower-cased) and bytes. */
function multipartParts(body: Buffer, boundary: string): { headers: Record<string, string>; data: Buffer }[] | undefined {
  const delim = Buffer.from(`--${boundary}`);
  const parts: { headers: Record<string, string>; data: Buffer }[] = [];
  let pos = body.indexOf(delim);
  if (pos !== 0) return undefined;
  for (;;) {
    pos += delim.length;
    if (body.subarray(pos, pos + 2).toString() === '--') return parts; // closing delimiter
    if (body.subarray(pos, pos + 2).toString() !== '\r\n') return undefined;
    const headEnd = body.indexOf('\r\n\r\n', pos + 2);
    if (headEnd < 0) return undefined;
    const headers: Record<string, string> = {};
    for (const line of body
      .subarray(pos + 2, headEnd)
      .toString('latin1')
      .split('\r\n')) {
      const i = line.indexOf(':');
      if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delim]), headEnd + 4);
    if (next < 0) return undefined;
    parts.push({ headers, data: body.subarray(headEnd + 4, next) });
    pos = next + 2;
  }
}

export class GcsPeer {
  readonly requests: LoggedRequest[] = [];
  /** Page size cap (Google's is 1000); lower it to make listings page. */
  maxPageSize = GOOGLE_MAX_PAGE;
  private readonly buckets = new Map<string, Map<string, StoredObject>>();
  private readonly accounts = new Map<string, { key: KeyObject | string; role: Role }>();
  private readonly tokens = new Map<string, { email: string; scopes: string[]; expires: number }>();
  private readonly sockets = new Set<Socket>();
  private readonly inFlight = new Map<number, number>();
  private uploadSeq = 0;
  private generationSeq = 0;
  private drop?: { name: string; afterBytes: number };
  private server: Server;
  port = 0;

  constructor() {
    this.server = this.makeServer();
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  get tokenUrl() {
    return `${this.url}/token`;
  }

  async listen(port = 0): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Closes every connection (uploads and downloads in flight break), then listens again on the same port. */
  async restart(downMs = 300): Promise<void> {
    const up = await this.down();
    await pace(downMs); // the peer is down this long
    await up();
  }

  /** Stops listening and closes every connection until the returned function listens again on the same port. */
  async down(): Promise<() => Promise<void>> {
    await this.close();
    return async () => {
      this.server = this.makeServer();
      await this.listen(this.port);
    };
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await closed;
  }

  createBucket(name: string) {
    if (!this.buckets.has(name)) this.buckets.set(name, new Map());
  }

  /** Registers a service account by its public key. */
  addAccount(email: string, publicKey: KeyObject | string, role: Role = 'admin') {
    this.accounts.set(email, { key: publicKey, role });
  }

  /** Stores an object as an upload would (a new generation each time). */
  put(bucket: string, name: string, data: Buffer | string, contentType = 'application/octet-stream'): StoredObject {
    const b = this.buckets.get(bucket);
    if (!b) throw new Error(`no bucket ${bucket}`);
    const bytes = Buffer.isBuffer(data) ? data : Buffer.from(data);
    const now = new Date();
    const prev = b.get(name);
    const o: StoredObject = {
      name,
      data: bytes,
      contentType,
      // Google's generations are microsecond timestamps; a counter keeps rewrites in one ms apart.
      generation: String(now.getTime() * 1000 + (++this.generationSeq % 1000)),
      created: prev?.created ?? now,
      updated: now,
      md5: md5(bytes),
      crc32c: crc32c(bytes),
    };
    b.set(name, o);
    return o;
  }

  object(bucket: string, name: string): StoredObject | undefined {
    return this.buckets.get(bucket)?.get(name);
  }

  /** Objects whose name starts with `prefix`, in name order. */
  objects(bucket: string, prefix = ''): StoredObject[] {
    return [...(this.buckets.get(bucket)?.values() ?? [])]
      .filter((o) => o.name.startsWith(prefix))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  remove(bucket: string, name: string) {
    this.buckets.get(bucket)?.delete(name);
  }

  /** Bytes received so far by uploads still in progress. */
  uploadingBytes(): number {
    let n = 0;
    for (const v of this.inFlight.values()) n += v;
    return n;
  }

  /** The next media download of `name` sends `afterBytes` bytes, then its connection is cut. */
  dropDownload(name: string, afterBytes: number) {
    this.drop = { name, afterBytes };
  }

  private makeServer(): Server {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((e: unknown) => {
        if (!res.headersSent) googleError(res, 500, `peer: ${(e as Error).message}`, 'backendError');
        else res.destroy();
      });
    });
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    return server;
  }

  private log(req: IncomingMessage, url: URL, status: number) {
    this.requests.push({ method: req.method ?? '', path: url.pathname, query: url.searchParams, authorization: req.headers.authorization, status });
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', this.url);
    const status = (code: number) => this.log(req, url, code);
    if (url.pathname === '/token') return this.token(req, res, status);

    const m = /^\/(upload\/)?storage\/v1\/b\/([^/]+)(?:\/o(?:\/(.+))?)?$/.exec(url.pathname);
    if (!m) {
      status(404);
      return googleError(res, 404, 'Not Found', 'notFound');
    }
    const upload = m[1] !== undefined;
    const bucketName = decodeURIComponent(m[2]!);
    const objectPath = url.pathname.includes('/o') ? (m[3] === undefined ? '' : decodeURIComponent(m[3])) : undefined;
    const write = upload || req.method === 'DELETE' || (req.method === 'POST' && objectPath === '');

    // Authentication, then authorization: Google answers 401 before looking at the bucket.
    const auth = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    const token = auth ? this.tokens.get(auth[1]!) : undefined;
    if (!token || token.expires < Date.now()) {
      status(401);
      req.resume();
      return googleError(res, 401, 'Invalid Credentials', 'authError', { locationType: 'header', location: 'Authorization' });
    }
    const scopes = write ? WRITE_SCOPES : READ_SCOPES;
    if (!token.scopes.some((s) => scopes.includes(s.replace('https://www.googleapis.com/auth/', '')))) {
      status(403);
      req.resume();
      return googleError(res, 403, 'Insufficient Permission', 'insufficientPermissions');
    }
    const bucket = this.buckets.get(bucketName);
    if (!bucket) {
      status(404);
      req.resume();
      return googleError(res, 404, 'The specified bucket does not exist.', 'notFound');
    }
    if (write && this.accounts.get(token.email)?.role !== 'admin') {
      status(403);
      req.resume();
      return googleError(res, 403, `${token.email} does not have storage.objects.create access to the Google Cloud Storage object.`, 'forbidden');
    }

    if (objectPath === undefined) {
      if (req.method !== 'GET') return this.notAllowed(req, res, status);
      status(200);
      return json(res, 200, {
        kind: 'storage#bucket',
        id: bucketName,
        name: bucketName,
        selfLink: `${this.url}/storage/v1/b/${bucketName}`,
        location: 'US',
        storageClass: 'STANDARD',
        metageneration: '1',
      });
    }
    if (upload) {
      if (req.method !== 'POST' || objectPath !== '') return this.notAllowed(req, res, status);
      return this.upload(req, res, url, bucketName, status);
    }
    if (objectPath === '') {
      if (req.method !== 'GET') return this.notAllowed(req, res, status);
      return this.list(res, url, bucketName, status);
    }
    const obj = bucket.get(objectPath);
    const generation = url.searchParams.get('generation');
    if (!obj || (generation !== null && generation !== obj.generation)) {
      status(404);
      req.resume();
      return googleError(res, 404, `No such object: ${bucketName}/${objectPath}`, 'notFound');
    }
    if (req.method === 'DELETE') {
      bucket.delete(objectPath);
      status(204);
      res.writeHead(204).end();
      return;
    }
    if (req.method !== 'GET') return this.notAllowed(req, res, status);
    if (url.searchParams.get('alt') === 'media') return this.download(res, obj, status);
    status(200);
    return json(res, 200, this.resource(bucketName, obj));
  }

  private notAllowed(req: IncomingMessage, res: ServerResponse, status: (n: number) => void) {
    status(405);
    req.resume();
    googleError(res, 405, `Method ${req.method} not allowed here`, 'methodNotAllowed');
  }

  /** OAuth2 token endpoint for service accounts (RFC 7523 JWT bearer grant), as Google checks it. */
  private async token(req: IncomingMessage, res: ServerResponse, status: (n: number) => void) {
    const refuse = (description: string, error = 'invalid_grant') => {
      status(400);
      json(res, 400, { error, error_description: description });
    };
    if (req.method !== 'POST') {
      status(405);
      req.resume();
      return json(res, 405, { error: 'invalid_request', error_description: 'POST only' });
    }
    if (!/^application\/x-www-form-urlencoded\b/.test(req.headers['content-type'] ?? '')) {
      req.resume();
      return refuse('Bad Request', 'invalid_request');
    }
    const form = new URLSearchParams((await readBody(req)).toString('utf8'));
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
      return refuse('Invalid grant_type: ' + form.get('grant_type'), 'unsupported_grant_type');
    const parts = (form.get('assertion') ?? '').split('.');
    if (parts.length !== 3) return refuse('Invalid JWT: malformed');
    let header: { alg?: string };
    let claims: { iss?: string; aud?: string; scope?: string; iat?: number; exp?: number };
    try {
      header = JSON.parse(b64url(parts[0]!).toString('utf8'));
      claims = JSON.parse(b64url(parts[1]!).toString('utf8'));
    } catch {
      return refuse('Invalid JWT: malformed');
    }
    if (header.alg !== 'RS256') return refuse('Invalid JWT: unsupported algorithm');
    const account = claims.iss ? this.accounts.get(claims.iss) : undefined;
    if (!account) return refuse('Invalid grant: account not found');
    if (!verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), account.key, b64url(parts[2]!))) return refuse('Invalid JWT Signature.');
    if (!claims.aud || ![...GOOGLE_TOKEN_AUDIENCES, this.tokenUrl].includes(claims.aud)) return refuse('Invalid JWT: Failed audience check.');
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number' || claims.exp <= now || claims.iat > now + 60 || claims.exp - claims.iat > 3600) {
      return refuse(
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
      );
    }
    if (!claims.scope) return refuse('Invalid OAuth scope or ID token audience provided.', 'invalid_scope');
    const token = `ya29.peer-${randomBytes(18).toString('base64url')}`;
    this.tokens.set(token, { email: claims.iss!, scopes: claims.scope.split(' '), expires: Date.now() + TOKEN_LIFETIME_S * 1000 });
    status(200);
    json(res, 200, { access_token: token, expires_in: TOKEN_LIFETIME_S, token_type: 'Bearer' });
  }

  private list(res: ServerResponse, url: URL, bucket: string, status: (n: number) => void) {
    const prefix = url.searchParams.get('prefix') ?? '';
    const asked = Number(url.searchParams.get('maxResults') ?? GOOGLE_MAX_PAGE);
    const size = Math.max(1, Math.min(Number.isFinite(asked) && asked > 0 ? asked : GOOGLE_MAX_PAGE, this.maxPageSize));
    const token = url.searchParams.get('pageToken');
    let after = '';
    if (token) {
      try {
        after = Buffer.from(token, 'base64url').toString('utf8');
      } catch {
        status(400);
        return googleError(res, 400, 'Invalid page token', 'invalid');
      }
    }
    const all = this.objects(bucket, prefix).filter((o) => !token || o.name > after);
    const page = all.slice(0, size);
    const body: Record<string, unknown> = { kind: 'storage#objects' };
    if (page.length > 0) body.items = page.map((o) => this.resource(bucket, o));
    if (all.length > size) body.nextPageToken = Buffer.from(page.at(-1)!.name).toString('base64url');
    status(200);
    json(res, 200, body);
  }

  private download(res: ServerResponse, o: StoredObject, status: (n: number) => void) {
    status(200);
    res.writeHead(200, {
      'content-type': o.contentType,
      'content-length': String(o.data.length),
      'x-goog-hash': `crc32c=${o.crc32c},md5=${o.md5}`,
      'x-goog-generation': o.generation,
      'x-goog-metageneration': '1',
      'x-goog-stored-content-encoding': 'identity',
      'x-goog-stored-content-length': String(o.data.length),
      etag: `"${o.md5}"`,
    });
    const drop = this.drop?.name === o.name ? this.drop : undefined;
    if (drop) {
      this.drop = undefined;
      res.write(o.data.subarray(0, drop.afterBytes), () => setTimeout(() => res.socket?.destroy(), 50));
      return;
    }
    res.end(o.data);
  }

  private async upload(req: IncomingMessage, res: ServerResponse, url: URL, bucket: string, status: (n: number) => void) {
    const uploadType = url.searchParams.get('uploadType');
    if (uploadType !== 'multipart') {
      req.resume();
      status(400);
      return googleError(res, 400, `uploadType ${uploadType} is not served by this test peer (multipart only)`, 'invalid');
    }
    const boundary = /^multipart\/related;\s*boundary="?([^";]+)"?/i.exec(req.headers['content-type'] ?? '')?.[1];
    if (!boundary) {
      req.resume();
      status(400);
      return googleError(res, 400, 'Content-Type must be multipart/related with a boundary', 'invalid');
    }
    const id = ++this.uploadSeq;
    this.inFlight.set(id, 0);
    let body: Buffer;
    try {
      body = await readBody(req, (n) => this.inFlight.set(id, (this.inFlight.get(id) ?? 0) + n));
    } finally {
      this.inFlight.delete(id);
    }
    const parts = multipartParts(body, boundary);
    if (!parts || parts.length !== 2 || !/^application\/json\b/.test(parts[0]!.headers['content-type'] ?? '')) {
      status(400);
      return googleError(res, 400, 'Invalid multipart request: expected a JSON metadata part and a media part', 'invalid');
    }
    let meta: { name?: string; contentType?: string };
    try {
      meta = JSON.parse(parts[0]!.data.toString('utf8'));
    } catch {
      status(400);
      return googleError(res, 400, 'Metadata part is not JSON', 'parseError');
    }
    const name = url.searchParams.get('name') ?? meta.name;
    if (!name) {
      status(400);
      return googleError(res, 400, 'Required', 'required');
    }
    const o = this.put(bucket, name, Buffer.from(parts[1]!.data), meta.contentType ?? parts[1]!.headers['content-type'] ?? 'application/octet-stream');
    status(200);
    json(res, 200, this.resource(bucket, o));
  }

  private resource(bucket: string, o: StoredObject) {
    const enc = encodeURIComponent(o.name);
    return {
      kind: 'storage#object',
      id: `${bucket}/${o.name}/${o.generation}`,
      selfLink: `${this.url}/storage/v1/b/${bucket}/o/${enc}`,
      mediaLink: `${this.url}/download/storage/v1/b/${bucket}/o/${enc}?generation=${o.generation}&alt=media`,
      name: o.name,
      bucket,
      generation: o.generation,
      metageneration: '1',
      contentType: o.contentType,
      storageClass: 'STANDARD',
      size: String(o.data.length),
      md5Hash: o.md5,
      crc32c: o.crc32c,
      etag: Buffer.from(o.generation).toString('base64'),
      timeCreated: o.created.toISOString(),
      updated: o.updated.toISOString(),
      timeStorageClassUpdated: o.created.toISOString(),
    };
  }
}

function json(res: ServerResponse, code: number, body: unknown) {
  res.writeHead(code, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify(body));
}

export async function startGcsPeer(): Promise<GcsPeer> {
  const p = new GcsPeer();
  await p.listen();
  return p;
}

/**
 * A service account of the peer: a fresh RSA key pair, its public half registered with the peer,
 * and a key file in `dir` as the Cloud console writes it (with `token_uri` pointing at the peer).
 * `register: false` writes a key the peer does not know (the email of a known account, another key).
 */
export function serviceAccount(
  peer: GcsPeer,
  dir: string,
  opts: { email?: string; role?: Role; register?: boolean; file?: string } = {},
): { email: string; keyFile: string } {
  const email = opts.email ?? `svc-${randomBytes(4).toString('hex')}@svc-test.iam.gserviceaccount.com`;
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  if (opts.register !== false) peer.addAccount(email, publicKey, opts.role);
  const keyFile = join(dir, opts.file ?? `${email.split('@')[0]}.json`);
  writeFileSync(
    keyFile,
    JSON.stringify({
      type: 'service_account',
      project_id: 'svc-test',
      private_key_id: randomBytes(20).toString('hex'),
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
      client_email: email,
      client_id: String(Date.now()),
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: peer.tokenUrl,
      auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
      universe_domain: 'googleapis.com',
    }),
  );
  return { email, keyFile };
}

/** The bucket the conformance suite uses; each channel is a prefix in it. */
export const CONFORMANCE_BUCKET = 'svc-conformance';

/**
 * The conformance fixture: one peer for the test file. A source channel is a prefix holding the
 * bodies as JSON-array objects of up to 400 records; a sink channel is the prefix its objects are
 * written under, read back from the peer's store. Wrong credentials are a key file for the known
 * account signed by another key (the peer's token endpoint answers `invalid_grant`).
 */
export const gcsFixture: PeerFixture = {
  type: 'gcs',
  badConfig: { role: 'sink', set: { bucket: 'Not_A_Bucket!' }, path: 'bucket' },
  async start(): Promise<Peer> {
    const peer = await startGcsPeer();
    const dir = mkdtempSync(join(tmpdir(), 'svc-gcs-'));
    peer.createBucket(CONFORMANCE_BUCKET);
    const sa = serviceAccount(peer, dir);
    const other = serviceAccount(peer, dir, { email: sa.email, register: false, file: 'other-key.json' });
    const base = { type: 'gcs', bucket: CONFORMANCE_BUCKET, service_account_json: sa.keyFile, endpoint_url: peer.url };
    return {
      source: {
        config: (ch) => ({ ...base, prefix: `${ch}/` }),
        async publish(ch, bodies) {
          for (let i = 0; i < bodies.length; i += 400) {
            const part = bodies.slice(i, i + 400);
            peer.put(CONFORMANCE_BUCKET, `${ch}/part-${String(i).padStart(6, '0')}.json`, `[${part.map((b) => b.toString()).join(',')}]`, 'application/json');
          }
        },
      },
      sink: {
        config: (ch) => ({ ...base, blob_template: `${ch}/{pipeline}_{timestamp}.json` }),
        async collect(ch): Promise<Collector> {
          return {
            records: () => peer.objects(CONFORMANCE_BUCKET, `${ch}/`).flatMap((o) => JSON.parse(o.data.toString('utf8')) as Rec[]),
            async close() {
              for (const o of peer.objects(CONFORMANCE_BUCKET, `${ch}/`)) peer.remove(CONFORMANCE_BUCKET, o.name);
            },
          };
        },
      },
      wrongPort: (cfg) => ({ ...cfg, endpoint_url: 'http://127.0.0.1:1' }),
      wrongCredentials: (cfg) => ({ ...cfg, service_account_json: other.keyFile }),
      disrupt: () => peer.restart(),
      down: () => peer.down(),
      async stop() {
        await peer.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};
