// Pipeline YAML -> a validated, defaulted PipelineConfig, or every problem at once, each with its
// YAML path, line and column. The plugin registry is a parameter, not an import: `svc validate`
// passes one holding only the plugins its file names (src/cli/plugin-loader.ts), everything else
// the full registry through load.ts.
import { Cron } from 'croner';
import { depthDiagnostic, expansionDiagnostic } from './yaml-bounds.js';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from 'yaml';
import type { AnyPlugin, PluginKind } from '../plugins/types.js';
import { lintExpression } from '../plugins/common/expression.js';
import { formatPath, inLineOrder, type Diagnostic, type DiagnosticCode } from './diagnostics.js';
import { interpolate, withExpansion, type Interpolated } from './interpolate.js';
import { Definition, Pipeline, SINK_COMMON_KEYS, SinkCommon, type ComponentConfig, type PipelineConfig } from './pipeline-schema.js';
import { checkAgainst, suggest, type SchemaIssue } from './schema-errors.js';
import { readSetting } from '../settings.js';
import { explainYamlError } from './yaml-errors.js';

export type Registry = Record<PluginKind, ReadonlyMap<string, AnyPlugin>>;

export interface LoadOptions {
  /** File name shown in diagnostics. */
  file?: string;
  env?: Record<string, string | undefined>;
  /** Default (load.ts): every registered plugin. */
  registry?: Registry;
  /** Stateful transforms allowed (the daemon's SVC_STATEFUL_TRANSFORMS); default: from `env`. */
  statefulTransforms?: boolean;
  /** The variables `${VAR}` may read (the daemon's SVC_CONFIG_ENV_ALLOW); default: from `env`. */
  envAllow?: readonly string[];
}

export interface LoadResult {
  config?: PipelineConfig;
  /** Errors (config undefined) and warnings. */
  diagnostics: Diagnostic[];
}

type Path = (string | number)[];

class Collector {
  readonly diagnostics: Diagnostic[] = [];
  constructor(
    private readonly doc: Document | undefined,
    private readonly lc: LineCounter,
  ) {}

  add(code: DiagnosticCode, path: Path, message: string, opts: { atKey?: boolean; severity?: 'error' | 'warning' } = {}) {
    const pos = this.doc ? locate(this.doc, path, !!opts.atKey) : undefined;
    const lp = pos !== undefined ? this.lc.linePos(pos) : undefined;
    this.diagnostics.push({ code, path: formatPath(path), message, severity: opts.severity ?? 'error', line: lp?.line, column: lp?.col });
  }

  issues(base: Path, issues: SchemaIssue[]) {
    for (const i of issues) this.add(i.code, [...base, ...i.path], i.message, { atKey: i.atKey });
  }

  get failed() {
    return this.diagnostics.some((d) => d.severity === 'error');
  }
}

/** Offset of the node at `path`, or of its nearest existing ancestor (for missing keys). */
function locate(doc: Document, path: Path, atKey: boolean): number | undefined {
  let node: unknown = doc.contents;
  let pos = (node as Node | null)?.range?.[0];
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === seg);
      if (!pair) return pos;
      const keyPos = (pair.key as Node | null)?.range?.[0];
      if (i === path.length - 1 && atKey) return keyPos ?? pos;
      node = pair.value;
      pos = (node as Node | null)?.range?.[0] ?? keyPos ?? pos;
    } else if (isSeq(node) && typeof seg === 'number') {
      node = node.items[seg];
      if (!node) return pos;
      pos = (node as Node).range?.[0] ?? pos;
    } else return pos;
  }
  return pos;
}

