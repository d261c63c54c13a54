// A wire-level fake of the Kubernetes API server, limited to the core/v1 Services calls svc makes
// (no API server can run here). It answers as kube-apiserver does, Status bodies included:
// - every request needs `Authorization: Bearer <token>` (401 otherwise);
// - verbs can be forbidden per name to stand for missing RBAC (403, the apiserver's message);
// - creating needs the namespace to exist (404 `namespaces "x" not found`); reading there finds nothing;
// - GET one (200/404), LIST with labelSelector (=, ==, !=, in, notin, exists, !exists; 400 on a bad one),
//   DELETE (200 with the deleted Service, as the services registry returns it; 404), POST create
//   (201; 409 AlreadyExists);
// - PATCH is server-side apply only: the Content-Type must be application/apply-patch+yaml (415,
//   the apiserver's message, otherwise: the other patch types are not implemented here), the
//   fieldManager is required (422 on PatchOptions), name and namespace must match the URL (400);
//   201 when it creates, 200 when it updates; fields owned by another manager with another value
//   are a 409 conflict unless force=true; resourceVersion moves only when the object changes;
// - Service validation as the apiserver does it for what svc sets (422 Invalid with causes):
//   DNS-1035 name, type, ports, protocols, nodePort range and uniqueness across the cluster (also
//   within one Service), nodePort or externalTrafficPolicy on a ClusterIP Service;
// - allocation: clusterIP, and nodePorts for NodePort/LoadBalancer; an unset nodePort keeps the
//   one the Service already had for that port (the registry's patchAllocatedValues).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';

// Services as JSON: any shape the client sends.
type Obj = Record<string, any>;

export const APPLY_PATCH = 'application/apply-patch+yaml';
const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS_1035_MESSAGE =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

export interface FakeKubeApiOptions {
  /** The bearer token every request must carry. */
  token: string;
  /** Namespaces that exist (default: ['default']). */
  namespaces?: string[];
  /** The cluster's --service-node-port-range (default 30000-32767). */
  nodePortRange?: [number, number];
  /** Verbs (get, list, create, patch, delete) the caller's RBAC does not allow. */
  forbid?: string[];
  /** The caller, as named in a 403. */
  user?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  status: number;
}

interface Entry {
  obj: Obj;
  /** Field path (.spec.type, .metadata.labels.k) -> the manager that owns it. */
  owners: Map<string, string>;
}

class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: Obj,
  ) {
    super(message);
  }
}

const notFound = (kind: string, name: string) => new ApiError(404, 'NotFound', `${kind} "${name}" not found`, { name, kind });

function invalid(
  name: string,
  causes: { field: string; type: 'FieldValueInvalid' | 'FieldValueRequired' | 'FieldValueForbidden' | 'FieldValueNotSupported'; detail: string }[],
) {
  const list = causes.map((c) => `${c.field}: ${c.detail}`);
  return new ApiError(422, 'Invalid', `Service "${name}" is invalid: ${list.length > 1 ? `[${list.join(', ')}]` : list[0]}`, {
    name,
    kind: 'Service',
    causes: causes.map((c) => ({ reason: c.type, message: c.detail, field: c.field })),
  });
}

/** Parses a label selector as the apiserver does (equality- and set-based). */
export function parseSelector(selector: string): ((labels: Record<string, string>) => boolean) | ApiError {
  const terms: ((l: Record<string, string>) => boolean)[] = [];
  // Split on the commas outside parentheses: `a in (x,y),b` is two requirements.
  const parts: string[] = [''];
  let depth = 0;
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) parts.push('');
    else parts[parts.length - 1] += ch;
  }
  for (const raw of parts.map((p) => p.trim()).filter(Boolean)) {
    let m: RegExpExecArray | null;
    if ((m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(raw))) {
      const [, key, op, list] = m;
      const values = new Set(list!.split(',').map((v) => v.trim()));
      terms.push(op === 'in' ? (l) => values.has(l[key!]!) : (l) => !values.has(l[key!]!));
    } else if ((m = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(raw))) {
      const [, key, op, value] = m;
      terms.push(op === '!=' ? (l) => l[key!] !== value : (l) => l[key!] === value);
    } else if ((m = /^(!?)([\w./-]+)$/.exec(raw))) {
      const [, not, key] = m;
      terms.push(not ? (l) => !(key! in l) : (l) => key! in l);
    } else {
      return new ApiError(400, 'BadRequest', `unable to parse requirement: found '${raw}', expected: identifier`);
    }
  }
  return (labels) => terms.every((t) => t(labels));
}

