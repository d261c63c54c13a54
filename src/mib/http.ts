// The HTTP side of the MIB store, shared by the console's /api/mibs/* and the daemon's /api/mibs:
// reading multipart uploads within the store's limits (the store throws the catalog's HTTP errors).
import multipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { httpError } from '../core/http-errors.js';
import { MIB_MAX_FILE_BYTES, type UploadFile } from './store.js';

/** Files one upload may carry. */
export const MIB_UPLOAD_MAX_FILES = 500;

export async function registerMibMultipart(app: FastifyInstance) {
  // preservePath: busboy would otherwise cut `../x.mib` to `x.mib`; the store refuses such names (400).
  await app.register(multipart, {
    preservePath: true,
    limits: { fileSize: MIB_MAX_FILE_BYTES, files: MIB_UPLOAD_MAX_FILES, fields: 16, fieldSize: 4096, parts: MIB_UPLOAD_MAX_FILES + 16 },
  });
}

/**
 * The files of a multipart upload (in the fields `fileFields`) and its text fields. 415 when the
 * body is not multipart, 413 for a file over the limit, 400 for other form problems.
 */
export async function readMibUpload(req: FastifyRequest, fileFields: string[]): Promise<{ files: UploadFile[]; fields: Record<string, string> }> {
  if (!req.isMultipart()) {
    throw httpError(
      'HTTP_UNSUPPORTED_MEDIA_TYPE',
      `send the MIB files as multipart/form-data in the field ${fileFields[0]} (got content type '${req.headers['content-type'] ?? 'none'}')`,
    );
  }
  const files: UploadFile[] = [];
  const fields: Record<string, string> = {};
  const unexpected: string[] = [];
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        // Read (and so drain) every file part, so the client gets our answer, not a reset.
        const data = await part.toBuffer();
        if (fileFields.includes(part.fieldname)) files.push({ name: part.filename, data });
        else unexpected.push(part.fieldname);
      } else fields[part.fieldname] = String(part.value);
    }
  } catch (e) {
    const code = (e as FastifyError).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw httpError('HTTP_BODY_TOO_LARGE', `a MIB file may have at most ${MIB_MAX_FILE_BYTES} bytes`);
    if (code === 'FST_FILES_LIMIT') throw httpError('HTTP_BODY_TOO_LARGE', `at most ${MIB_UPLOAD_MAX_FILES} files per upload`);
    if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') throw httpError('HTTP_MIB_UPLOAD_INVALID', 'too many form fields');
    throw e;
  }
  if (unexpected.length) throw httpError('HTTP_MIB_UPLOAD_INVALID', `unexpected file field '${unexpected[0]}': send MIB files in the field ${fileFields[0]}`);
  if (!files.length) throw httpError('HTTP_MIB_UPLOAD_INVALID', `no MIB file: send one or more files in the multipart field ${fileFields[0]}`);
  return { files, fields };
}
