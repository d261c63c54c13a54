// The read-only MIB catalog of the operator console (spec doc 1 section 4): the flat object and
// notification lists, OID resolution, the export, and the browser (modules, module tree, OID
// subtree, search, node detail). All of it reads the active bundle of the MIB store
// (deps.mibs.index()) and its inventory; nothing here changes the store. Decisions: docs/console.md.
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { httpError } from '../../core/http-errors.js';
import { buildExport, EXPORT_FORMATS, EXPORT_TYPES, moduleRow, type ExportRequest } from '../../mib/export.js';
import { canonicalArc, OidSyntaxError, type MibIndex, type MibNode, type Resolution, type TreeNode } from '../../mib/mib-index.js';
import type { NodeKind } from '../../mib/types.js';
import { version } from '../../version.js';
import type { ConsoleDeps } from '../deps.js';

const tags = ['mibs'];

/** Node kinds `type_filter` accepts (comma-separated), and the shorthands for several. */
export const NODE_KINDS: readonly NodeKind[] = [
  'node',
  'module-identity',
  'object-identity',
  'scalar',
  'table',
  'row',
  'column',
  'notification',
  'trap',
  'object-group',
  'notification-group',
  'compliance',
  'capabilities',
];
export const KIND_ALIASES: Readonly<Record<string, NodeKind[]>> = {
  objects: ['scalar', 'table', 'row', 'column'],
  notifications: ['notification', 'trap'],
  groups: ['object-group', 'notification-group'],
  conformance: ['object-group', 'notification-group', 'compliance', 'capabilities'],
};
/** Deepest OID subtree one request may ask for (depth 10 below 1.3.6.1 is already the whole corpus). */
export const MAX_TREE_DEPTH = 10;
/** Page sizes of the flat lists and of search. */
export const LIST_LIMIT = { default: 1000, max: 10000 };
export const SEARCH_LIMIT = { default: 50, max: 500 };
/** SNMP bounds on an OID (RFC 2578 section 3.5): at most 128 arcs of at most 2^32-1. */
const MAX_ARCS = 128;
const MAX_ARC = 4294967295;
/** The OID roots, which no module defines (tree/oid takes them; node answers them as bare arcs). */
const ROOTS: Readonly<Record<string, string>> = { '0': 'ccitt', '1': 'iso', '2': 'joint-iso-ccitt' };

// ---- schemas (nodes are the compiled nodes of docs/mibs.md; their fields are open-ended)

const Open = (props: Record<string, TSchema>, description?: string) =>
  Type.Object(props, { additionalProperties: true, ...(description ? { description } : {}) });
const Node = Open(
  { name: Type.String(), module: Type.String(), oid: Type.String(), kind: Type.String() },
  'A compiled node (docs/mibs.md): name, module, oid, kind, status, access, syntax {type, base, tc, displayHint, enums, ranges, sizes}, units, index, augments, objects, description, ...',
);
const Page = { total: Type.Integer(), offset: Type.Integer(), limit: Type.Integer(), count: Type.Integer() };
const PageQuery = {
  module: Type.Optional(Type.String({ minLength: 1, description: 'only this module (404 when it is not in the active bundle)' })),
  limit: Type.Integer({ minimum: 1, maximum: LIST_LIMIT.max, default: LIST_LIMIT.default }),
  offset: Type.Integer({ minimum: 0, default: 0 }),
};
const TypeFilter = Type.Optional(
  Type.String({
    description: `comma-separated node kinds: ${NODE_KINDS.join(', ')}; or ${Object.keys(KIND_ALIASES).join(', ')}; empty or 'all' for every kind`,
  }),
);
const Tree: TSchema = Type.Unknown({ description: 'TreeNode {oid, name?, module?, kind?, type?, access?, childCount, children?}' });
const ExportBody = Type.Object(
  {
    format: Type.Union(
      EXPORT_FORMATS.map((f) => Type.Literal(f)),
      { default: 'json' },
    ),
    export_type: Type.Union(
      EXPORT_TYPES.map((t) => Type.Literal(t)),
      { default: 'catalog' },
    ),
    modules: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { default: [], maxItems: 10000 }),
    notifications: Type.Array(Type.String({ minLength: 1, maxLength: 400, description: 'MODULE::name' }), { default: [], maxItems: 10000 }),
    source_groups: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { default: [], maxItems: 1000 }),
  },
  { additionalProperties: false },
);