/** The paths apply takes ownership of: each label and annotation, each top-level spec field. */
function fieldPaths(obj: Obj): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(obj.metadata?.labels ?? {})) out.set(`.metadata.labels.${k}`, JSON.stringify(v));
  for (const [k, v] of Object.entries(obj.metadata?.annotations ?? {})) out.set(`.metadata.annotations.${k}`, JSON.stringify(v));
  for (const [k, v] of Object.entries(obj.spec ?? {})) out.set(`.spec.${k}`, JSON.stringify(v));
  return out;
}

function valueAt(obj: Obj, path: string): unknown {
  const [, section, key, sub] = /^\.(metadata|spec)\.([^.]+)(?:\.(.+))?$/.exec(path)!;
  const v = obj[section!]?.[key!];
  return sub === undefined ? v : v?.[sub];
}

function setAt(obj: Obj, path: string, value: unknown) {
  const [, section, key, sub] = /^\.(metadata|spec)\.([^.]+)(?:\.(.+))?$/.exec(path)!;
  obj[section!] ??= {};
  if (sub === undefined) {
    if (value === undefined) delete obj[section!][key!];
    else obj[section!][key!] = value;
    return;
  }
  obj[section!][key!] ??= {};
  if (value === undefined) delete obj[section!][key!][sub];
  else obj[section!][key!][sub] = value;
  if (Object.keys(obj[section!][key!]).length === 0) delete obj[section!][key!];
}

function validate(name: string, obj: Obj) {
  type Cause = Parameters<typeof invalid>[1][number];
  const causes: Cause[] = [];
  if (name.length > 63 || !DNS_1035.test(name))
    causes.push({
      field: 'metadata.name',
      type: 'FieldValueInvalid',
      detail: `Invalid value: "${name}": ${name.length > 63 ? 'must be no more than 63 characters' : DNS_1035_MESSAGE}`,
    });
  const spec = obj.spec;
  const types = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'];
  if (!types.includes(spec.type))
    causes.push({
      field: 'spec.type',
      type: 'FieldValueNotSupported',
      detail: `Unsupported value: "${spec.type}": supported values: ${types.map((t) => `"${t}"`).join(', ')}`,
    });
  const ports: Obj[] = spec.ports ?? [];
  if (ports.length === 0 && spec.type !== 'ExternalName') causes.push({ field: 'spec.ports', type: 'FieldValueRequired', detail: 'Required value' });
  ports.forEach((p, i) => {
    const at = `spec.ports[${i}]`;
    if (ports.length > 1 && !p.name) causes.push({ field: `${at}.name`, type: 'FieldValueRequired', detail: 'Required value' });
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535)
      causes.push({ field: `${at}.port`, type: 'FieldValueInvalid', detail: `Invalid value: ${p.port}: must be between 1 and 65535, inclusive` });
    if (!['TCP', 'UDP', 'SCTP'].includes(p.protocol))
      causes.push({
        field: `${at}.protocol`,
        type: 'FieldValueNotSupported',
        detail: `Unsupported value: "${p.protocol}": supported values: "SCTP", "TCP", "UDP"`,
      });
    if (p.nodePort !== undefined && spec.type === 'ClusterIP')
      causes.push({ field: `${at}.nodePort`, type: 'FieldValueForbidden', detail: "Forbidden: may not be used when `type` is 'ClusterIP'" });
  });
  const etp = spec.externalTrafficPolicy;
  if (etp !== undefined) {
    if (spec.type === 'ClusterIP')
      causes.push({
        field: 'spec.externalTrafficPolicy',
        type: 'FieldValueInvalid',
        detail: `Invalid value: "${etp}": may only be set for externally-accessible services`,
      });
    else if (!['Cluster', 'Local'].includes(etp))
      causes.push({
        field: 'spec.externalTrafficPolicy',
        type: 'FieldValueNotSupported',
        detail: `Unsupported value: "${etp}": supported values: "Cluster", "Local"`,
      });
  }
  if (causes.length) throw invalid(name, causes);
}

