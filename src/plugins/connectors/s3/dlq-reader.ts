// Reads back a DLQ written by the `s3` sink: the objects under the fixed prefix of key_template
// (up to its last '/' before the first token; give the DLQ a prefix of its own), listed and read by
// the s3 source's store.
import { fileStoreReader, templateDir } from '../../connector-runtime/file-store-dlq.js';
import type { DlqReader, DlqReaderContext, SourcePlugin } from '../../types.js';
import type { S3Location } from './client.js';
import s3Source from './source.js';

type S3Sink = S3Location & { key_template: string };

export function s3DlqReader(c: S3Sink, ctx: DlqReaderContext): DlqReader {
  const { bucket, endpoint_url, region_name, aws_access_key_id, aws_secret_access_key } = c;
  const source = { bucket, prefix: templateDir(c.key_template), endpoint_url, region_name, aws_access_key_id, aws_secret_access_key };
  return fileStoreReader(s3Source as unknown as SourcePlugin, source, ctx);
}