// ---- helpers

/** `a,b` -> kinds; undefined for no filter; 422 naming what is not a kind. */
export function parseTypeFilter(raw: string | undefined): NodeKind[] | undefined {
  const words = (raw ?? '')
    .split(',')
    .map((w) => w.trim().toLowerCase())
    .filter(Boolean);
  if (!words.length || words.includes('all')) return undefined;
  const kinds = new Set<NodeKind>();
  const bad: string[] = [];
  for (const w of words) {
    if (KIND_ALIASES[w]) KIND_ALIASES[w].forEach((k) => kinds.add(k));
    else if ((NODE_KINDS as string[]).includes(w)) kinds.add(w as NodeKind);
    else bad.push(w);
  }
  if (bad.length)
    throw httpError(
      'HTTP_INVALID',
      `type_filter: unknown node kind(s) ${bad.join(', ')}; use ${NODE_KINDS.join(', ')}, ${Object.keys(KIND_ALIASES).join(', ')} or all`,
    );
  return [...kinds];
}

/** `[MODULE::][.]component(.component)*`, a component being a number or an SMI name. */
const OID_TEXT = /^(?:[A-Za-z][A-Za-z0-9_-]*::)?\.?(?:[0-9]+|[A-Za-z][A-Za-z0-9_-]*)(?:\.(?:[0-9]+|[A-Za-z][A-Za-z0-9_-]*))*$/;

/**
 * What the index does not check: the form of a name path (the index reads `1..3` as an unknown
 * name), arcs beyond 2^32-1 (they would lose precision) and more than 128 arcs.
 */
function checkOidText(text: string): void {
  if (!OID_TEXT.test(text))
    throw httpError('HTTP_INVALID', `malformed OID '${text}': give a numeric OID (1.3.6.1.2.1.1.1.0) or a name (SNMPv2-MIB::sysDescr.0, sysDescr.0)`);
  // A leading dot is no arc; leading zeros are no digits (`01` is 1).
  const comps = text.replace(/^\./, '').split('.');
  if (comps.length > MAX_ARCS) throw httpError('HTTP_INVALID', `'${text}' has more than ${MAX_ARCS} arcs`);
  for (const c of comps) {
    const digits = canonicalArc(c);
    if (/^[0-9]+$/.test(c) && (digits.length > 10 || Number(digits) > MAX_ARC)) throw httpError('HTTP_INVALID', `'${text}': arc ${c} is beyond 4294967295`);
  }
}

/** Resolution of a numeric or symbolic OID: null for an unknown name, 422 for a malformed string. */
function resolveOid(index: MibIndex, text: string): Resolution | null {
  checkOidText(text);
  try {
    const r = index.resolve(text);
    if (r) checkOidText(r.oid);
    return r;
  } catch (e) {
    if (e instanceof OidSyntaxError) throw httpError('HTTP_INVALID', `malformed OID: ${e.message}`);
    throw e;
  }
}

function needModule(index: MibIndex, module: string | undefined): void {
  if (module !== undefined && !index.module(module))
    throw httpError('HTTP_MIB_NOT_FOUND', `module '${module}' is not in the active MIB bundle (see GET /api/mibs/browse/modules)`);
}

const isNotificationKind = (k: NodeKind) => k === 'notification' || k === 'trap';

/** The notification with its OBJECTS/VARIABLES resolved (like NodeDetail.members, plus `resolved`). */
function withMembers(index: MibIndex, n: MibNode) {
  return {
    ...n,
    members: (n.objects ?? []).map((o) => {
      // By qualified name first: the member's own module, not whichever module is preferred at that OID.
      const d = index.lookup(`${o.module}::${o.name}`) ?? (o.oid ? index.definitions(o.oid)[0] : undefined);
      return {
        ...o,
        resolved: !!d,
        ...(d ? { oid: d.oid, kind: d.kind } : {}),
        ...(d?.syntax ? { syntax: d.syntax } : {}),
        ...(d?.access ? { access: d.access } : {}),
        ...(d?.status ? { status: d.status } : {}),
        ...(d?.description ? { description: d.description } : {}),
      };
    }),
  };
}

