// The layer rule of src/, in one place (`npm run lint:deps`, part of `npm test`).
// Each folder (or root file) of src/ may import only itself and the layers above it in LAYERS:
// lowest first. Type-only imports count: a type is a dependency too.
const LAYERS = [
  'util', // small helpers with no knowledge of svc
  'version',
  'core', // what every layer shares: typed errors, secrets, the HTTP error catalog
  'settings',
  'observability', // logs, metrics, traces
  'expr',
  'snmp',
  'asn1',
  'schemas',
  'auth',
  'mib',
  'store',
  'plugins', // the plugin contract, the connector runtime and the plugins
  'config', // pipeline YAML, validated against the plugins' schemas
  'engine', // the record flow
  'testing', // svc test
  'alerts',
  'ai',
  'pipelines', // the pipeline manager: registry, schedules, supervision, runs
  'dlq',
  'cluster',
  'api',
  'console',
  'daemon', // svc serve's assembly
  'docs',
  'cli',
];

const layerPath = (names) => `^src/(${names.join('|')})(/|\\.ts$)`;

const layerRules = LAYERS.slice(0, -1).map((name, i) => ({
  name: `layer-${name}`,
  comment: `src/${name} is below ${LAYERS.slice(i + 1).join(', ')}: it must not import them`,
  severity: 'error',
  from: { path: layerPath([name]) },
  to: { path: layerPath(LAYERS.slice(i + 1)) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'connector-folders-apart',
      comment: 'a connector imports the connector runtime or plugins/common, never another connector',
      severity: 'error',
      from: { path: '^src/plugins/connectors/([^/]+)/' },
      to: { path: '^src/plugins/connectors/[^/]+/', pathNot: '^src/plugins/connectors/$1/' },
    },
    {
      name: 'no-circular',
      comment: 'modules that import each other (directly or around a loop) cannot be read or moved one at a time',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'not-to-unlisted-layer',
      comment: 'every folder of src/ has its place in LAYERS (.dependency-cruiser.cjs)',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/', pathNot: layerPath(LAYERS) },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.d.ts'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
