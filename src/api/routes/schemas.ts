// Schema files under SVC_SCHEMA_DIR (list, read, upload, delete) and the reverse proxy to the
// external schema registry (spec doc 2 section 4). Shapes, limits and decisions: docs/schemas.md.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import { isUtf8 } from 'node:buffer';
import { bearerToken, verifyToken } from '../../auth/tokens.js';
import {
  RegistryConfigError,
  RegistryPathError,
  RegistryUnreachableError,
  forward,
  registryTarget,
  upstreamUrl,
  type RegistryTarget,
} from '../../schemas/registry-proxy.js';
import { SCHEMA_MAX_BYTES, SchemaStore, UPLOAD_EXTENSIONS, tooLarge } from '../../schemas/store.js';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';

const SchemaFileSchema = Type.Object({
  path: Type.String({ description: 'Relative to SVC_SCHEMA_DIR, `/`-separated.' }),
  type: Type.Union(
    ['protobuf', 'avro', 'json', 'xml', 'yaml', 'other'].map((t) => Type.Literal(t)),
    { description: 'Inferred from the extension.' },
  ),
  size_bytes: Type.Integer(),
  schema_file: Type.String({ description: "Absolute path; usable as a pipeline serializer's `schema_file`." }),
  modified: Type.String({ description: 'Last modification, ISO 8601.' }),
});

const UploadResult = Type.Object({
  ...SchemaFileSchema.properties,
  replaced: Type.Boolean({ description: 'True when a file of that name was replaced.' }),
  schema_dir: Type.String({ description: 'The absolute schema folder (SVC_SCHEMA_DIR).' }),
});

const ErrorBody = Type.Object({ detail: Type.String() });
const FilepathParams = Type.Object({ '*': Type.String({ description: 'Path relative to SVC_SCHEMA_DIR.' }) });
type FileReq = FastifyRequest<{ Params: { '*': string } }>;

const REGISTRY_PREFIX = '/api/schemas/registry';
const PROXY_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;

export default async function schemaRoutes(app: FastifyInstance, deps: ApiDeps) {
  const store = new SchemaStore(deps.settings.SCHEMA_DIR);
  const tags = ['schemas'];

  // One file per upload; a few small fields (subdir). Multipart stays inside this route module.
  // preservePath: the file name as sent, so `../x.json` is refused (400) rather than quietly stored as `x.json`.
  await app.register(multipart, { preservePath: true, limits: { fileSize: SCHEMA_MAX_BYTES, files: 1, fields: 8, fieldSize: 4096, parts: 10 } });

  app.get(
    '/api/schemas',
    { schema: { tags, summary: 'Schema files under SVC_SCHEMA_DIR, recursive, sorted by path', response: { 200: Type.Array(SchemaFileSchema) } } },
    async () => store.list(),
  );

  app.post(
    '/api/schemas/upload',
    {
      schema: {
        tags,
        summary: `Store a schema file (multipart field \`file\`; extensions ${Object.keys(UPLOAD_EXTENSIONS).join(' ')}; at most ${SCHEMA_MAX_BYTES} bytes)`,
        querystring: Type.Object({
          subdir: Type.Optional(Type.String({ description: 'Folder under SVC_SCHEMA_DIR (relative, no `..`); also accepted as a form field.' })),
        }),
        consumes: ['multipart/form-data'],
        // Documents the form for OpenAPI; the parts are read by the handler (multipart bodies are
        // not attached to req.body, hence null passes).
        body: {
          content: {
            'multipart/form-data': {
              schema: {
                type: ['object', 'null'],
                properties: {
                  file: { type: 'string', format: 'binary', description: 'The schema file; its name is kept.' },
                  subdir: { type: 'string', description: 'Folder under SVC_SCHEMA_DIR.' },
                },
              },
            },
          },
        },
        response: { 201: UploadResult, 400: ErrorBody, 413: ErrorBody, 415: ErrorBody },
      },
    },
    async (req: FastifyRequest<{ Querystring: { subdir?: string } }>, reply) => {
      if (!req.isMultipart()) {
        throw httpError(
          'HTTP_UNSUPPORTED_MEDIA_TYPE',
          `send the schema as multipart/form-data with the file in field "file" (got content type '${req.headers['content-type'] ?? 'none'}')`,
        );
      }
      const { file, subdir: fieldSubdir } = await readUpload(req);
      const querySubdir = req.query.subdir;
      if (querySubdir !== undefined && fieldSubdir !== undefined && querySubdir !== fieldSubdir) {
        throw httpError('HTTP_BAD_REQUEST', `subdir given twice with different values ('${querySubdir}' in the query, '${fieldSubdir}' in the form): give one`);
      }
      const stored = await store.save(file.filename, file.data, querySubdir ?? fieldSubdir ?? '');
      deps.log.info({ path: stored.path, size_bytes: stored.size_bytes, replaced: stored.replaced }, 'schema file stored');
      return reply.code(201).send({ ...stored, schema_dir: store.dir });
    },
  );

  app.get(
    '/api/schemas/*',
    { schema: { tags, summary: 'The raw content of one schema file', params: FilepathParams, response: { 400: ErrorBody, 404: ErrorBody } } },
    async (req: FileReq, reply) => {
      const data = await store.read(req.params['*']);
      return reply.type(isUtf8(data) ? 'text/plain; charset=utf-8' : 'application/octet-stream').send(data);
    },
  );

  app.delete(
    '/api/schemas/*',
    { schema: { tags, summary: 'Delete one schema file (204)', params: FilepathParams, response: { 400: ErrorBody, 404: ErrorBody } } },
    async (req: FileReq, reply) => {
      await store.remove(req.params['*']);
      deps.log.info({ path: req.params['*'] }, 'schema file deleted');
      return reply.code(204).send();
    },
  );

  await app.register(async (scope) => registryProxy(scope, deps));
}

