// `svc run FILE`: one batch run of a pipeline file, its run record as JSON on stdout.
import { decodeWatchOptions } from '../engine/decode-watch.js';
import { runPipeline } from '../engine/runner.js';
import { defaultStateDir, FileProcessedFiles, processedFilesPath } from '../plugins/connector-runtime/processed-files.js';
import { fileStateIO, stateConfigHash, stateFilePath, statefulTransforms } from '../engine/transform-state.js';
import { createLogger } from '../observability/log.js';
import { progressReporter } from './progress.js';
import { settingsOrReport } from './settings-or-report.js';
import { readConfig } from './validate.js';

export async function cmdRun(file: string | undefined): Promise<number> {
  const r = await readConfig(file);
  if (!r.config) return 1;
  const config = r.config;
  const settings = settingsOrReport();
  if (!settings) return 1;
  const ac = new AbortController();
  // First Ctrl-C stops gracefully (what is in flight is delivered); a second one exits at once.
  process.once('SIGINT', () => {
    process.stderr.write('\nsvc: stopping (Ctrl-C again to quit now)\n');
    ac.abort();
    process.once('SIGINT', () => process.exit(130));
  });
  const progress = progressReporter(process.stderr);
  const log = createLogger();
  const record = await runPipeline(config, {
    log,
    signal: ac.signal,
    processed: new FileProcessedFiles(processedFilesPath(config.name)),
    state: statefulTransforms(config).length ? fileStateIO(stateFilePath(config.name), stateConfigHash(config), log) : undefined,
    onProgress: progress.update,
    decodeWatch: decodeWatchOptions(defaultStateDir(), settings),
  });
  progress.done();
  process.stdout.write(JSON.stringify(record, null, 2) + '\n');
  return record.status === 'success' ? 0 : record.status === 'aborted' ? 2 : 1;
}