/** Line and column (1-based) of the node at `path` in YAML `text`, or of its nearest existing ancestor. */
export function positionOf(text: string, path: Path): { line: number; column: number } | undefined {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc });
  const pos = locate(doc, path, true);
  if (pos === undefined) return undefined;
  const lp = lc.linePos(pos);
  return { line: lp.line, column: lp.col };
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `${VAR}` references replaced; unset and refused variables reported (`hint`: how to fix an unset one). */
function expand(c: Collector, raw: unknown, opts: Pick<LoadOptions, 'env' | 'envAllow'>, hint: (name: string) => string): Interpolated {
  const env = opts.env ?? process.env;
  const allow = opts.envAllow ?? readSetting('CONFIG_ENV_ALLOW', env);
  const r = interpolate(raw, env, allow);
  for (const u of r.unset) c.add('CFG_ENV_UNSET', u.path, `environment variable ${u.name} is not set${hint(u.name)}`);
  const shown = allow.length ? allow.join(',') : 'empty';
  for (const d of r.denied) {
    c.add(
      'CFG_ENV_DENIED',
      d.path,
      `environment variable ${d.name} may not be read by a pipeline (SVC_CONFIG_ENV_ALLOW is ${shown}${allow.includes('*') ? ": every variable but svc's own SVC_*" : ''}); use another variable, or have the operator add ${d.name} to SVC_CONFIG_ENV_ALLOW`,
    );
  }
  return r;
}

/** Checks one component against its plugin; returns the defaulted component or undefined. */
function checkComponent(
  c: Collector,
  reg: Registry,
  kind: PluginKind,
  path: Path,
  raw: unknown,
  commonKeys: readonly string[] = [],
): { value: ComponentConfig; plugin: AnyPlugin } | undefined {
  if (!isObj(raw) || typeof raw.type !== 'string') return undefined; // reported by the pipeline schema
  const plugins = reg[kind];
  const plugin = plugins.get(raw.type);
  if (!plugin) {
    const hint = suggest(raw.type, [...plugins.keys()]);
    c.add(
      'CFG_UNKNOWN_PLUGIN',
      [...path, 'type'],
      `unknown ${kind} type '${raw.type}'${hint ? ` (did you mean '${hint}'?)` : ''}; registered: ${[...plugins.keys()].join(', ')}`,
    );
    return undefined;
  }
  const params: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) if (k !== 'type' && !commonKeys.includes(k)) params[k] = v;
  const { value, issues } = checkAgainst(plugin.config, params, ['type', ...commonKeys]);
  c.issues(path, issues);
  if (issues.length) return undefined;
  // A serializer's relative schema_file is taken under SVC_SCHEMA_DIR (what its run will do).
  for (const l of plugin.lint?.(value as never, { schemaDir: readSetting('SCHEMA_DIR') }) ?? []) {
    const code: DiagnosticCode = l.message.startsWith('invalid expression') ? 'CFG_EXPRESSION' : 'CFG_INVALID';
    c.add(code, [...path, ...l.path.split('.').map((s) => (/^\d+$/.test(s) ? Number(s) : s))], l.message);
  }
  return { value: { type: raw.type, ...(value as object) }, plugin };
}

function checkSerializer(c: Collector, reg: Registry, path: Path, raw: unknown, direction: 'in' | 'out') {
  const r = checkComponent(c, reg, 'serializer', path, raw);
  if (r && 'direction' in r.plugin && r.plugin.direction !== 'both' && r.plugin.direction !== direction) {
    c.add(
      'CFG_SERIALIZER',
      [...path, 'type'],
      `serializer '${r.value.type}' can only be used for ${r.plugin.direction === 'in' ? 'input (serializer_in)' : 'output (serializer_out)'}`,
    );
  }
  return r?.value;
}

function checkSink(c: Collector, reg: Registry, path: Path, raw: unknown) {
  if (!isObj(raw)) return undefined;
  const common = checkAgainst(SinkCommon, Object.fromEntries(Object.entries(raw).filter(([k]) => SINK_COMMON_KEYS.includes(k))));
  c.issues(path, common.issues);
  const own = checkComponent(
    c,
    reg,
    'sink',
    path,
    raw,
    SINK_COMMON_KEYS.filter((k) => k !== 'type'),
  );
  const cv = common.value as Record<string, unknown>;
  if (typeof cv.condition === 'string') {
    for (const l of lintExpression(cv.condition, 'condition')) c.add('CFG_EXPRESSION', [...path, 'condition'], l.message);
  }
  const transforms = ((raw.transforms as unknown[]) ?? []).map((t, i) => {
    const r = checkComponent(c, reg, 'transform', [...path, 'transforms', i], t);
    if (r && 'stateful' in r.plugin && r.plugin.stateful) {
      c.add(
        'CFG_STATEFUL',
        [...path, 'transforms', i, 'type'],
        `'${r.value.type}' keeps state and cannot be a sink-level transform; move it to the pipeline transforms`,
      );
    }
    if (r && r.plugin.kind === 'transform' && r.plugin.defersUnits?.(r.value as never))
      c.add(
        'CFG_INVALID_OPTION',
        [...path, 'transforms', i, 'scope'],
        "scope 'run' is for pipeline-level transforms; a sink-level transform drains at the end of each unit",
      );
    return r?.value;
  });
  const ser = raw.serializer_out === undefined ? undefined : checkSerializer(c, reg, [...path, 'serializer_out'], raw.serializer_out, 'out');
  if (!own || common.issues.length) return undefined;
  return { ...cv, ...own.value, transforms, ...(ser ? { serializer_out: ser } : {}) };
}

