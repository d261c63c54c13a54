// The MIB catalog's changing side (spec doc 1 section 4): status, validate-batch, upload, reload,
// fetch-dependencies, download, and delete (one, batch, by path). Reading and browsing the active
// bundle is in mib-browse.ts. The store and its rules: src/mib/store.ts, docs/mibs.md.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ZipFile } from 'yazl';
import { httpError } from '../../core/http-errors.js';
import { readMibUpload, registerMibMultipart } from '../../mib/http.js';
import type { CompileMode } from '../../mib/store.js';
import type { ConsoleDeps } from '../deps.js';

const tags = ['mibs'];
const loose = { additionalProperties: true };
const Row = Type.Object({}, loose);
const Status = Type.Object(
  {
    mibs: Type.Array(Type.String(), { description: 'Deduplicated active modules.' }),
    active_modules: Type.Array(Type.String(), { description: 'Same list as mibs.' }),
    errors: Type.Array(Row, {
      description:
        'True compile failures: module, file, path, group, missing, failedImports, errors (file, line, column, token, message, limit), limit (the setting of a breached limit, SVC_MIB_MAX_*).',
    }),
    failed_modules: Type.Array(Row, { description: 'Same list as errors.' }),
    source_inventory: Type.Array(Row, {
      description:
        'One row per module of every source file (path, group, file, bundled, size_bytes, modified, module, status active|shadowed|failed, last_updated, shadowed_by, errors, missing).',
    }),
    source_groups: Type.Array(Row, { description: 'Per group: files, modules, active, shadowed, failed, size_bytes, bundled.' }),
    compiled_at: Type.String(),
    mib_dir: Type.String(),
    source_dir: Type.String(),
    bundled_dirs: Type.Array(Type.String()),
  },
  loose,
);
const Change = Type.Object(
  {
    compiled: Type.Array(Type.String()),
    failed: Type.Array(Row),
    shadowed: Type.Array(Row),
    results: Type.Record(Type.String(), Type.String(), { description: 'module -> compiled | failed: <file:line:col message> | shadowed by <path>' }),
    files: Type.Array(Type.String()),
  },
  loose,
);
const uploadForm = (what: string) => ({
  consumes: ['multipart/form-data'],
  body: {
    content: {
      'multipart/form-data': {
        schema: {
          type: ['object', 'null'],
          properties: {
            'files[]': {
              type: 'array',
              items: { type: 'string', format: 'binary' },
              description: `${what}: .mib, .txt, .my or no extension (also accepted as field files or file)`,
            },
            source_group: { type: 'string', default: 'common', description: 'Upload group (a folder of SVC_MIB_SOURCE_DIR).' },
            compile_mode: {
              type: 'string',
              enum: ['full', 'partial'],
              default: 'full',
              description: 'full: a module with any error fails; partial: keep what resolves.',
            },
          },
        },
      },
    },
  },
});
const Paths = Type.Object({ paths: Type.Array(Type.String({ description: '<group>/<file> as in source_inventory' }), { minItems: 1, maxItems: 1000 }) });
const FILE_FIELDS = ['files[]', 'files', 'file'];

function compileMode(v: string | undefined): CompileMode {
  if (v === undefined || v === '' || v === 'full' || v === 'partial') return (v || 'full') as CompileMode;
  throw httpError('HTTP_INVALID', `compile_mode must be full or partial (got '${v}')`);
}