export class FakeKubeApi {
  readonly requests: RecordedRequest[] = [];
  private readonly store = new Map<string, Entry>();
  private readonly namespaces: Set<string>;
  private readonly range: [number, number];
  private version = 1000;
  private nextIp = 10;

  private constructor(
    private readonly opts: FakeKubeApiOptions,
    private readonly server: Server,
  ) {
    this.namespaces = new Set(opts.namespaces ?? ['default']);
    this.range = opts.nodePortRange ?? [30000, 32767];
  }

  /** Starts the fake on a free loopback port. */
  static async start(opts: FakeKubeApiOptions): Promise<FakeKubeApi> {
    const server = createServer();
    const fake = new FakeKubeApi(opts, server);
    server.on('request', (req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The Services of a namespace as stored. */
  services(namespace: string): Obj[] {
    return [...this.store.entries()].filter(([k]) => k.startsWith(`${namespace}/`)).map(([, e]) => structuredClone(e.obj));
  }

  /** Stores or changes a Service the way another client (kubectl, a Helm chart) would: an Update by `manager`. */
  put(namespace: string, service: Obj, manager = 'kubectl'): Obj {
    const name = service.metadata.name as string;
    const entry = this.store.get(`${namespace}/${name}`);
    return this.write(namespace, name, entry, service, manager, { replace: true, force: true }).obj;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let status: number;
    let body: Obj;
    try {
      [status, body] = this.route(req, url, query, Buffer.concat(chunks).toString('utf8'));
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      status = e.code;
      body = {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: e.message,
        reason: e.reason,
        ...(e.details ? { details: e.details } : {}),
        code: e.code,
      };
    }
    this.requests.push({ method: req.method!, path: url.pathname, query, contentType: req.headers['content-type'], status });
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    res.end(JSON.stringify(body));
  }

  private route(req: IncomingMessage, url: URL, query: Record<string, string>, text: string): [number, Obj] {
    if (req.headers.authorization !== `Bearer ${this.opts.token}`) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/services(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    const [, namespace, name] = m as unknown as [string, string, string | undefined];
    const verb = ({ GET: name ? 'get' : 'list', POST: 'create', PATCH: 'patch', DELETE: 'delete' } as Record<string, string>)[req.method!];
    if (!verb || (name ? verb === 'create' : verb !== 'list' && verb !== 'create')) {
      throw new ApiError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
    }
    if (this.opts.forbid?.includes(verb)) {
      const user = this.opts.user ?? 'system:serviceaccount:default:svc';
      throw new ApiError(
        403,
        'Forbidden',
        `services${name ? ` "${name}"` : ''} is forbidden: User "${user}" cannot ${verb} resource "services" in API group "" in the namespace "${namespace}"`,
        {
          ...(name ? { name } : {}),
          kind: 'services',
        },
      );
    }
    // As the apiserver: reading or listing in a namespace that does not exist finds nothing;
    // only creating there (POST, or an apply that creates) is refused with the namespace's 404.
    const mustExist = () => {
      if (!this.namespaces.has(namespace)) throw notFound('namespaces', namespace);
    };
    const key = `${namespace}/${name}`;
    switch (verb) {
      case 'list': {
        const match = parseSelector(query.labelSelector ?? '');
        if (match instanceof ApiError) throw match;
        const items = this.services(namespace).filter((s) => match(s.metadata.labels ?? {}));
        return [200, { kind: 'ServiceList', apiVersion: 'v1', metadata: { resourceVersion: String(this.version) }, items }];
      }
      case 'get': {
        const e = this.store.get(key);
        if (!e) throw notFound('services', name!);
        return [200, structuredClone(e.obj)];
      }
      case 'delete': {
        const e = this.store.get(key);
        if (!e) throw notFound('services', name!);
        this.store.delete(key);
        this.version++;
        return [200, e.obj];
      }
      case 'create': {
        const obj = this.body(text, req.headers['content-type']);
        const n = obj.metadata?.name as string | undefined;
        if (!n) throw invalid('', [{ field: 'metadata.name', type: 'FieldValueRequired', detail: 'Required value: name or generateName is required' }]);
        this.checkIdentity(obj, n, n, namespace);
        mustExist();
        if (this.store.has(`${namespace}/${n}`)) throw new ApiError(409, 'AlreadyExists', `services "${n}" already exists`, { name: n, kind: 'services' });
        return [201, structuredClone(this.write(namespace, n, undefined, obj, query.fieldManager ?? 'unknown', { replace: true, force: true }).obj)];
      }
      case 'patch': {
        const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
        if (type !== APPLY_PATCH) {
          throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${APPLY_PATCH}`);
        }
        if (!query.fieldManager) {
          throw new ApiError(422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch', {
            group: 'meta.k8s.io',
            kind: 'PatchOptions',
            causes: [{ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' }],
          });
        }
        const obj = this.body(text, type);
        this.checkIdentity(obj, obj.metadata?.name, name!, namespace);
        const before = this.store.get(key);
        if (!before) mustExist();
        const after = this.write(namespace, name!, before, obj, query.fieldManager, { replace: false, force: query.force === 'true' });
        return [before ? 200 : 201, structuredClone(after.obj)];
      }
    }
    throw new Error('unreachable');
  }

  private body(text: string, contentType: string | undefined): Obj {
    let obj: unknown;
    try {
      // apply-patch+yaml takes YAML (JSON is YAML); create takes JSON.
      obj = contentType?.startsWith(APPLY_PATCH) ? parseYaml(text) : JSON.parse(text);
    } catch (e) {
      throw new ApiError(400, 'BadRequest', `error decoding ${contentType?.startsWith(APPLY_PATCH) ? 'YAML' : 'JSON'}: ${(e as Error).message}`);
    }
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new ApiError(400, 'BadRequest', 'the body of the request is not an object');
    const o = obj as Obj;
    if (o.apiVersion !== 'v1')
      throw new ApiError(400, 'BadRequest', `the API version in the data (${o.apiVersion ?? ''}) does not match the expected API version (v1)`);
    if (o.kind !== 'Service') throw new ApiError(400, 'BadRequest', `the kind in the data (${o.kind ?? ''}) does not match the expected kind (Service)`);
    return o;
  }

  private checkIdentity(obj: Obj, bodyName: string | undefined, urlName: string, namespace: string) {
    if (bodyName !== urlName)
      throw new ApiError(400, 'BadRequest', `the name of the object (${bodyName ?? ''}) does not match the name on the URL (${urlName})`);
    const ns = obj.metadata?.namespace;
    if (ns !== undefined && ns !== namespace)
      throw new ApiError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
  }

  /** Merges `applied` into the stored Service (or replaces it), validates, allocates, stores. */
  private write(namespace: string, name: string, before: Entry | undefined, applied: Obj, manager: string, how: { replace: boolean; force: boolean }): Entry {
    const owners = new Map(before?.owners ?? []);
    const paths = fieldPaths(applied);
    // An Update replaces the object; the server-set identity and clusterIP stay.
    const obj: Obj =
      before && !how.replace
        ? structuredClone(before.obj)
        : {
            metadata: before ? { uid: before.obj.metadata.uid, creationTimestamp: before.obj.metadata.creationTimestamp } : {},
            spec: before ? { clusterIP: before.obj.spec.clusterIP, clusterIPs: before.obj.spec.clusterIPs } : {},
          };
    if (!how.force) {
      const conflicts = [...paths].filter(([p, v]) => {
        const owner = owners.get(p);
        return owner !== undefined && owner !== manager && JSON.stringify(valueAt(obj, p)) !== v;
      });
      if (conflicts.length) {
        const causes = conflicts.map(([p]) => ({ reason: 'FieldManagerConflict', message: `conflict with "${owners.get(p)}" using v1`, field: p }));
        throw new ApiError(
          409,
          'Conflict',
          `Apply failed with ${conflicts.length} conflict${conflicts.length > 1 ? 's' : ''}: ${causes.map((c) => `${c.message}: ${c.field}`).join('\n')}`,
          { causes },
        );
      }
    }
    // Fields this manager set before and leaves out now are removed (apply semantics); an Update replaces everything.
    for (const [p, owner] of owners) {
      if (paths.has(p)) continue;
      if (how.replace) owners.delete(p);
      else if (owner === manager) {
        setAt(obj, p, undefined);
        owners.delete(p);
      }
    }
    for (const [p] of paths) {
      setAt(obj, p, structuredClone(valueAt(applied, p)));
      owners.set(p, manager);
    }
    const spec = obj.spec;
    spec.type ??= 'ClusterIP';
    spec.sessionAffinity ??= 'None';
    for (const p of spec.ports ?? []) {
      p.protocol ??= 'TCP';
      p.targetPort ??= p.port;
    }
    validate(name, obj);
    this.allocate(namespace, name, obj, before?.obj);
    if (before && JSON.stringify(before.obj) === JSON.stringify(obj)) {
      before.owners = owners;
      return before; // nothing changed: the same resourceVersion, as the apiserver answers a no-op apply
    }
    obj.metadata.name = name;
    obj.metadata.namespace = namespace;
    obj.metadata.uid ??= randomUUID();
    obj.metadata.creationTimestamp ??= new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    obj.metadata.resourceVersion = String(++this.version);
    obj.metadata.managedFields = [...new Set(owners.values())].map((m) => ({
      manager: m,
      operation: m === manager && !how.replace ? 'Apply' : 'Update',
      apiVersion: 'v1',
      fieldsType: 'FieldsV1',
    }));
    obj.apiVersion = 'v1';
    obj.kind = 'Service';
    const entry = { obj, owners };
    this.store.set(`${namespace}/${name}`, entry);
    return entry;
  }

  private allocate(namespace: string, name: string, obj: Obj, before: Obj | undefined) {
    const spec = obj.spec;
    spec.clusterIP ??= before?.spec?.clusterIP ?? `10.96.0.${this.nextIp++}`;
    spec.clusterIPs ??= [spec.clusterIP];
    if (spec.type !== 'NodePort' && spec.type !== 'LoadBalancer') return;
    const held = new Set<number>();
    for (const [k, e] of this.store) {
      if (k === `${namespace}/${name}`) continue;
      for (const p of e.obj.spec?.ports ?? []) if (p.nodePort) held.add(p.nodePort);
    }
    const causes: Parameters<typeof invalid>[1] = [];
    const mine = new Set<number>();
    const ports: Obj[] = spec.ports;
    ports.forEach((p, i) => {
      if (p.nodePort === undefined) {
        const old = (before?.spec?.ports ?? []).find((o: Obj) => o.port === p.port && o.protocol === p.protocol);
        if (old?.nodePort) p.nodePort = old.nodePort;
        else return;
      }
      const at = `spec.ports[${i}].nodePort`;
      const [lo, hi] = this.range;
      if (p.nodePort < lo || p.nodePort > hi) {
        causes.push({
          field: at,
          type: 'FieldValueInvalid',
          detail: `Invalid value: ${p.nodePort}: provided port is not in the valid range. The range of valid ports is ${lo}-${hi}`,
        });
      } else if (held.has(p.nodePort) || mine.has(p.nodePort)) {
        causes.push({ field: at, type: 'FieldValueInvalid', detail: `Invalid value: ${p.nodePort}: provided port is already allocated` });
      }
      mine.add(p.nodePort);
    });
    if (causes.length) throw invalid(name, causes);
    for (const p of ports) {
      if (p.nodePort !== undefined) continue;
      let n = this.range[0];
      while (held.has(n) || mine.has(n)) n++;
      if (n > this.range[1]) throw new ApiError(500, 'InternalError', 'Internal error occurred: failed to allocate a nodePort: range is full');
      p.nodePort = n;
      mine.add(n);
    }
  }
}
