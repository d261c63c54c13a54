// Deleted pipelines (issue 17): what a pipeline keeps on disk under the state directory goes with
// it, so a new pipeline of the same name starts empty instead of replaying the old one's bodies or
// skipping the files the old one processed. The database's share (processed memory, transform
// state, alerts) is cleared by PipelineManager.remove.
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { processedFilesPath } from '../plugins/connector-runtime/processed-files.js';
import { stateFilePath } from '../engine/transform-state.js';
import { spoolDir } from '../plugins/connector-runtime/webhook-stream.js';

/**
 * The files of `pipeline` under `stateDir`: its webhook spools (one folder per served path) and
 * any file-based processed-file memory and transform state (`svc run`, or a worker's, on a shared
 * state directory). Called once the pipeline is stopped; what is already gone is no error.
 */
export async function forgetPipelineFiles(stateDir: string | undefined, pipeline: string): Promise<void> {
  if (!stateDir) return;
  // The spool layout is webhook-stream's: `<stateDir>/spool/<pipeline>/<path>`.
  const spools = dirname(spoolDir(stateDir, pipeline, 'any'));
  await Promise.all([spools, processedFilesPath(pipeline, stateDir), stateFilePath(pipeline, stateDir)].map((p) => rm(p, { recursive: true, force: true })));
}