const countNodes = (ts: TreeNode[]): number => ts.reduce((s, t) => s + 1 + countNodes(t.children ?? []), 0);

/** Header-safe JSON: non-ASCII as \uXXXX. */
const asciiJson = (v: unknown) => JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
/** Filters can be long lists: above this the header carries counts only. */
const MAX_FILTER_HEADER = 4096;

const isDownload = (v: string | undefined) => v === '1' || v === 'true';

function wantsRawCsv(req: FastifyRequest<{ Querystring: { download?: string } }>): boolean {
  if (isDownload(req.query.download)) return true;
  const first = String(req.headers.accept ?? '')
    .split(',')[0]!
    .split(';')[0]!
    .trim()
    .toLowerCase();
  return first === 'text/csv';
}

export default async function mibBrowseRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const index = () => deps.mibs.index();

  // ---- flat lists

  app.get(
    '/api/mibs/objects',
    {
      schema: {
        tags,
        summary: 'Flat list of OBJECT-TYPE nodes (scalars, tables, rows, columns) of the active bundle, in OID order, paged',
        querystring: Type.Object(PageQuery),
        response: { 200: Type.Object({ ...Page, objects: Type.Array(Node) }) },
      },
    },
    async (req: FastifyRequest<{ Querystring: { module?: string; limit: number; offset: number } }>) => {
      const { module, limit, offset } = req.query;
      const ix = index();
      needModule(ix, module);
      const all = ix.objects(module);
      const objects = all.slice(offset, offset + limit);
      return { total: all.length, offset, limit, count: objects.length, objects };
    },
  );

  app.get(
    '/api/mibs/traps',
    {
      schema: {
        tags,
        summary: 'Notifications of the active bundle (SMIv2 NOTIFICATION-TYPE and SMIv1 TRAP-TYPE) with their resolved members, in OID order, paged',
        querystring: Type.Object(PageQuery),
        response: {
          200: Type.Object({
            ...Page,
            traps: Type.Array(
              Open({ ...Node.properties, members: Type.Array(Open({ module: Type.String(), name: Type.String(), resolved: Type.Boolean() })) }),
            ),
          }),
        },
      },
    },
    async (req: FastifyRequest<{ Querystring: { module?: string; limit: number; offset: number } }>) => {
      const { module, limit, offset } = req.query;
      const ix = index();
      needModule(ix, module);
      const all = ix.notifications(module);
      const traps = all.slice(offset, offset + limit).map((n) => withMembers(ix, n));
      return { total: all.length, offset, limit, count: traps.length, traps };
    },
  );

  // ---- resolution

  app.get(
    '/api/mibs/resolve',
    {
      schema: {
        tags,
        summary: 'Resolve an OID: numeric or symbolic in; `mode=numeric` gives the dotted OID, `mode=symbolic` MODULE::name.suffix (default: the other form)',
        querystring: Type.Object({
          oid: Type.String({ minLength: 1, maxLength: 2048, description: 'IF-MIB::ifInOctets.3, ifInOctets.3, .iso.org.dod..., 1.3.6.1.2.1.2.2.1.10.3' }),
          mode: Type.Optional(Type.Union([Type.Literal('numeric'), Type.Literal('symbolic')])),
        }),
        response: {
          200: Type.Object({
            input: Type.String(),
            mode: Type.String(),
            result: Type.String({ description: 'the input in the requested form' }),
            oid: Type.String(),
            symbolic: Type.String(),
            module: Type.Union([Type.String(), Type.Null()]),
            name: Type.Union([Type.String(), Type.Null()]),
            kind: Type.Union([Type.String(), Type.Null()]),
            suffix: Type.String({ description: 'instance part after the node, "" for the node itself' }),
            exact: Type.Boolean({ description: 'the OID is a defined node (no instance suffix)' }),
          }),
        },
      },
    },
    async (req: FastifyRequest<{ Querystring: { oid: string; mode?: 'numeric' | 'symbolic' } }>) => {
      const input = req.query.oid.trim();
      const numericIn = /^\.?[0-9]+(\.[0-9]+)*$/.test(input);
      const mode = req.query.mode ?? (numericIn ? 'symbolic' : 'numeric');
      const r = resolveOid(index(), input);
      if (!r)
        throw httpError(
          'HTTP_MIB_NOT_FOUND',
          `unknown MIB name in '${input}': not in the active bundle (names are MODULE::name or a bare name; see GET /api/mibs/browse/search)`,
        );
      if (mode === 'symbolic' && !r.node) throw httpError('HTTP_MIB_NOT_FOUND', `no MIB node of the active bundle is a prefix of ${r.oid}`);
      const n = r.node;
      return {
        input,
        mode,
        result: mode === 'numeric' ? r.oid : r.symbolic,
        oid: r.oid,
        symbolic: r.symbolic,
        module: n?.module ?? null,
        name: n?.name ?? null,
        kind: n?.kind ?? null,
        suffix: n ? r.suffix : r.oid,
        exact: !!n && r.suffix === '',
      };
    },
  );

  // ---- export

  app.post(
    '/api/mibs/export',
    {
      schema: {
        tags,
        summary: 'Export the catalog (JSON, or CSV in a JSON envelope; raw text/csv with ?download=1 or Accept: text/csv). Always summary, filters, metadata',
        querystring: Type.Object({
          download: Type.Optional(
            Type.Union(
              ['1', 'true', '0', 'false'].map((v) => Type.Literal(v)),
              { description: 'answer as an attachment: raw text/csv for CSV (summary, filters, metadata in X-Export-* headers)' },
            ),
          ),
        }),
        body: ExportBody,
      },
    },
    async (req: FastifyRequest<{ Body: ExportRequest; Querystring: { download?: string } }>, reply: FastifyReply) => {
      const status = deps.mibs.status();
      const result = buildExport({ index: deps.mibs.index(), inventory: status.source_inventory, compiledAt: status.compiled_at, version }, req.body);
      const { metadata } = result;
      if (isDownload(req.query.download)) reply.header('content-disposition', `attachment; filename="${metadata.filename}"`);
      if (metadata.format === 'csv' && wantsRawCsv(req)) {
        const filters = asciiJson(result.filters);
        const { modules, notifications, source_groups } = result.filters;
        return reply
          .header('content-type', 'text/csv; charset=utf-8')
          .header('x-export-summary', asciiJson(result.summary))
          .header('x-export-metadata', asciiJson(metadata))
          .header(
            'x-export-filters',
            filters.length <= MAX_FILTER_HEADER
              ? filters
              : asciiJson({ truncated: true, modules: modules.length, notifications: notifications.length, source_groups: source_groups.length }),
          )
          .send(result.csv);
      }
      return result;
    },
  );

  // ---- browser

  app.get(
    '/api/mibs/browse/modules',
    {
      schema: {
        tags,
        summary: 'Modules of the active bundle with their source group, identity and node counts',
        response: {
          200: Type.Object({
            total: Type.Integer(),
            modules: Type.Array(
              Open({ module: Type.String(), source_group: Type.Union([Type.String(), Type.Null()]), source_path: Type.Union([Type.String(), Type.Null()]) }),
            ),
          }),
        },
      },
    },
    async () => {
      const ix = index();
      const active = new Map(
        deps.mibs
          .status()
          .source_inventory.filter((r) => r.status === 'active' && r.module)
          .map((r) => [r.module!, r]),
      );
      const modules = ix.modules().map((m) => {
        const r = active.get(m.module);
        return moduleRow(m, { group: r?.group ?? m.group ?? null, path: r?.path ?? m.file }, false);
      });
      return { total: modules.length, modules };
    },
  );

  app.get(
    '/api/mibs/browse/tree/module',
    {
      schema: {
        tags,
        summary: "One module's nodes as a tree, optionally only some node kinds (type_filter)",
        querystring: Type.Object({ module: Type.String({ minLength: 1 }), type_filter: TypeFilter }),
        response: {
          200: Type.Object({
            module: Type.String(),
            type_filter: Type.Array(Type.String()),
            count: Type.Integer({ description: 'nodes in the tree' }),
            tree: Type.Array(Tree),
          }),
        },
      },
    },
    async (req: FastifyRequest<{ Querystring: { module: string; type_filter?: string } }>) => {
      const ix = index();
      const kinds = parseTypeFilter(req.query.type_filter);
      needModule(ix, req.query.module);
      const tree = ix.moduleTree(req.query.module, kinds);
      return { module: req.query.module, type_filter: kinds ?? [], count: countNodes(tree), tree };
    },
  );

  app.get(
    '/api/mibs/browse/tree/oid',
    {
      schema: {
        tags,
        summary: `The OID subtree under root_oid (numeric or symbolic), depth levels (0..${MAX_TREE_DEPTH}), optionally only arcs leading to one module`,
        querystring: Type.Object({
          root_oid: Type.String({ minLength: 1, maxLength: 2048, default: '1.3.6.1' }),
          depth: Type.Integer({ minimum: 0, maximum: MAX_TREE_DEPTH, default: 1 }),
          module: Type.Optional(Type.String({ minLength: 1 })),
        }),
        response: {
          200: Type.Object({
            root_oid: Type.String(),
            symbolic: Type.String(),
            depth: Type.Integer(),
            module: Type.Union([Type.String(), Type.Null()]),
            tree: Tree,
          }),
        },
      },
    },
    async (req: FastifyRequest<{ Querystring: { root_oid: string; depth: number; module?: string } }>) => {
      const ix = index();
      const { root_oid, depth, module } = req.query;
      needModule(ix, module);
      const r = resolveOid(ix, root_oid.trim());
      if (!r) throw httpError('HTTP_MIB_NOT_FOUND', `unknown MIB name in root_oid '${root_oid}'`);
      const tree = ix.subtree(r.oid, depth, module);
      if (!tree) throw httpError('HTTP_MIB_NOT_FOUND', `no MIB node of the active bundle is at or below ${r.oid}`);
      return { root_oid: r.oid, symbolic: r.symbolic, depth, module: module ?? null, tree };
    },
  );

  app.get(
    '/api/mibs/browse/search',
    {
      schema: {
        tags,
        summary: 'Search node names (exact, prefix, substring) and descriptions, case-insensitive; an OID or MODULE::name that resolves comes first',
        querystring: Type.Object({
          q: Type.String({ minLength: 1, maxLength: 200 }),
          module: Type.Optional(Type.String({ minLength: 1 })),
          type_filter: TypeFilter,
          limit: Type.Integer({ minimum: 1, maximum: SEARCH_LIMIT.max, default: SEARCH_LIMIT.default }),
        }),
        response: {
          200: Type.Object({
            q: Type.String(),
            count: Type.Integer(),
            results: Type.Array(
              Open({
                name: Type.String(),
                module: Type.String(),
                oid: Type.String(),
                kind: Type.String(),
                match: Type.String({ description: 'oid, name or description' }),
              }),
            ),
          }),
        },
      },
    },
    async (req: FastifyRequest<{ Querystring: { q: string; module?: string; type_filter?: string; limit: number } }>) => {
      const ix = index();
      const { q, module, limit } = req.query;
      const kinds = parseTypeFilter(req.query.type_filter);
      needModule(ix, module);
      const keep = (n: MibNode) => (!module || n.module === module) && (!kinds || kinds.includes(n.kind));
      const hits: { node: MibNode; match: string }[] = [];
      // An OID or a qualified name the user pasted: its node first (when it passes the filters).
      let exact: MibNode | undefined;
      try {
        const r = q.includes('.') || q.includes('::') ? ix.resolve(q.trim()) : null;
        if (r?.node && r.suffix === '') exact = q.includes('::') && !/^\.?[0-9]/.test(q) ? (ix.lookup(q.trim().split('.')[0]!) ?? r.node) : r.node;
      } catch {
        // not an OID: a plain search
      }
      if (exact && keep(exact)) hits.push({ node: exact, match: 'oid' });
      const needle = q.toLowerCase();
      for (const n of ix.search(q, { ...(module ? { module } : {}), ...(kinds ? { kinds } : {}), limit: limit + 1 })) {
        if (n === exact) continue;
        hits.push({ node: n, match: n.name.toLowerCase().includes(needle) ? 'name' : 'description' });
      }
      const results = hits.slice(0, limit).map(({ node: n, match }) => ({
        name: n.name,
        module: n.module,
        oid: n.oid,
        kind: n.kind,
        ...(n.syntax ? { type: n.syntax.type } : {}),
        ...(n.access ? { access: n.access } : {}),
        ...(n.status ? { status: n.status } : {}),
        match,
      }));
      return { q, count: results.length, results };
    },
  );

  app.get(
    '/api/mibs/browse/node/:oid',
    {
      schema: {
        tags,
        summary:
          'Node detail by numeric OID or name (MODULE::name or bare): all compiled fields, breadcrumb, children, members of a notification, notifications carrying an object',
        params: Type.Object({ oid: Type.String({ minLength: 1, maxLength: 2048 }) }),
        response: {
          200: Open({
            ...Node.properties,
            module: Type.Union([Type.String(), Type.Null()], { description: 'null for the roots ccitt, iso and joint-iso-ccitt, which no module defines' }),
            breadcrumb: Type.Array(Open({ oid: Type.String() })),
            children: Type.Array(Open({ oid: Type.String() })),
            alsoDefinedIn: Type.Array(Type.String()),
            usedInNotifications: Type.Array(Open({ module: Type.String(), name: Type.String(), oid: Type.String(), kind: Type.String() })),
          }),
        },
      },
    },
    async (req: FastifyRequest<{ Params: { oid: string } }>) => {
      const ix = index();
      const text = req.params.oid.trim();
      const r = resolveOid(ix, text);
      if (!r) throw httpError('HTTP_MIB_NOT_FOUND', `unknown MIB name '${text}': not in the active bundle`);
      const root = !r.node && ROOTS[r.oid] ? ix.subtree(r.oid, 1) : undefined;
      if (root) {
        const children = (root.children ?? []).map((c) => ({ oid: c.oid, ...(c.name ? { name: c.name, module: c.module } : {}) }));
        return {
          oid: r.oid,
          name: ROOTS[r.oid],
          module: null,
          kind: 'node',
          breadcrumb: [{ oid: r.oid, name: ROOTS[r.oid] }],
          children,
          alsoDefinedIn: [],
          usedInNotifications: [],
        };
      }
      if (!r.node) throw httpError('HTTP_MIB_NOT_FOUND', `no MIB node of the active bundle is a prefix of ${r.oid}`);
      if (r.suffix)
        throw httpError(
          'HTTP_MIB_NOT_FOUND',
          `${text} is an instance (.${r.suffix}) of ${r.node.module}::${r.node.name}, not a node: ask for /api/mibs/browse/node/${r.node.oid}`,
        );
      const detail = ix.node(r.oid)!;
      // A qualified name asks for that module's definition, also where another module's is preferred at this OID.
      const asked = text.includes('::') ? ix.lookup(text) : undefined;
      const own: MibNode = asked && asked.oid === detail.oid ? asked : detail;
      const alsoDefinedIn = ix
        .definitions(detail.oid)
        .map((d) => d.module)
        .filter((m) => m !== own.module);
      const { members: _members, ...base } = detail;
      const breadcrumb = [...detail.breadcrumb.slice(0, -1), { oid: own.oid, name: own.name, module: own.module }];
      const body = { ...base, ...own, breadcrumb, children: detail.children, alsoDefinedIn };
      const usedIn = ix
        .notifications()
        .filter((n) => n.objects?.some((o) => o.module === own.module && o.name === own.name))
        .map((n) => ({ module: n.module, name: n.name, oid: n.oid, kind: n.kind }));
      return { ...(isNotificationKind(own.kind) ? withMembers(ix, { ...body } as MibNode) : body), usedInNotifications: usedIn };
    },
  );
}
