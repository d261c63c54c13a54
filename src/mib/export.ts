// The MIB catalog export (POST /api/mibs/export, spec doc 1 section 2): modules, objects and
// notifications of the active bundle (or of named source groups) as JSON sections or one CSV table.
// Pure: built from a MibIndex and the store's source inventory, no HTTP. Decisions: docs/console.md.
import { stringify } from 'csv-stringify/sync';
import type { MibIndex } from './mib-index.js';
import type { SourceRow } from './store.js';
import type { CompiledModule, CompiledNode, CompiledSyntax, NodeKind, Range, SymbolRef } from './types.js';
import { httpError } from '../core/http-errors.js';

export const EXPORT_FORMATS = ['json', 'csv'] as const;
export const EXPORT_TYPES = ['catalog', 'summary', 'modules', 'objects', 'notifications'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export type ExportType = (typeof EXPORT_TYPES)[number];

export interface ExportRequest {
  format?: ExportFormat;
  export_type?: ExportType;
  modules?: string[];
  /** `MODULE::name` */
  notifications?: string[];
  source_groups?: string[];
}

export interface ExportInput {
  index: MibIndex;
  /** The store's `source_inventory` (active, shadowed and failed rows). */
  inventory: SourceRow[];
  /** When the active bundle was compiled (metadata only). */
  compiledAt?: string;
  version?: string;
  /** Defaults to now; tests pin it. */
  now?: Date;
}

/**
 * Most characters of notification members' text (their objects' descriptions, 128 more per member)
 * one export may carry. Each member repeats its object's description, and a module may list one
 * object thousands of times: the compiled-size limit of the modules does not bound this product.
 */
export const EXPORT_MAX_MEMBER_CHARS = 64 << 20;

export interface ExportModule {
  module: string | null;
  source_group: string | null;
  source_path: string | null;
  status: 'active' | 'shadowed' | 'failed';
  /** shadowed rows: the active source of that module */
  shadowed_by?: { path: string; group: string };
  smi?: 'v1' | 'v2';
  /** MODULE-IDENTITY OID */
  oid?: string;
  last_updated?: string;
  organization?: string;
  description?: string;
  imports: string[];
  nodes: number;
  objects: number;
  notifications: number;
  /** failed rows: `file:line:column message` of each error */
  errors?: string[];
  missing?: string[];
}

export interface ExportObject {
  module: string;
  source_group: string | null;
  name: string;
  oid: string;
  kind: NodeKind;
  syntax?: string;
  base_type?: string;
  textual_convention?: string;
  display_hint?: string;
  access?: string;
  status?: string;
  units?: string;
  enums?: Record<string, number>;
  ranges?: Range[];
  sizes?: Range[];
  /** `MODULE::name`, `IMPLIED ` before an implied last index */
  index?: string[];
  augments?: string;
  defval?: string;
  description?: string;
}

export interface ExportMember {
  /** 1-based, the order of OBJECTS/VARIABLES (the varbind order after sysUpTime and snmpTrapOID) */
  position: number;
  module: string;
  name: string;
  oid?: string;
  /** false when the member's definition is not in the active bundle */
  resolved: boolean;
  kind?: NodeKind;
  syntax?: string;
  base_type?: string;
  access?: string;
  status?: string;
  description?: string;
}

export interface ExportNotification {
  module: string;
  source_group: string | null;
  name: string;
  oid: string;
  kind: 'notification' | 'trap';
  status?: string;
  description?: string;
  /** SMIv1 TRAP-TYPE: ENTERPRISE OID and specific-trap number */
  enterprise?: string;
  trap_number?: number;
  members: ExportMember[];
}

/** One row per member (or one row with empty member columns for a notification without members). */
export interface ExportMemberRow {
  notification_module: string;
  notification_name: string;
  notification_oid: string;
  notification_kind: 'notification' | 'trap';
  notification_status: string;
  source_group: string;
  member_position: number | '';
  member_module: string;
  member_name: string;
  member_oid: string;
  member_kind: string;
  member_syntax: string;
  member_base_type: string;
  member_access: string;
  member_resolved: boolean | '';
  member_description: string;
}

export interface ExportSummary {
  export_type: ExportType;
  format: ExportFormat;
  scope: 'active-bundle' | 'source-groups';
  modules: number;
  active_modules: number;
  shadowed_modules: number;
  failed_modules: number;
  objects: number;
  notifications: number;
  notification_members: number;
  objects_by_kind: Record<'scalar' | 'table' | 'row' | 'column', number>;
  notifications_by_kind: Record<'notification' | 'trap', number>;
  source_groups: { group: string; modules: number; active: number; shadowed: number; failed: number }[];
}

export interface ExportFilters {
  modules: string[];
  notifications: string[];
  source_groups: string[];
}

export interface ExportMetadata {
  generated_at: string;
  generator: string;
  version?: string;
  export_type: ExportType;
  format: ExportFormat;
  scope: 'active-bundle' | 'source-groups';
  /** true for active-bundle exports: every module once, its active source only */
  deduplicated: boolean;
  compiled_at?: string;
  /** modules in the whole active bundle (not only the exported ones) */
  active_bundle_modules: number;
  /** the sections this export carries (JSON) or the record types of its rows (CSV) */
  sections: string[];
  content_type: 'application/json' | 'text/csv';
  filename: string;
  /** CSV only: the header row and the number of data rows */
  csv_columns?: string[];
  csv_rows?: number;
}

export interface ExportResult {
  summary: ExportSummary;
  filters: ExportFilters;
  metadata: ExportMetadata;
  modules?: ExportModule[];
  objects?: ExportObject[];
  notifications?: ExportNotification[];
  notification_members?: ExportMemberRow[];
  /** CSV exports: the table as text (RFC 4180, header row first) */
  csv?: string;
}

const OBJECT_KINDS: ReadonlySet<NodeKind> = new Set(['scalar', 'table', 'row', 'column']);
const isNotification = (n: CompiledNode): n is CompiledNode & { kind: 'notification' | 'trap' } => n.kind === 'notification' || n.kind === 'trap';
const uniq = (xs: string[] | undefined): string[] => [...new Set((xs ?? []).map((x) => x.trim()).filter(Boolean))];
const ref = (r: SymbolRef) => `${r.module}::${r.name}`;

/** SMI range text: `0..255`, `1`, several joined by ` | `. */
export function rangeText(rs: Range[] | undefined): string {
  return (rs ?? []).map(([a, b]) => (String(a) === String(b) ? String(a) : `${a}..${b}`)).join(' | ');
}

/** `up(1) down(2)` */
export function enumText(e: Record<string, number> | undefined): string {
  return Object.entries(e ?? {})
    .map(([k, v]) => `${k}(${v})`)
    .join(' ');
}

function syntaxFields(s: CompiledSyntax | undefined) {
  if (!s) return {};
  return {
    syntax: s.type,
    base_type: s.base,
    ...(s.tc ? { textual_convention: `${s.tc.module}::${s.tc.name}` } : {}),
    ...(s.displayHint ? { display_hint: s.displayHint } : {}),
    ...(s.enums ? { enums: s.enums } : {}),
    ...(s.ranges ? { ranges: s.ranges } : {}),
    ...(s.sizes ? { sizes: s.sizes } : {}),
  };
}

export function objectRow(n: CompiledNode, group: string | null): ExportObject {
  return {
    module: n.module,
    source_group: group,
    name: n.name,
    oid: n.oid,
    kind: n.kind,
    ...syntaxFields(n.syntax),
    ...(n.access ? { access: n.access } : {}),
    ...(n.status ? { status: n.status } : {}),
    ...(n.units ? { units: n.units } : {}),
    ...(n.index ? { index: n.index.map((i) => (i.implied ? 'IMPLIED ' : '') + ref(i)) } : {}),
    ...(n.augments ? { augments: ref(n.augments) } : {}),
    ...(n.defval ? { defval: n.defval } : {}),
    ...(n.description ? { description: n.description } : {}),
  };
}

/** The OBJECTS/VARIABLES of a notification with their definitions from the index. */
export function notificationMembers(index: MibIndex, n: CompiledNode): ExportMember[] {
  return (n.objects ?? []).map((o, i) => {
    // By qualified name first: the member's own module, not whichever module is preferred at that OID.
    const d = index.lookup(ref(o)) ?? (o.oid ? index.definitions(o.oid)[0] : undefined);
    const base = { position: i + 1, module: o.module, name: o.name, ...(o.oid ? { oid: o.oid } : {}) };
    if (!d) return { ...base, resolved: false };
    return {
      ...base,
      oid: d.oid,
      resolved: true,
      kind: d.kind,
      ...(d.syntax ? { syntax: d.syntax.type, base_type: d.syntax.base } : {}),
      ...(d.access ? { access: d.access } : {}),
      ...(d.status ? { status: d.status } : {}),
      ...(d.description ? { description: d.description } : {}),
    };
  });
}

export function notificationRow(index: MibIndex, n: CompiledNode & { kind: 'notification' | 'trap' }, group: string | null): ExportNotification {
  return {
    module: n.module,
    source_group: group,
    name: n.name,
    oid: n.oid,
    kind: n.kind,
    ...(n.status ? { status: n.status } : {}),
    ...(n.description ? { description: n.description } : {}),
    ...(n.enterprise ? { enterprise: n.enterprise } : {}),
    ...(n.trapNumber !== undefined ? { trap_number: n.trapNumber } : {}),
    members: notificationMembers(index, n),
  };
}

function memberRows(n: ExportNotification): ExportMemberRow[] {
  const parent = {
    notification_module: n.module,
    notification_name: n.name,
    notification_oid: n.oid,
    notification_kind: n.kind,
    notification_status: n.status ?? '',
    source_group: n.source_group ?? '',
  };
  const empty = {
    member_position: '' as const,
    member_module: '',
    member_name: '',
    member_oid: '',
    member_kind: '',
    member_syntax: '',
    member_base_type: '',
    member_access: '',
    member_resolved: '' as const,
    member_description: '',
  };
  if (!n.members.length) return [{ ...parent, ...empty }];
  return n.members.map((m) => ({
    ...parent,
    member_position: m.position,
    member_module: m.module,
    member_name: m.name,
    member_oid: m.oid ?? '',
    member_kind: m.kind ?? '',
    member_syntax: m.syntax ?? '',
    member_base_type: m.base_type ?? '',
    member_access: m.access ?? '',
    member_resolved: m.resolved,
    member_description: m.description ?? '',
  }));
}

/** Module row of an active compiled module (counts from its own nodes). */
export function moduleRow(m: CompiledModule, src: { group: string | null; path: string | null }, withDescription = true): ExportModule {
  const id = m.identity;
  return {
    module: m.module,
    source_group: src.group,
    source_path: src.path,
    status: 'active',
    smi: m.smi,
    ...(id?.oid ? { oid: id.oid } : {}),
    ...(id?.lastUpdated ? { last_updated: id.lastUpdated } : {}),
    ...(id?.organization ? { organization: id.organization } : {}),
    ...(withDescription && id?.description ? { description: id.description } : {}),
    imports: m.imports.map((i) => i.module),
    nodes: m.nodes.length,
    objects: m.nodes.filter((n) => OBJECT_KINDS.has(n.kind)).length,
    notifications: m.nodes.filter(isNotification).length,
  };
}

function inventoryRow(r: SourceRow): ExportModule {
  return {
    module: r.module,
    source_group: r.group,
    source_path: r.path,
    status: r.status,
    ...(r.shadowed_by ? { shadowed_by: r.shadowed_by } : {}),
    ...(r.last_updated ? { last_updated: r.last_updated } : {}),
    imports: [],
    nodes: 0,
    objects: 0,
    notifications: 0,
    ...(r.errors ? { errors: r.errors.map((e) => `${e.file}:${e.line}:${e.column} ${e.message}`) } : {}),
    ...(r.missing?.length ? { missing: r.missing } : {}),
  };
}

// ---- CSV columns (JSON arrays and objects become text: enums `up(1) down(2)`, ranges `0..255 | 300`, lists space-separated)

const MODULE_COLUMNS = [
  'module',
  'source_group',
  'source_path',
  'status',
  'shadowed_by',
  'smi',
  'oid',
  'last_updated',
  'organization',
  'imports',
  'nodes',
  'objects',
  'notifications',
  'errors',
  'description',
];
const OBJECT_COLUMNS = [
  'module',
  'source_group',
  'name',
  'oid',
  'kind',
  'syntax',
  'base_type',
  'textual_convention',
  'display_hint',
  'access',
  'status',
  'units',
  'enums',
  'ranges',
  'sizes',
  'index',
  'augments',
  'defval',
  'description',
];
const MEMBER_COLUMNS: (keyof ExportMemberRow)[] = [
  'notification_module',
  'notification_name',
  'notification_oid',
  'notification_kind',
  'notification_status',
  'source_group',
  'member_position',
  'member_module',
  'member_name',
  'member_oid',
  'member_kind',
  'member_syntax',
  'member_base_type',
  'member_access',
  'member_resolved',
  'member_description',
];
const SUMMARY_COLUMNS = ['key', 'value'];
/** catalog CSV: one table, `record_type` first, the union of the other tables' columns. */
const CATALOG_COLUMNS = ['record_type', ...new Set([...MODULE_COLUMNS, ...OBJECT_COLUMNS, ...MEMBER_COLUMNS])];

function csvModule(m: ExportModule): Record<string, unknown> {
  return { ...m, shadowed_by: m.shadowed_by?.path ?? '', imports: m.imports.join(' '), errors: (m.errors ?? []).join(' | ') };
}

function csvObject(o: ExportObject): Record<string, unknown> {
  return { ...o, enums: enumText(o.enums), ranges: rangeText(o.ranges), sizes: rangeText(o.sizes), index: (o.index ?? []).join(' ') };
}

function summaryRows(s: ExportSummary): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const [k, v] of Object.entries(s)) {
    if (k === 'source_groups')
      for (const g of s.source_groups)
        rows.push({ key: `source_group.${g.group}`, value: `modules=${g.modules} active=${g.active} shadowed=${g.shadowed} failed=${g.failed}` });
    else if (typeof v === 'object' && v) for (const [kk, vv] of Object.entries(v)) rows.push({ key: `${k}.${kk}`, value: vv });
    else rows.push({ key: k, value: v });
  }
  return rows;
}

