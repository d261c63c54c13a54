// Operator application settings (GET/POST /api/settings/app): limits and defaults of the console,
// persisted as JSON in the console state directory. Spec doc 1 does not show the fields; these are
// what the simulator, walker, trap list and MIB catalog read.
import { join } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { readJsonFile, writeFileDurably } from '../util/durable.js';

export const AppSettingsSchema = Type.Object(
  {
    trap_event_limit: Type.Integer({
      minimum: 10,
      maximum: 100000,
      default: 1000,
      description: 'Received trap events kept (newest first); older ones are dropped.',
    }),
    simulator_log_limit: Type.Integer({ minimum: 10, maximum: 100000, default: 1000, description: 'Simulator activity entries kept.' }),
    walk_timeout_ms: Type.Integer({ minimum: 100, maximum: 60000, default: 3000, description: 'Per-request timeout of the walker.' }),
    walk_retries: Type.Integer({ minimum: 0, maximum: 5, default: 1, description: 'Retries per walker request before the target is reported unreachable.' }),
    walk_max_repetitions: Type.Integer({ minimum: 1, maximum: 200, default: 25, description: 'GETBULK max-repetitions of the walker.' }),
    walk_max_oids: Type.Integer({ minimum: 1, maximum: 1000000, default: 100000, description: 'A walk stops (and says so) after this many OIDs.' }),
    stats_push_interval_s: Type.Integer({ minimum: 1, maximum: 3600, default: 5, description: 'How often `stats` messages are pushed over the WebSocket.' }),
    mib_repository_url: Type.String({
      default: '',
      description: 'Optional remote MIB repository (base URL; `<url>/<MODULE>` is fetched) for fetch-dependencies; empty: bundled sources only.',
    }),
  },
  { additionalProperties: false },
);
export type AppSettings = Static<typeof AppSettingsSchema>;

/**
 * The body of POST /api/settings/app: any subset of the fields. Without their `default`s, so that
 * request validation (Ajv useDefaults) does not fill the fields left out and reset them.
 */
export const AppSettingsPatchSchema = Type.Partial(
  Type.Object(
    Object.fromEntries(
      Object.entries(AppSettingsSchema.properties).map(([k, { default: _unused, ...field }]) => [k, field]),
    ) as typeof AppSettingsSchema.properties,
  ),
  { additionalProperties: false },
);

export class AppSettingsStore {
  private current: AppSettings;

  private constructor(
    private readonly file: string,
    initial: AppSettings,
  ) {
    this.current = initial;
  }

  static async open(dir: string): Promise<AppSettingsStore> {
    const file = join(dir, 'app-settings.json');
    const stored = (await readJsonFile<Record<string, unknown>>(file)) ?? {};
    // Unknown or invalid stored fields fall back to defaults rather than blocking the start.
    const clean = Object.fromEntries(
      Object.entries(stored).filter(([k, v]) => k in AppSettingsSchema.properties && Value.Check(AppSettingsSchema.properties[k as keyof AppSettings], v)),
    );
    return new AppSettingsStore(file, Value.Default(AppSettingsSchema, clean) as AppSettings);
  }

  get(): AppSettings {
    return { ...this.current };
  }

  /** Merges a validated partial update and persists it. */
  async update(patch: Partial<AppSettings>): Promise<AppSettings> {
    this.current = { ...this.current, ...patch };
    await writeFileDurably(this.file, JSON.stringify(this.current, null, 2));
    return this.get();
  }
}