export default async function mibRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const { mibs, stats } = deps;
  await registerMibMultipart(app);
  // Counted where every change goes through, the store: the daemon's /api/mibs changes (one store
  // under `svc serve`) count too.
  const unwatch = mibs.onCounts((c) => {
    stats.inc('mibs', 'uploads', c.uploads);
    stats.inc('mibs', 'compiled', c.compiled);
    stats.inc('mibs', 'failed', c.failed);
  });
  app.addHook('onClose', async () => {
    unwatch();
  });

  app.get(
    '/api/mibs/status',
    { schema: { tags, summary: 'The active bundle (deduplicated) and the per-source inventory with shadowed rows', response: { 200: Status } } },
    async () => mibs.status(),
  );

  app.post(
    '/api/mibs/validate-batch',
    { schema: { tags, summary: 'What an upload would do (compile, fail, miss, shadow), without storing anything', ...uploadForm('Files to check') } },
    async (req) => {
      const { files, fields } = await readMibUpload(req, FILE_FIELDS);
      return mibs.validate(files, { group: fields.source_group || 'common', mode: compileMode(fields.compile_mode) });
    },
  );

  app.post(
    '/api/mibs/upload',
    {
      schema: {
        tags,
        summary: 'Store MIB sources in a source group and recompile; every other module still compiles when one fails',
        ...uploadForm('MIB files'),
        response: { 200: Change },
      },
    },
    async (req) => {
      const { files, fields } = await readMibUpload(req, FILE_FIELDS);
      const r = await mibs.upload(files, { group: fields.source_group || 'common', mode: compileMode(fields.compile_mode) });
      deps.log.info({ files: r.files, compiled: r.compiled.length, failed: r.failed.length }, 'MIB upload');
      return r;
    },
  );

  app.post(
    '/api/mibs/reload',
    {
      schema: {
        tags,
        summary: 'Recompile every stored and bundled source from scratch',
        body: Type.Optional(
          Type.Union([Type.Object({ compile_mode: Type.Optional(Type.Union([Type.Literal('full'), Type.Literal('partial')])) }), Type.Null()]),
        ),
        response: { 200: Change },
      },
    },
    async (req: FastifyRequest<{ Body?: { compile_mode?: CompileMode } | null }>) => mibs.reload(req.body?.compile_mode),
  );

  app.post(
    '/api/mibs/fetch-dependencies',
    {
      schema: {
        tags,
        summary: 'Fetch the modules that failed modules import: from the bundled directories (sub-folders included), then from mib_repository_url when set',
        body: Type.Optional(
          Type.Union([
            Type.Object({ repository_url: Type.Optional(Type.String({ description: 'Overrides the application setting mib_repository_url for this call.' })) }),
            Type.Null(),
          ]),
        ),
      },
    },
    async (req: FastifyRequest<{ Body?: { repository_url?: string } | null }>) => {
      const repositoryUrl = req.body?.repository_url || deps.appSettings.get().mib_repository_url || deps.settings.MIB_REPOSITORY_URL || undefined;
      return mibs.fetchDependencies({ repositoryUrl });
    },
  );

  app.post(
    '/api/mibs/download',
    {
      schema: {
        tags,
        summary: 'One source file as stored, or several as a zip archive',
        body: Paths,
        produces: ['application/octet-stream', 'application/zip'],
      },
    },
    async (req: FastifyRequest<{ Body: { paths: string[] } }>, reply) => {
      const files = await mibs.readSources([...new Set(req.body.paths)]);
      if (files.length === 1) return sendFile(reply, files[0]!.name, files[0]!.data, 'text/plain; charset=utf-8');
      const zip = new ZipFile();
      for (const f of files) zip.addBuffer(f.data, f.path);
      zip.end();
      return reply.header('content-disposition', 'attachment; filename="mib-sources.zip"').type('application/zip').send(zip.outputStream);
    },
  );

  const remove = async (paths: string[]) => {
    const r = await mibs.deleteFiles(paths);
    if (r.files.length) deps.log.info({ files: r.files }, 'MIB sources deleted');
    return { deleted: r.files, not_found: r.not_found, active: mibs.summary().active };
  };
  const deleteOne = async (path: string) => {
    const r = await remove([path]);
    if (r.not_found.length) throw httpError('HTTP_MIB_NOT_FOUND', `no MIB source ${path}: see source_inventory in GET /api/mibs/status for the stored paths`);
    return r;
  };
  app.delete(
    '/api/mibs/file',
    { schema: { tags, summary: 'Delete one uploaded source file (bundled sources are read-only: 403)', body: Type.Object({ path: Type.String() }) } },
    async (req: FastifyRequest<{ Body: { path: string } }>) => deleteOne(req.body.path),
  );
  app.post(
    '/api/mibs/delete-batch',
    {
      schema: {
        tags,
        summary: 'Delete several uploaded source files; unknown paths are listed in not_found',
        body: Type.Union([Paths, Type.Array(Type.String(), { minItems: 1, maxItems: 1000 })]),
      },
    },
    async (req: FastifyRequest<{ Body: { paths: string[] } | string[] }>) => remove(Array.isArray(req.body) ? req.body : req.body.paths),
  );
  app.delete(
    '/api/mibs/*',
    { schema: { tags, summary: 'Delete one uploaded source file by its URL-encoded path (<group>/<file>)', params: Type.Object({ '*': Type.String() }) } },
    // Fastify has decoded the path once already: decoding again would turn `a%2541.txt` into `aA.txt`.
    async (req: FastifyRequest<{ Params: { '*': string } }>) => deleteOne(req.params['*']),
  );
}

function sendFile(reply: FastifyReply, name: string, data: Buffer, type: string) {
  // A header carries ASCII only: the name as an ASCII fallback plus RFC 6266's filename* in UTF-8.
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const utf8 = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return reply.header('content-disposition', `attachment; filename="${ascii}"; filename*=UTF-8''${utf8}`).type(type).send(data);
}
