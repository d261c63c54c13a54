// The s3 test peer's process: s3rver 3.7.1 (a file-backed S3 server) on 127.0.0.1:<port> with its
// data in <directory>, run as a child of the test so the test can kill it mid-transfer and start it
// again on the same port and data. Usage: node --openssl-legacy-provider --import tsx
// s3rver-server.ts <port> <directory> <bucket>[,<bucket>...] [<request log file>]
//
// s3rver alone checks less than S3 does, so this front adds what the connector's tests rely on:
// - Signature V4: s3rver checks only that the access key ID exists (S3RVER); here the signature is
//   computed again from the request with the key's secret, as S3 does, and a mismatch is answered
//   403 SignatureDoesNotMatch. A request without credentials is answered 403 AccessDenied (a
//   private bucket). The payload hash (x-amz-content-sha256) is signed but not compared with the body.
// - AbortMultipartUpload (DELETE ?uploadId=), which s3rver lacks: the upload's parts are removed.
// - If-Match on GET: 412 PreconditionFailed when the object's ETag differs (s3rver ignores it).
// - Each request is appended to the request log ("METHOD /bucket/key?query"), for tests that
//   check which calls were made (a multipart upload, its abort).
// (--openssl-legacy-provider: s3rver encrypts ListObjectsV2 continuation tokens with DES, which
// Node 20's OpenSSL 3 offers only through the legacy provider.)
import { createHash, createHmac } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';

interface S3rverApp {
  configureBuckets(): Promise<void>;
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
}
const S3rver = createRequire(import.meta.url)('s3rver') as new (o: object) => S3rverApp;

/** s3rver's one account. */
const ACCESS_KEY_ID = 'S3RVER';
const SECRET_ACCESS_KEY = 'S3RVER';

const [portArg, directory, bucketsArg, requestLog] = process.argv.slice(2);
const port = Number(portArg);
if (!port || !directory || !bucketsArg) {
  process.stderr.write('usage: s3rver-server.ts <port> <directory> <bucket>[,<bucket>...]\n');
  process.exit(64);
}

const app = new S3rver({ silent: true, directory, configureBuckets: bucketsArg.split(',').map((name) => ({ name, configs: [] })) });
await app.configureBuckets();
const s3rver = app.callback();

const hmac = (key: string | Buffer, text: string) => createHmac('sha256', key).update(text, 'utf8').digest();
/** URI encoding of SigV4: everything but A-Z a-z 0-9 - _ . ~ percent-encoded. */
const uriEncode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);

/** The signature S3 would expect for `req` (path and query as sent; S3 does not encode the path again). */
function expectedSignature(req: IncomingMessage, m: { date: string; region: string; service: string; signedHeaders: string }, secret: string): string {
  const [path, rawQuery = ''] = req.url!.split('?', 2) as [string, string?];
  const query = rawQuery
    .split('&')
    .filter(Boolean)
    .map((kv) => {
      const i = kv.indexOf('=');
      const [k, v] = i < 0 ? [kv, ''] : [kv.slice(0, i), kv.slice(i + 1)];
      return [uriEncode(decodeURIComponent(k)), uriEncode(decodeURIComponent(v))] as const;
    })
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const names = m.signedHeaders.split(';');
  const headers = names
    .map(
      (n) =>
        `${n}:${String(req.headers[n] ?? '')
          .trim()
          .replace(/\s+/g, ' ')}\n`,
    )
    .join('');
  const canonical = [req.method, path, query, headers, m.signedHeaders, String(req.headers['x-amz-content-sha256'] ?? '')].join('\n');
  const scope = `${m.date}/${m.region}/${m.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', String(req.headers['x-amz-date'] ?? ''), scope, createHash('sha256').update(canonical, 'utf8').digest('hex')].join('\n');
  let key = hmac(`AWS4${secret}`, m.date);
  for (const part of [m.region, m.service, 'aws4_request']) key = hmac(key, part);
  return hmac(key, toSign).toString('hex');
}

function s3Error(res: ServerResponse, status: number, code: string, message: string) {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  res.writeHead(status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/,]+)\/(\d{8})\/([^/,]+)\/([^/,]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/** Where s3rver keeps a key's data (and `<that>.md5`, its ETag without quotes). */
const objectFile = (bucket: string, key: string) => join(directory!, bucket, ...key.split('/').slice(0, -1), `${key.split('/').pop()}._S3rver_object`);

createServer((req, res) => {
  if (requestLog) appendFileSync(requestLog, `${req.method} ${req.url}\n`);
  const auth = req.headers.authorization;
  if (!auth) return s3Error(res, 403, 'AccessDenied', 'Access Denied');
  const m = AUTH.exec(auth);
  if (!m) return s3Error(res, 400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed.');
  const [, keyId, date, region, service, signedHeaders, signature] = m as unknown as string[];
  // An unknown key ID is s3rver's own answer (InvalidAccessKeyId).
  if (
    keyId === ACCESS_KEY_ID &&
    expectedSignature(req, { date: date!, region: region!, service: service!, signedHeaders: signedHeaders! }, SECRET_ACCESS_KEY) !== signature
  ) {
    return s3Error(
      res,
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    );
  }
  const url = new URL(req.url!, 'http://peer');
  const uploadId = url.searchParams.get('uploadId');
  if (req.method === 'DELETE' && uploadId !== null) {
    // AbortMultipartUpload: s3rver keeps an upload's parts in <bucket>/._S3rver_uploads/<id>.
    const bucket = decodeURIComponent(url.pathname.split('/')[1] ?? '');
    const dir = join(directory, bucket, '._S3rver_uploads', uploadId.replace(/[^0-9a-f]/g, ''));
    if (!existsSync(dir)) return s3Error(res, 404, 'NoSuchUpload', 'The specified upload does not exist.');
    rmSync(dir, { recursive: true, force: true });
    res.writeHead(204).end();
    return;
  }
  const ifMatch = req.headers['if-match'];
  if (req.method === 'GET' && typeof ifMatch === 'string') {
    const [, bucket = '', ...key] = url.pathname.split('/').map(decodeURIComponent);
    let etag: string | undefined;
    try {
      etag = readFileSync(`${objectFile(bucket, key.join('/'))}.md5`, 'utf8');
    } catch {
      // no such object: s3rver answers NoSuchKey
    }
    if (etag !== undefined && ifMatch.replace(/"/g, '') !== etag)
      return s3Error(res, 412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
  }
  s3rver(req, res);
}).listen(port, '127.0.0.1');