const toCsv = (rows: Record<string, unknown>[], columns: string[]) => stringify(rows, { header: true, columns, cast: { boolean: (b) => String(b) } });

/**
 * Builds the export. Scope: without `source_groups`, the active bundle (each module once, from its
 * active source); with them, every inventory row of those groups (shadowed and failed sources
 * listed as such; objects and notifications only of the compiled, active ones). `modules` and
 * `notifications` narrow the scope further (see docs/console.md).
 */
export function buildExport(input: ExportInput, req: ExportRequest = {}): ExportResult {
  const format = req.format ?? 'json';
  const type = req.export_type ?? 'catalog';
  if (!EXPORT_FORMATS.includes(format)) throw httpError('HTTP_MIB_EXPORT_INVALID', `format '${String(format)}' is not one of ${EXPORT_FORMATS.join(', ')}`);
  if (!EXPORT_TYPES.includes(type)) throw httpError('HTTP_MIB_EXPORT_INVALID', `export_type '${String(type)}' is not one of ${EXPORT_TYPES.join(', ')}`);
  const { index, inventory } = input;
  const filters: ExportFilters = { modules: uniq(req.modules), notifications: uniq(req.notifications), source_groups: uniq(req.source_groups) };
  const byGroups = filters.source_groups.length > 0;
  const activeSource = new Map(inventory.filter((r) => r.status === 'active' && r.module).map((r) => [r.module!, r]));

  // ---- check the names: everything wrong in one answer
  const knownGroups = new Set(inventory.map((r) => r.group));
  const badGroups = filters.source_groups.filter((g) => !knownGroups.has(g));
  if (badGroups.length)
    throw httpError('HTTP_MIB_NOT_FOUND', `unknown source group(s): ${badGroups.join(', ')} (known: ${[...knownGroups].sort().join(', ') || 'none'})`);
  const groupRows = byGroups ? inventory.filter((r) => filters.source_groups.includes(r.group)) : [];

  const unknownModules: string[] = [];
  const outOfScope: string[] = [];
  for (const m of filters.modules) {
    if (byGroups) {
      if (!groupRows.some((r) => r.module === m)) (index.module(m) || inventory.some((r) => r.module === m) ? outOfScope : unknownModules).push(m);
    } else if (!index.module(m)) {
      const row = inventory.find((r) => r.module === m);
      unknownModules.push(row ? `${m} (${row.status}, not in the active bundle)` : m);
    }
  }
  const named: (CompiledNode & { kind: 'notification' | 'trap' })[] = [];
  const malformed: string[] = [];
  const unknownNotifications: string[] = [];
  const notNotifications: string[] = [];
  for (const q of filters.notifications) {
    const parts = q.split('::');
    if (parts.length !== 2 || !parts[0] || !parts[1] || /[\s.]/.test(parts[1])) {
      malformed.push(q);
      continue;
    }
    const n = index.lookup(q);
    if (!n) unknownNotifications.push(q);
    else if (!isNotification(n)) notNotifications.push(`${q} (${n.kind})`);
    else named.push(n);
  }
  if (unknownModules.length || unknownNotifications.length) {
    const parts = [];
    if (unknownModules.length) parts.push(`unknown module(s): ${unknownModules.join(', ')}`);
    if (unknownNotifications.length) parts.push(`unknown notification(s): ${unknownNotifications.join(', ')}`);
    throw httpError('HTTP_MIB_NOT_FOUND', parts.join('; '));
  }
  const problems: string[] = [];
  if (malformed.length) problems.push(`notification name(s) not of the form MODULE::name: ${malformed.join(', ')}`);
  if (notNotifications.length) problems.push(`not a NOTIFICATION-TYPE or TRAP-TYPE: ${notNotifications.join(', ')}`);
  if (outOfScope.length) problems.push(`module(s) not in source group(s) ${filters.source_groups.join(', ')}: ${outOfScope.join(', ')}`);
  for (const n of named) {
    if (filters.modules.length && !filters.modules.includes(n.module))
      problems.push(`notification ${n.module}::${n.name} is not in the selected module(s) ${filters.modules.join(', ')}`);
    else if (byGroups && !groupRows.some((r) => r.module === n.module && r.status === 'active'))
      problems.push(`notification ${n.module}::${n.name}: its module is not active in source group(s) ${filters.source_groups.join(', ')}`);
  }
  if (problems.length) throw httpError('HTTP_MIB_EXPORT_INVALID', problems.join('; '));

  // ---- the module rows in scope
  const moduleScope = filters.modules.length ? new Set(filters.modules) : named.length ? new Set(named.map((n) => n.module)) : undefined;
  const inScope = (name: string | null) => !moduleScope || (name !== null && moduleScope.has(name));
  let modules: ExportModule[];
  if (byGroups) {
    modules = groupRows
      .filter((r) => inScope(r.module))
      .map((r) => {
        const m = r.status === 'active' && r.module ? index.module(r.module) : undefined;
        return m ? moduleRow(m, { group: r.group, path: r.path }) : inventoryRow(r);
      })
      .sort(
        (a, b) =>
          (a.source_group ?? '').localeCompare(b.source_group ?? '') ||
          (a.module ?? '').localeCompare(b.module ?? '') ||
          (a.source_path ?? '').localeCompare(b.source_path ?? ''),
      );
  } else {
    modules = index
      .modules()
      .filter((m) => inScope(m.module))
      .map((m) => {
        const r = activeSource.get(m.module);
        return moduleRow(m, { group: r?.group ?? m.group ?? null, path: r?.path ?? m.file });
      });
  }
  const groupOf = new Map(modules.filter((m) => m.status === 'active' && m.module).map((m) => [m.module!, m.source_group]));

  // ---- objects and notifications of the active modules in scope, in OID order
  const objects: ExportObject[] = [];
  const notifications: ExportNotification[] = [];
  const namedSet = named.length ? new Set(named.map((n) => `${n.module}::${n.name}`)) : undefined;
  for (const n of index.all()) {
    if (!groupOf.has(n.module)) continue;
    const group = groupOf.get(n.module)!;
    if (OBJECT_KINDS.has(n.kind)) objects.push(objectRow(n, group));
    else if (isNotification(n) && (!namedSet || namedSet.has(`${n.module}::${n.name}`))) notifications.push(notificationRow(index, n, group));
  }
  let memberChars = 0;
  for (const n of notifications) for (const m of n.members) memberChars += 128 + (m.description?.length ?? 0);
  if (memberChars > EXPORT_MAX_MEMBER_CHARS && (type === 'notifications' || type === 'catalog')) {
    throw httpError(
      'HTTP_MIB_EXPORT_INVALID',
      `the export's notification members would be about ${Math.ceil(memberChars / (1 << 20))} MiB of text (at most ${EXPORT_MAX_MEMBER_CHARS >> 20} MiB; each member repeats its object's description): narrow it with modules, notifications or source_groups, or export objects or modules only`,
    );
  }
  const members = notifications.flatMap(memberRows);

  // ---- summary, metadata
  const scope = byGroups ? 'source-groups' : 'active-bundle';
  const count = <T>(xs: T[], f: (x: T) => boolean) => xs.filter(f).length;
  const groups = new Map<string, ExportSummary['source_groups'][number]>();
  for (const m of modules) {
    const key = m.source_group ?? '';
    const g = groups.get(key) ?? { group: key, modules: 0, active: 0, shadowed: 0, failed: 0 };
    groups.set(key, g);
    g.modules++;
    g[m.status]++;
  }
  const summary: ExportSummary = {
    export_type: type,
    format,
    scope,
    modules: modules.length,
    active_modules: count(modules, (m) => m.status === 'active'),
    shadowed_modules: count(modules, (m) => m.status === 'shadowed'),
    failed_modules: count(modules, (m) => m.status === 'failed'),
    objects: objects.length,
    notifications: notifications.length,
    notification_members: notifications.reduce((s, n) => s + n.members.length, 0),
    objects_by_kind: { scalar: 0, table: 0, row: 0, column: 0 },
    notifications_by_kind: { notification: 0, trap: 0 },
    source_groups: [...groups.values()].sort((a, b) => a.group.localeCompare(b.group)),
  };
  for (const o of objects) summary.objects_by_kind[o.kind as keyof ExportSummary['objects_by_kind']]++;
  for (const n of notifications) summary.notifications_by_kind[n.kind]++;

  const now = input.now ?? new Date();
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  const sections: Record<ExportType, string[]> = {
    summary: [],
    modules: ['modules'],
    objects: ['objects'],
    notifications: ['notifications', 'notification_members'],
    catalog: ['modules', 'objects', 'notifications', 'notification_members'],
  };
  const metadata: ExportMetadata = {
    generated_at: now.toISOString(),
    generator: 'svc operator console',
    ...(input.version ? { version: input.version } : {}),
    export_type: type,
    format,
    scope,
    deduplicated: !byGroups,
    ...(input.compiledAt ? { compiled_at: input.compiledAt } : {}),
    active_bundle_modules: index.modules().length,
    sections: sections[type],
    content_type: format === 'csv' ? 'text/csv' : 'application/json',
    filename: `mib-${type}-${stamp}.${format}`,
  };
  const result: ExportResult = { summary, filters, metadata };

  if (format === 'json') {
    const s = new Set(sections[type]);
    if (s.has('modules')) result.modules = modules;
    if (s.has('objects')) result.objects = objects;
    if (s.has('notifications')) result.notifications = notifications;
    if (s.has('notification_members')) result.notification_members = members;
    return result;
  }

  let rows: Record<string, unknown>[];
  let columns: string[];
  switch (type) {
    case 'summary':
      rows = summaryRows(summary);
      columns = SUMMARY_COLUMNS;
      metadata.sections = ['summary'];
      break;
    case 'modules':
      rows = modules.map(csvModule);
      columns = MODULE_COLUMNS;
      break;
    case 'objects':
      rows = objects.map(csvObject);
      columns = OBJECT_COLUMNS;
      break;
    case 'notifications':
      rows = members as unknown as Record<string, unknown>[];
      columns = MEMBER_COLUMNS;
      metadata.sections = ['notification_members'];
      break;
    case 'catalog':
      rows = [
        ...modules.map((m) => ({ record_type: 'module', ...csvModule(m) })),
        ...objects.map((o) => ({ record_type: 'object', ...csvObject(o) })),
        ...members.map((m) => ({ record_type: 'notification_member', ...m })),
      ];
      columns = CATALOG_COLUMNS;
      metadata.sections = ['module', 'object', 'notification_member'];
      break;
  }
  metadata.csv_columns = columns;
  metadata.csv_rows = rows.length;
  result.csv = toCsv(rows, columns);
  return result;
}
