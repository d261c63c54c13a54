// The SVC_* settings of the commands that start servers.
import { loadSettings, type Settings } from '../settings.js';

/** The settings, or undefined after printing what is wrong with them. */
export function settingsOrReport(): Settings | undefined {
  try {
    return loadSettings();
  } catch (e) {
    process.stderr.write(`svc: ${(e as Error).message}\n`);
    return undefined;
  }
}
