// The MIBs a run's SNMP connectors resolve names with (PluginContext.mibs): whoever builds the
// run's context gives one (the engine runner this process's MIB store, a cluster worker the MIBs
// synced from its manager in front of it), so the connectors read no settings and know nothing of
// the deployment mode.
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Settings } from '../settings.js';
import { mibDirs } from './dirs.js';
import type { MibIndex } from './mib-index.js';
import type { MibStore } from './store.js';

export interface MibResolver {
  /** The index of every MIB this process knows, with the modules found in `dirs` (absolute, most specific first) in front. */
  index(dirs: string[]): Promise<MibIndex>;
}

export type MibSettings = Pick<Settings, 'MIB_DIR' | 'MIB_SOURCE_DIR' | 'MIB_BUNDLED_SOURCE_DIR' | 'defaulted'>;

const stores = new Map<string, Promise<MibStore>>();

/**
 * The MIB store's index (SVC_MIB_SOURCE_DIR uploads, SVC_MIB_BUNDLED_SOURCE_DIR and the product's
 * MIBs) with `dirs` in front. Compiled once per process and set of directories; the compile is
 * cached in the temp directory (not SVC_MIB_DIR, which belongs to the console's and the daemon's
 * store). `settings` is read when an index is asked for.
 */
export function storeMibs(settings: () => MibSettings): MibResolver {
  return {
    async index(dirs) {
      const s = settings();
      const { sourceDir } = mibDirs(s);
      const bundled = [...dirs, ...s.MIB_BUNDLED_SOURCE_DIR.split(delimiter).filter(Boolean)];
      const key = JSON.stringify([sourceDir, bundled]);
      let store = stores.get(key);
      if (!store) {
        const cache = join(tmpdir(), `svc-mib-engine-${createHash('sha256').update(key).digest('hex').slice(0, 16)}`);
        store = import('./store.js').then(({ MibStore }) => MibStore.open({ compiledDir: cache, sourceDir, bundledDirs: bundled }));
        store.catch(() => stores.delete(key));
        stores.set(key, store);
      }
      return (await store).index();
    },
  };
}