/** Parses and validates pipeline YAML text against `opts.registry`; the problems in line order. */
export function checkPipelineText(text: string, opts: LoadOptions & { registry: Registry }): LoadResult {
  const r = checkText(text, opts);
  return { ...r, diagnostics: inLineOrder(r.diagnostics) };
}

function checkText(text: string, opts: LoadOptions & { registry: Registry }): LoadResult {
  const reg = opts.registry;
  const lc = new LineCounter();
  // Before the document is composed, which recurses once per level.
  const deep = depthDiagnostic(text);
  if (deep) return { diagnostics: [deep] };
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: true, uniqueKeys: true });
  const c = new Collector(doc, lc);
  // Only the first syntax error: the ones after it are mostly echoes of it.
  const syntax = doc.errors[0];
  if (syntax) {
    // In words, at the line to fix (yaml-errors.ts), with the parser's own message after it.
    const p = explainYamlError(text, syntax);
    c.diagnostics.push({ code: 'CFG_YAML', path: '', message: p.message, severity: 'error', line: p.line, column: p.column });
  }
  if (c.failed) return { diagnostics: c.diagnostics };
  // A list or mapping used as a key (`? [a, b]: 1`, `{a: 1}: 2`): the yaml library would stringify it
  // with a process warning; no pipeline field takes such a key.
  visit(doc, {
    Pair(_, pair) {
      if (!isMap(pair.key) && !isSeq(pair.key)) return;
      const lp = pair.key.range ? lc.linePos(pair.key.range[0]) : undefined;
      c.diagnostics.push({
        code: 'CFG_YAML',
        path: '',
        message: `a key is a ${isMap(pair.key) ? 'mapping' : 'list'}: keys must be plain names`,
        severity: 'error',
        line: lp?.line,
        column: lp?.col,
      });
      return visit.BREAK;
    },
  });
  if (c.failed) return { diagnostics: c.diagnostics };
  // Counted on the syntax tree: an alias bomb is refused before toJS() builds it.
  const bomb = expansionDiagnostic(doc, text, lc);
  if (bomb) return { diagnostics: [...c.diagnostics, bomb] };

  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    c.add('CFG_YAML', [], (e as Error).message);
    return { diagnostics: c.diagnostics };
  }
  const expanded = expand(c, raw, opts, (name) => ` (set it, or write \${${name}:-default})`);
  raw = expanded.value;

  if (!isObj(raw)) {
    c.add('CFG_YAML', [], `expected a mapping with 'version' and 'pipeline', got ${raw === null || raw === undefined ? 'an empty document' : typeof raw}`);
    return { diagnostics: c.diagnostics };
  }
  // `version: 1` (a number) is what people type; it means the same as "1".
  if (raw.version === 1) raw.version = '1';
  const top = checkAgainst(Definition, raw);
  for (const i of top.issues) {
    if (i.path[0] === 'version')
      c.add(
        'CFG_VERSION',
        ['version'],
        i.code === 'CFG_REQUIRED' ? 'is required: add version: "1" at the top' : `${i.message}; this release reads version "1"`,
      );
    else c.add(i.code, i.path, i.message, { atKey: i.atKey });
  }
  if (!isObj(raw.pipeline)) return { diagnostics: c.diagnostics };

  const P: Path = ['pipeline'];
  const pr = checkAgainst(Pipeline, raw.pipeline);
  c.issues(P, pr.issues);
  const p = pr.value as Record<string, unknown>;
  const rawP = raw.pipeline;
  const threadWorkers = typeof p.thread_workers === 'number' ? p.thread_workers : 1;

  const source = checkComponent(c, reg, 'source', [...P, 'source'], rawP.source);
  const serializerIn = checkSerializer(c, reg, [...P, 'serializer_in'], p.serializer_in, 'in');
  const serializerOut = checkSerializer(c, reg, [...P, 'serializer_out'], p.serializer_out, 'out');
  const transforms = (Array.isArray(rawP.transforms) ? rawP.transforms : []).map((t, i) => {
    const r = checkComponent(c, reg, 'transform', [...P, 'transforms', i], t);
    if (r && 'stateful' in r.plugin && r.plugin.stateful && threadWorkers > 1) {
      c.add(
        'CFG_STATEFUL',
        [...P, 'transforms', i, 'type'],
        `'${r.value.type}' keeps state per record identity and needs thread_workers: 1 (got ${threadWorkers})`,
      );
    }
    if (r && r.plugin.kind === 'transform' && r.plugin.defersUnits?.(r.value as never) && (p.schedule as { type?: string } | undefined)?.type === 'stream') {
      c.add(
        'CFG_INVALID_OPTION',
        [...P, 'transforms', i, 'scope'],
        "scope 'run' holds records until a run ends, which a stream never does; use scope 'unit' or window_aggregate",
      );
    }
    return r?.value;
  });
  // The stateful transforms of the pipeline and of its sinks, with the YAML path of each one's type.
  // `followsTargets` false: only those whose state cannot follow the targets of a sharded run, with
  // the reason its config gives (none: the transform cannot at all).
  const statefulTransforms = (followsTargets?: false): [Path, string, string?][] => {
    const lists: [Path, unknown][] = [
      [[...P, 'transforms'], rawP.transforms],
      ...(Array.isArray(rawP.sinks) ? rawP.sinks : []).map((s, i): [Path, unknown] => [[...P, 'sinks', i, 'transforms'], isObj(s) ? s.transforms : undefined]),
    ];
    return lists.flatMap(([path, list]) =>
      (Array.isArray(list) ? list : []).flatMap((t, i): [Path, string, string?][] => {
        const plugin = isObj(t) && typeof t.type === 'string' ? reg.transform.get(t.type) : undefined;
        if (!plugin || !('stateful' in plugin) || !plugin.stateful) return [];
        if (followsTargets !== false) return [[[...path, i, 'type'], t.type as string]];
        if (!plugin.targetState) return [[[...path, i, 'type'], t.type as string]];
        const why = plugin.targetState.refuse?.(t as never);
        return why ? [[[...path, i, 'type'], t.type as string, why]] : [];
      }),
    );
  };
  if (!(opts.statefulTransforms ?? (opts.env ?? process.env).SVC_STATEFUL_TRANSFORMS?.trim() !== '0')) {
    for (const [path, type] of statefulTransforms())
      c.add('CFG_STATEFUL', path, `'${type}' is disabled on this node (SVC_STATEFUL_TRANSFORMS=0); enable stateful transforms or remove it`);
  }
  const sinks = (Array.isArray(rawP.sinks) ? rawP.sinks : []).map((s, i) => checkSink(c, reg, [...P, 'sinks', i], s));
  const dlq = rawP.dlq === undefined ? undefined : checkSink(c, reg, [...P, 'dlq'], rawP.dlq);

  // Cross-field rules of the pipeline itself.
  const sched = p.schedule as { type?: string; interval_seconds?: number; cron?: string } | undefined;
  if (sched?.type === 'interval' && sched.interval_seconds === undefined)
    c.add('CFG_SCHEDULE', [...P, 'schedule'], "schedule type 'interval' needs interval_seconds");
  if (sched?.type === 'cron') {
    if (!sched.cron) c.add('CFG_SCHEDULE', [...P, 'schedule'], "schedule type 'cron' needs cron, e.g. '*/5 * * * *'");
    else if (sched.cron.trim().split(/\s+/).length !== 5)
      c.add('CFG_SCHEDULE', [...P, 'schedule', 'cron'], `cron must have 5 fields (minute hour day month weekday), got '${sched.cron}'`);
    else {
      try {
        new Cron(sched.cron, { paused: true });
      } catch (e) {
        c.add('CFG_SCHEDULE', [...P, 'schedule', 'cron'], `cron '${sched.cron}' does not parse: ${(e as Error).message}`);
      }
    }
  }
  if (sched?.type && source && 'mode' in source.plugin) {
    const streamSched = sched.type === 'stream';
    if (streamSched && source.plugin.mode === 'batch')
      c.add('CFG_SCHEDULE', [...P, 'schedule', 'type'], `source '${source.value.type}' is a batch source; use schedule type interval, cron or manual`);
    if (!streamSched && source.plugin.mode === 'stream')
      c.add('CFG_SCHEDULE', [...P, 'schedule', 'type'], `source '${source.value.type}' is a stream source; use schedule type stream`);
  }
  // A sharded batch run (issue 33): `workers` on a batch pipeline cuts the source's targets over the workers.
  const workers = p.workers as { count?: unknown; list?: unknown } | undefined;
  if (workers && sched?.type && sched.type !== 'stream' && source && source.plugin.kind === 'source') {
    if (!source.plugin.shard)
      c.add(
        'CFG_INVALID',
        [...P, 'workers'],
        `source '${source.value.type}' cannot split its work over workers (sources that can: ${[...reg.source.values()]
          .filter((s) => s.kind === 'source' && s.shard)
          .map((s) => s.key)
          .join(', ')}); remove workers to run the pipeline on one worker`,
      );
    // counter_delta and window_aggregate (grouped by _target) keep their state by target in a
    // sharded run (it follows a moved target); a stateful transform that cannot split its state by
    // target is refused rather than wrong.
    for (const [path, type, why] of statefulTransforms(false))
      c.add(
        'CFG_STATEFUL',
        path,
        why
          ? `'${type}' in a sharded run (pipeline.workers) keeps its state by target: ${why} (docs/cluster.md, Sharded batch runs)`
          : `'${type}' keeps its state per pipeline and cannot split it by target, and a sharded run (pipeline.workers) polls each target on a worker of its own: not supported together; remove pipeline.workers or this transform (docs/cluster.md, Sharded batch runs)`,
      );
  }
  if (p.on_error === 'dlq' && rawP.dlq === undefined)
    c.add('CFG_INVALID', [...P, 'on_error'], "on_error 'dlq' needs a dlq sink: add pipeline.dlq (e.g. type: local)");
  if (p.record_chunk_size !== undefined && threadWorkers > 1) {
    c.add('CFG_INVALID', [...P, 'record_chunk_size'], 'applies to serial batch runs only (thread_workers: 1); chunks are sized automatically with threads', {
      severity: 'warning',
    });
  }

  if (c.failed || !source || !serializerIn || !serializerOut) return { diagnostics: c.diagnostics };
  const config = {
    ...(p as object),
    source: source.value,
    serializer_in: serializerIn,
    serializer_out: serializerOut,
    transforms,
    sinks,
    ...(dlq ? { dlq } : {}),
  } as PipelineConfig;
  // The config's paths are those under `pipeline`.
  const written = expanded.expansion.written.filter((w) => w.path[0] === 'pipeline').map((w) => ({ ...w, path: w.path.slice(1) }));
  return { config: withExpansion(config, { ...expanded.expansion, written }), diagnostics: c.diagnostics };
}

/**
 * Validates one source or sink on its own, as the connector test endpoints receive it (`${VAR}`
 * interpolated, defaults filled in). A sink's common fields (retry_count, condition...) are accepted
 * and ignored: a reachability check does not write.
 */
export function checkComponentConfig(
  kind: 'source' | 'sink',
  raw: unknown,
  opts: Pick<LoadOptions, 'env' | 'envAllow'> & { registry: Registry },
): { config?: ComponentConfig; diagnostics: Diagnostic[] } {
  const c = new Collector(undefined, new LineCounter());
  const expanded = expand(c, raw, opts, () => '');
  const value = expanded.value;
  if (!isObj(value) || typeof value.type !== 'string') {
    c.add('CFG_REQUIRED', ['type'], `a ${kind} config needs 'type'`);
    return { diagnostics: c.diagnostics };
  }
  const r = checkComponent(c, opts.registry, kind, [], value, kind === 'sink' ? SINK_COMMON_KEYS.filter((k) => k !== 'type') : []);
  return c.failed || !r ? { diagnostics: c.diagnostics } : { config: withExpansion(r.value, expanded.expansion), diagnostics: c.diagnostics };
}
