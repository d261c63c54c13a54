// The daemon's MIB endpoints (spec doc 2): list, upload (field `file`), download from a repository,
// delete and read one compiled module (workers sync modules with it). Backed by the same MibStore
// as the console's catalog (one store under `svc serve`). Decisions: docs/mibs.md.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { readMibUpload, registerMibMultipart } from '../../mib/http.js';
import type { ApiDeps } from '../deps.js';
import { HttpError, httpError } from '../../core/http-errors.js';

const tags = ['mibs'];
const ErrorBody = Type.Object({ detail: Type.String() });
const MibModule = Type.Object({
  name: Type.String(),
  file: Type.String({ description: 'The compiled file in SVC_MIB_DIR.' }),
  size_bytes: Type.Integer(),
  sha256: Type.String({ description: 'SHA-256 of the compiled JSON (GET /api/mibs/{name}): a worker fetches only the modules whose hash changed.' }),
});
const UploadResult = Type.Object({
  compiled: Type.Array(Type.String(), { description: 'Modules of the upload now active.' }),
  mib_dir: Type.String(),
  results: Type.Record(Type.String(), Type.String(), { description: 'module -> compiled | failed: <file:line:col message> | shadowed by <path>' }),
});
const NameParams = Type.Object({ name: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9-]*$', description: 'Module name, e.g. IF-MIB' }) });

export default async function mibRoutes(app: FastifyInstance, deps: ApiDeps) {
  const { mibs } = deps;
  await registerMibMultipart(app);
  const mibDir = () => mibs.status().mib_dir;

  app.get('/api/mibs', { schema: { tags, summary: 'Compiled modules of the active MIB bundle', response: { 200: Type.Array(MibModule) } } }, async () =>
    mibs.compiledList(),
  );

  app.post(
    '/api/mibs/upload',
    {
      schema: {
        tags,
        summary: 'Store a MIB source (multipart field `file`; .mib, .my, .txt or no extension) in the group common and compile',
        consumes: ['multipart/form-data'],
        body: { content: { 'multipart/form-data': { schema: { type: ['object', 'null'], properties: { file: { type: 'string', format: 'binary' } } } } } },
        response: { 200: UploadResult, 400: ErrorBody, 413: ErrorBody, 415: ErrorBody },
      },
    },
    async (req) => {
      const { files } = await readMibUpload(req, ['file']);
      const r = await mibs.upload(files, { group: 'common' });
      deps.log.info({ files: r.files, compiled: r.compiled }, 'MIB upload');
      return { compiled: r.compiled, mib_dir: mibDir(), results: r.results };
    },
  );

  app.post(
    '/api/mibs/download',
    {
      schema: {
        tags,
        summary:
          'Fetch named modules (bundled library, then SVC_MIB_REPOSITORY_URL) into the group common and compile; 200 when any is found (the others in not_found); else 404, 502 repository unreachable, 503 no repository configured',
        body: Type.Object({ names: Type.Array(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9-]*$' }), { minItems: 1, maxItems: 200 }) }),
        response: {
          200: Type.Object({
            compiled: Type.Array(Type.String()),
            mib_dir: Type.String(),
            results: Type.Record(Type.String(), Type.String()),
            not_found: Type.Array(Type.String()),
          }),
        },
      },
    },
    async (req: FastifyRequest<{ Body: { names: string[] } }>) => {
      const repositoryUrl = deps.settings.MIB_REPOSITORY_URL || undefined;
      const r = await mibs.fetchModules(req.body.names, { repositoryUrl }).catch((e: unknown) => {
        if (e instanceof HttpError && e.statusCode === 404 && !repositoryUrl)
          throw httpError('HTTP_MIB_REPOSITORY_UNSET', `${e.message}; set SVC_MIB_REPOSITORY_URL to download from an online MIB repository`);
        throw e;
      });
      return { compiled: r.compiled, mib_dir: mibDir(), results: r.results, not_found: r.not_found };
    },
  );

  app.get(
    '/api/mibs/:name',
    { schema: { tags, summary: 'One compiled module (the JSON workers sync)', params: NameParams, response: { 404: ErrorBody } } },
    async (req: FastifyRequest<{ Params: { name: string } }>, reply) => {
      const m = mibs.compiled(req.params.name);
      if (!m) throw httpError('HTTP_MIB_NOT_FOUND', `MIB module ${req.params.name} is not in the active bundle: GET /api/mibs lists the compiled modules`);
      return reply.type('application/json; charset=utf-8').send(m.json);
    },
  );

  app.delete(
    '/api/mibs/:name',
    {
      schema: {
        tags,
        summary:
          'Delete a module: removes the uploaded source files that define it and recompiles (bundled modules: 403; a file that also defines other modules: 409)',
        params: NameParams,
        response: { 404: ErrorBody, 403: ErrorBody, 409: ErrorBody },
      },
    },
    async (req: FastifyRequest<{ Params: { name: string } }>) => {
      const name = req.params.name;
      const inventory = mibs.status().source_inventory;
      const rows = inventory.filter((r) => r.module === name);
      if (!rows.length) throw httpError('HTTP_MIB_NOT_FOUND', `no MIB module ${name}: GET /api/mibs lists the compiled modules`);
      const own = [...new Set(rows.filter((r) => !r.bundled).map((r) => r.path))];
      if (!own.length)
        throw httpError(
          'HTTP_MIB_SOURCE_READ_ONLY',
          `${name} comes from the read-only bundled sources (${rows[0]!.path}); upload a module of the same name to shadow it instead`,
        );
      // Deleting a module must not take other modules of the same file with it silently.
      const others = [...new Set(inventory.filter((r) => own.includes(r.path) && r.module && r.module !== name).map((r) => r.module!))];
      if (others.length) {
        throw httpError(
          'HTTP_MIB_SOURCE_SHARED',
          `${name} is defined in ${own.join(', ')} together with ${others.join(', ')}, which deleting the file would remove too: delete the file itself with the console's DELETE /api/mibs/file {"path": "${own[0]}"}, or upload the file again without ${name}`,
        );
      }
      const r = await mibs.deleteFiles(own);
      deps.log.info({ module: name, files: r.files }, 'MIB module deleted');
      return { deleted: name, files: r.files, still_active: !!mibs.compiled(name) };
    },
  );
}