/** The one file of an upload and the optional `subdir` field; multipart limits become 400/413. */
async function readUpload(req: FastifyRequest): Promise<{ file: { filename: string; data: Buffer }; subdir?: string }> {
  let file: { filename: string; data: Buffer } | undefined;
  let subdir: string | undefined;
  const unexpected: string[] = [];
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        // Read (and so drain) every file part, so the client gets our answer, not a reset.
        const data = await part.toBuffer();
        if (part.fieldname === 'file') file = { filename: part.filename, data };
        else unexpected.push(part.fieldname);
      } else if (part.fieldname === 'subdir') subdir = String(part.value);
    }
  } catch (e) {
    const code = (e as FastifyError).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw httpError('HTTP_BODY_TOO_LARGE', tooLarge());
    if (code === 'FST_FILES_LIMIT') throw httpError('HTTP_BAD_REQUEST', 'one file per upload: send the schema in the single field "file"');
    if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT')
      throw httpError('HTTP_BAD_REQUEST', 'too many form fields: send "file" and optionally "subdir"');
    throw e;
  }
  if (unexpected.length) throw httpError('HTTP_BAD_REQUEST', `unexpected file field '${unexpected[0]}': send the schema in the field "file"`);
  if (!file) throw httpError('HTTP_BAD_REQUEST', 'missing multipart field "file" with the schema file');
  return subdir === undefined ? { file } : { file, subdir };
}

/**
 * /api/schemas/registry/{path}: every body is taken as raw bytes (this scope drops the JSON and
 * multipart parsers) and forwarded to SVC_SCHEMA_REGISTRY_URL with the registry's credentials.
 */
async function registryProxy(app: FastifyInstance, deps: ApiDeps) {
  const { settings } = deps;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: SCHEMA_MAX_BYTES }, (_req, body, done) => done(null, body));
  // A body over SCHEMA_MAX_BYTES: the app's handler names that limit (bodyLimitOf in app.ts).

  const target = (): RegistryTarget => {
    let t: RegistryTarget | undefined;
    try {
      t = registryTarget(settings.SCHEMA_REGISTRY_URL, settings.SCHEMA_REGISTRY_USERNAME, settings.SCHEMA_REGISTRY_PASSWORD);
    } catch (e) {
      if (e instanceof RegistryConfigError) throw httpError('HTTP_SCHEMA_REGISTRY_UNSET', `schema registry not configured correctly: ${e.message}`);
      throw e;
    }
    if (!t) throw httpError('HTTP_SCHEMA_REGISTRY_UNSET', 'no schema registry configured: set SVC_SCHEMA_REGISTRY_URL to enable /api/schemas/registry/...');
    return t;
  };

  const handler = async (req: FastifyRequest<{ Params: { '*'?: string } }>, reply: FastifyReply) => {
    const t = target();
    // The raw URL keeps the client's percent-encoding (subjects may contain %2F).
    const raw = req.raw.url ?? req.url;
    const q = raw.indexOf('?');
    const rawPathFull = q < 0 ? raw : raw.slice(0, q);
    const rawQuery = q < 0 ? '' : raw.slice(q);
    const rawPath = rawPathFull.startsWith(REGISTRY_PREFIX)
      ? rawPathFull.slice(REGISTRY_PREFIX.length)
      : `/${(req.params['*'] ?? '').split('/').map(encodeURIComponent).join('/')}`;
    let url: string;
    try {
      url = upstreamUrl(t, rawPath, rawQuery);
    } catch (e) {
      if (e instanceof RegistryPathError) throw httpError('HTTP_SCHEMA_REGISTRY_PATH_INVALID', e.message);
      throw e;
    }
    // A session token authenticated this request to svc; it means nothing to the registry.
    const token = bearerToken(req.headers.authorization);
    const dropClientAuthorization = token !== undefined && verifyToken(token, settings.AUTH_SECRET) !== undefined;
    try {
      const res = await forward(t, {
        method: req.method,
        url,
        headers: req.headers,
        ...(Buffer.isBuffer(req.body) ? { body: req.body } : {}),
        dropClientAuthorization,
      });
      reply.code(res.status).headers(res.headers);
      return res.status === 204 || res.status === 304 || req.method === 'HEAD' ? reply.send() : reply.send(res.body);
    } catch (e) {
      if (e instanceof RegistryUnreachableError) {
        deps.log.warn({ err: e.message, url: req.url }, 'schema registry unreachable');
        throw httpError('HTTP_SCHEMA_REGISTRY_UNREACHABLE', e.message);
      }
      throw e;
    }
  };

  const schema = {
    tags: ['schemas'],
    summary: 'Reverse proxy to SVC_SCHEMA_REGISTRY_URL (method, path, query, headers and body forwarded; basic auth added)',
    description:
      "The registry's status, content type and body are relayed as they are. Errors of the proxy itself: 400 dot segments in the path, 413 body over the limit, 502 registry unreachable, 503 SVC_SCHEMA_REGISTRY_URL unset or invalid.",
    response: { 502: ErrorBody, 503: ErrorBody },
  };
  app.route({ method: [...PROXY_METHODS], url: REGISTRY_PREFIX, bodyLimit: SCHEMA_MAX_BYTES, schema, handler });
  app.route({
    method: [...PROXY_METHODS],
    url: `${REGISTRY_PREFIX}/*`,
    bodyLimit: SCHEMA_MAX_BYTES,
    schema: { ...schema, params: Type.Object({ '*': Type.String() }) },
    handler,
  });
}
