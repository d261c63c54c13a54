// The console's read-only MIB catalog (spec doc 1 section 4): /api/mibs/objects, /traps, /resolve,
// /export and /browse/*. One console for the file, with the net-snmp corpus (bundled-1) and a
// second bundled directory (bundled-2) holding the SMIv1 fixture and a copy of IF-MIB, which is
// shadowed by the corpus's. Values are checked against snmptranslate over the same files.
import { copyFileSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS, FIXTURES, snmptranslate, translate } from '../mib/helpers.js';
import { detailOnly, loggedIn, started } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-mib-browse-'));
const extra = join(dir, 'extra-mibs');
const DIRS = [CORPUS, join(FIXTURES, 'v1')];
let t: Awaited<ReturnType<typeof loggedIn>>;
const api = (method: string, path: string, body?: unknown) => t.api(method, path, body);
const get = (path: string) => t.api('GET', path);
const on = (xs: (string | null)[]) => xs.map((x) => x?.replace(/^\./, '') ?? null);

beforeAll(async () => {
  mkdirSync(extra);
  copyFileSync(join(FIXTURES, 'v1', 'ACME-V1-MIB.txt'), join(extra, 'ACME-V1-MIB.txt'));
  copyFileSync(join(CORPUS, 'IF-MIB.txt'), join(extra, 'IF-MIB.txt'));
  t = await loggedIn({ SVC_MIB_BUNDLED_SOURCE_DIR: `${CORPUS}:${extra}` }, join(dir, 'state'));
  // One console for every test of this file (the helper would stop it after the first).
  started.splice(started.indexOf(t.c), 1);
}, 60_000);

afterAll(async () => {
  await t?.c.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('console MIB catalog', () => {
  it('every endpoint needs a session (401 {detail})', async () => {
    for (const [m, p] of [
      ['GET', '/api/mibs/objects'],
      ['GET', '/api/mibs/traps'],
      ['GET', '/api/mibs/resolve?oid=sysDescr.0'],
      ['POST', '/api/mibs/export'],
      ['GET', '/api/mibs/browse/modules'],
      ['GET', '/api/mibs/browse/tree/module?module=IF-MIB'],
      ['GET', '/api/mibs/browse/tree/oid'],
      ['GET', '/api/mibs/browse/search?q=if'],
      ['GET', '/api/mibs/browse/node/1.3.6.1'],
    ]) {
      expect(detailOnly(await t.call(m!, p!, m === 'POST' ? { body: {} } : {}), 401)).toContain('X-Auth-Token');
    }
  });

  it('GET /api/mibs/objects: the flat OBJECT-TYPE list in OID order, paged, by module; OIDs as snmptranslate gives them', async () => {
    const first = await get('/api/mibs/objects?limit=5');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ offset: 0, limit: 5, count: 5 });
    expect(first.body.total).toBeGreaterThan(2400);
    const next = await get('/api/mibs/objects?limit=5&offset=3');
    expect(next.body.objects.slice(0, 2)).toEqual(first.body.objects.slice(3));
    const all = await get('/api/mibs/objects?module=IF-MIB&limit=10000');
    expect(all.body.count).toBe(all.body.total);
    const objs = all.body.objects as { module: string; name: string; oid: string; kind: string; syntax?: { base: string } }[];
    expect(new Set(objs.map((o) => o.module))).toEqual(new Set(['IF-MIB']));
    expect(new Set(objs.map((o) => o.kind))).toEqual(new Set(['scalar', 'table', 'row', 'column']));
    expect(objs.map((o) => o.oid)).toEqual(
      on(
        translate(
          DIRS,
          ['-On'],
          objs.map((o) => `IF-MIB::${o.name}`),
        ),
      ),
    );
    expect(objs.find((o) => o.name === 'ifHCInOctets')).toMatchObject({
      oid: '1.3.6.1.2.1.31.1.1.1.6',
      kind: 'column',
      access: 'read-only',
      syntax: { type: 'Counter64', base: 'Counter64' },
    });
    expect(detailOnly(await get('/api/mibs/objects?module=NOPE-MIB'), 404)).toBe(
      "module 'NOPE-MIB' is not in the active MIB bundle (see GET /api/mibs/browse/modules)",
    );
    expect(detailOnly(await get('/api/mibs/objects?limit=10001'), 422)).toBe('querystring.limit must be <= 10000');
    expect(detailOnly(await get('/api/mibs/objects?offset=-1'), 422)).toBe('querystring.offset must be >= 0');
  });

  it('GET /api/mibs/traps: NOTIFICATION-TYPE and TRAP-TYPE with resolved members; OIDs as snmptranslate gives them', async () => {
    const r = await get('/api/mibs/traps');
    expect(r.status).toBe(200);
    const traps = r.body.traps as {
      module: string;
      name: string;
      oid: string;
      kind: string;
      enterprise?: string;
      trapNumber?: number;
      members: { module: string; name: string; oid: string; kind: string; resolved: boolean; syntax?: { type: string } }[];
    }[];
    expect(r.body.total).toBe(36);
    expect(traps.map((n) => n.oid)).toEqual(
      on(
        translate(
          DIRS,
          ['-On'],
          traps.map((n) => `${n.module}::${n.name}`),
        ),
      ),
    );
    const members = traps.flatMap((n) => n.members);
    expect(members.every((m) => m.resolved)).toBe(true);
    expect(members.map((m) => m.oid)).toEqual(
      on(
        translate(
          DIRS,
          ['-On'],
          members.map((m) => `${m.module}::${m.name}`),
        ),
      ),
    );
    // snmptranslate -Td lists the OBJECTS of linkDown.
    const td = snmptranslate(DIRS, ['-Td'], ['IF-MIB::linkDown']);
    const linkDown = traps.find((n) => n.name === 'linkDown')!;
    expect(td).toContain(`OBJECTS\t{ ${linkDown.members.map((m) => m.name).join(', ')} }`);
    expect(linkDown.members[0]).toMatchObject({ name: 'ifIndex', kind: 'column', syntax: { type: 'InterfaceIndex' } });
    const acme = await get('/api/mibs/traps?module=ACME-V1-MIB');
    expect(
      acme.body.traps.map((n: { name: string; kind: string; enterprise: string; trapNumber: number }) => [n.name, n.kind, n.enterprise, n.trapNumber]),
    ).toEqual([
      ['acmePortDown', 'trap', '1.3.6.1.4.1.424242', 3],
      ['acmeReboot', 'trap', '1.3.6.1.4.1.424242.1', 1],
    ]);
    expect((await get('/api/mibs/traps?limit=1&offset=35')).body).toMatchObject({ total: 36, count: 1 });
    detailOnly(await get('/api/mibs/traps?module=GHOST'), 404);
  });

  it('GET /api/mibs/resolve: numeric and symbolic both ways, as snmptranslate gives them; 404 unknown, 422 malformed', async () => {
    const symbolic = [
      'IF-MIB::ifInOctets.3',
      'IF-MIB::ifHCInOctets.5',
      'SNMPv2-MIB::sysUpTime.0',
      'UCD-SNMP-MIB::laLoad.1',
      'ACME-V1-MIB::acmePortDown',
      '.iso.org.dod.internet.mgmt.mib-2.system.sysDescr.0',
      'ifHCOutOctets.7',
    ];
    const numeric = on(
      translate(
        DIRS,
        ['-On'],
        symbolic.map((s) => (s.includes('::') || s.startsWith('.') ? s : `IF-MIB::${s}`)),
      ),
    );
    for (const [k, s] of symbolic.entries()) {
      const r = await get(`/api/mibs/resolve?oid=${encodeURIComponent(s)}&mode=numeric`);
      expect(r.status, s).toBe(200);
      expect([r.body.result, r.body.oid, r.body.mode], s).toEqual([numeric[k], numeric[k], 'numeric']);
    }
    // OIDs only one module defines: the same MODULE::name.suffix as snmptranslate -OS.
    const oids = ['1.3.6.1.2.1.31.1.1.1.6.5', '1.3.6.1.6.3.1.1.5.3', '1.3.6.1.4.1.2021.10.1.3.1', '1.3.6.1.4.1.424242.1.2.1.2.9', '1.3.6.1.2.1.31.1.1.1'];
    const theirs = translate(DIRS, ['-OS'], oids);
    for (const [k, o] of oids.entries()) {
      const r = await get(`/api/mibs/resolve?oid=${o}&mode=symbolic`);
      expect([r.status, r.body.result], o).toEqual([200, theirs[k]]);
    }
    const one = await get('/api/mibs/resolve?oid=1.3.6.1.2.1.31.1.1.1.6.5');
    expect(one.body).toEqual({
      input: '1.3.6.1.2.1.31.1.1.1.6.5',
      mode: 'symbolic',
      result: 'IF-MIB::ifHCInOctets.5',
      oid: '1.3.6.1.2.1.31.1.1.1.6.5',
      symbolic: 'IF-MIB::ifHCInOctets.5',
      module: 'IF-MIB',
      name: 'ifHCInOctets',
      kind: 'column',
      suffix: '5',
      exact: false,
    });
    expect((await get('/api/mibs/resolve?oid=IF-MIB::ifHCInOctets')).body).toMatchObject({
      mode: 'numeric',
      result: '1.3.6.1.2.1.31.1.1.1.6',
      suffix: '',
      exact: true,
    });
    // A numeric OID is its own numeric form, even where no module names it; symbolic needs a node.
    expect((await get('/api/mibs/resolve?oid=2.999.1&mode=numeric')).body).toMatchObject({ result: '2.999.1', module: null, exact: false });
    expect(detailOnly(await get('/api/mibs/resolve?oid=2.999.1&mode=symbolic'), 404)).toBe('no MIB node of the active bundle is a prefix of 2.999.1');
    expect(snmptranslate(DIRS, ['-On'], ['IF-MIB::ifInOctetz'])).toBe('');
    expect(detailOnly(await get('/api/mibs/resolve?oid=IF-MIB::ifInOctetz'), 404)).toContain("unknown MIB name in 'IF-MIB::ifInOctetz'");
    expect(detailOnly(await get('/api/mibs/resolve?oid=NOPE-MIB::sysDescr.0&mode=symbolic'), 404)).toContain('unknown MIB name');
    for (const bad of ['1..3', 'sysDescr.', 'a b', 'IF-MIB::', '1.3.6.1.99999999999', `1${'.1'.repeat(128)}`]) {
      expect(detailOnly(await get(`/api/mibs/resolve?oid=${encodeURIComponent(bad)}`), 422), bad).toMatch(/malformed OID|beyond 4294967295|more than 128 arcs/);
    }
    expect(detailOnly(await get('/api/mibs/resolve?oid=sysDescr.0&mode=textual'), 422)).toContain('querystring.mode');
    expect(detailOnly(await get('/api/mibs/resolve'), 422)).toContain("must have required property 'oid'");
  });

  it('POST /api/mibs/export JSON: summary, filters, metadata always; sections per export_type; deduplicated to the active bundle', async () => {
    const status = t.c.deps.mibs.status();
    const sum = await api('POST', '/api/mibs/export', { export_type: 'summary' });
    expect(sum.status).toBe(200);
    expect(Object.keys(sum.body).sort()).toEqual(['filters', 'metadata', 'summary']);
    expect(sum.body.summary).toMatchObject({
      export_type: 'summary',
      format: 'json',
      scope: 'active-bundle',
      modules: status.mibs.length,
      active_modules: status.mibs.length,
      shadowed_modules: 0,
    });
    expect(sum.body.metadata).toMatchObject({
      deduplicated: true,
      active_bundle_modules: status.mibs.length,
      compiled_at: status.compiled_at,
      content_type: 'application/json',
      version: expect.any(String),
    });
    const cat = await api('POST', '/api/mibs/export', {});
    expect(Object.keys(cat.body).sort()).toEqual(['filters', 'metadata', 'modules', 'notification_members', 'notifications', 'objects', 'summary']);
    expect(cat.body.modules.map((m: { module: string }) => m.module)).toEqual(status.mibs);
    // IF-MIB is in bundled-1 (active), bundled-2 and the product's own bundled/ (shadowed): exported once.
    expect(cat.body.modules.filter((m: { module: string }) => m.module === 'IF-MIB')).toEqual([
      expect.objectContaining({ source_group: 'bundled-1', status: 'active' }),
    ]);
    expect(
      status.source_inventory
        .filter((r) => r.module === 'IF-MIB')
        .map((r) => r.status)
        .sort(),
    ).toEqual(['active', 'shadowed', 'shadowed']);
    const n = await api('POST', '/api/mibs/export', { export_type: 'notifications', notifications: ['IF-MIB::linkUp'] });
    expect(Object.keys(n.body).sort()).toEqual(['filters', 'metadata', 'notification_members', 'notifications', 'summary']);
    expect(n.body.notifications).toEqual([
      expect.objectContaining({
        name: 'linkUp',
        oid: '1.3.6.1.6.3.1.1.5.4',
        members: [expect.objectContaining({ position: 1, name: 'ifIndex', resolved: true }), expect.anything(), expect.anything()],
      }),
    ]);
    expect(n.body.filters).toEqual({ modules: [], notifications: ['IF-MIB::linkUp'], source_groups: [] });
    for (const type of ['modules', 'objects']) {
      const r = await api('POST', '/api/mibs/export', { export_type: type, modules: ['ACME-V1-MIB'] });
      expect(Object.keys(r.body).sort()).toEqual(['filters', 'metadata', 'summary', type].sort());
    }
  });

  it('POST /api/mibs/export by source group keeps the membership, shadowed sources listed as such', async () => {
    const r = await api('POST', '/api/mibs/export', { source_groups: ['bundled-2'], export_type: 'modules' });
    expect(r.status).toBe(200);
    expect(
      r.body.modules.map((m: { module: string; status: string; source_path: string; shadowed_by?: { path: string } }) => [
        m.module,
        m.status,
        m.source_path,
        m.shadowed_by?.path ?? null,
      ]),
    ).toEqual([
      ['ACME-V1-MIB', 'active', 'bundled-2/ACME-V1-MIB.txt', null],
      ['IF-MIB', 'shadowed', 'bundled-2/IF-MIB.txt', 'bundled-1/IF-MIB.txt'],
    ]);
    expect(r.body.metadata).toMatchObject({ scope: 'source-groups', deduplicated: false });
    const objs = await api('POST', '/api/mibs/export', { source_groups: ['bundled-2'], export_type: 'objects' });
    expect(new Set(objs.body.objects.map((o: { module: string }) => o.module))).toEqual(new Set(['ACME-V1-MIB']));
  });

  it('POST /api/mibs/export CSV: a JSON envelope with the text, or raw text/csv (?download=1 or Accept: text/csv) with X-Export-* headers', async () => {
    const body = { format: 'csv', export_type: 'notifications', notifications: ['IF-MIB::linkDown', 'ACME-V1-MIB::acmePortDown'] };
    const env = await api('POST', '/api/mibs/export', body);
    expect(env.status).toBe(200);
    expect(Object.keys(env.body).sort()).toEqual(['csv', 'filters', 'metadata', 'summary']);
    const rows = parse(env.body.csv, { columns: true }) as Record<string, string>[];
    expect(rows.map((r) => [r.notification_name, r.member_position, r.member_name])).toEqual([
      ['acmePortDown', '1', 'acmePortIndex'],
      ['acmePortDown', '2', 'acmePortState'],
      ['linkDown', '1', 'ifIndex'],
      ['linkDown', '2', 'ifAdminStatus'],
      ['linkDown', '3', 'ifOperStatus'],
    ]);
    expect(rows.map((r) => r.member_oid)).toEqual(
      on(
        translate(
          DIRS,
          ['-On'],
          rows.map((r) => `${r.member_module}::${r.member_name}`),
        ),
      ),
    );
    for (const how of [
      { q: '?download=1', accept: 'application/json' },
      { q: '', accept: 'text/csv' },
      { q: '?download=true', accept: '*/*' },
    ]) {
      const res = await fetch(`${t.c.url}/api/mibs/export${how.q}`, {
        method: 'POST',
        headers: { 'x-auth-token': t.token, 'content-type': 'application/json', accept: how.accept },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(await res.text()).toBe(env.body.csv);
      expect(JSON.parse(res.headers.get('x-export-summary')!)).toEqual(env.body.summary);
      expect(JSON.parse(res.headers.get('x-export-filters')!)).toEqual(env.body.filters);
      expect(JSON.parse(res.headers.get('x-export-metadata')!)).toMatchObject({
        ...env.body.metadata,
        generated_at: expect.any(String),
        filename: expect.stringMatching(/^mib-notifications-\d{8}T\d{6}Z\.csv$/),
      });
      if (how.q) expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="mib-notifications-\d{8}T\d{6}Z\.csv"$/);
    }
    // JSON with ?download=1: the same JSON, as an attachment.
    const dl = await api('POST', '/api/mibs/export?download=1', { export_type: 'summary' });
    expect(dl.headers.get('content-disposition')).toMatch(/^attachment; filename="mib-summary-\d{8}T\d{6}Z\.json"$/);
    expect(Object.keys(dl.body).sort()).toEqual(['filters', 'metadata', 'summary']);
  });

  it('POST /api/mibs/export errors: 404 naming unknown names, 422 for malformed or out-of-scope names and bad fields', async () => {
    expect(detailOnly(await api('POST', '/api/mibs/export', { modules: ['NOPE-MIB'], notifications: ['IF-MIB::linkSideways'] }), 404)).toBe(
      'unknown module(s): NOPE-MIB; unknown notification(s): IF-MIB::linkSideways',
    );
    expect(detailOnly(await api('POST', '/api/mibs/export', { source_groups: ['ghosts'] }), 404)).toBe(
      'unknown source group(s): ghosts (known: bundled, bundled-1, bundled-2)',
    );
    expect(detailOnly(await api('POST', '/api/mibs/export', { notifications: ['linkDown'] }), 422)).toBe(
      'notification name(s) not of the form MODULE::name: linkDown',
    );
    expect(detailOnly(await api('POST', '/api/mibs/export', { source_groups: ['bundled-2'], modules: ['SNMPv2-MIB'] }), 422)).toBe(
      'module(s) not in source group(s) bundled-2: SNMPv2-MIB',
    );
    expect(detailOnly(await api('POST', '/api/mibs/export', { format: 'xml' }), 422)).toContain('body.format');
    expect(detailOnly(await api('POST', '/api/mibs/export', { export_type: 'all' }), 422)).toContain('body.export_type');
    expect(detailOnly(await api('POST', '/api/mibs/export', { modules: 'IF-MIB' }), 422)).toContain('body.modules must be array');
    expect(detailOnly(await api('POST', '/api/mibs/export', { module: ['IF-MIB'] }), 422)).toContain('must NOT have additional properties');
    expect(detailOnly(await api('POST', '/api/mibs/export?download=yes', {}), 422)).toContain('querystring.download');
  });

  it('GET /api/mibs/browse/modules: the active modules with source group and counts', async () => {
    const r = await get('/api/mibs/browse/modules');
    expect(r.status).toBe(200);
    expect(r.body.modules.map((m: { module: string }) => m.module)).toEqual(t.c.deps.mibs.status().mibs);
    expect(r.body.total).toBe(79);
    const ifMib = r.body.modules.find((m: { module: string }) => m.module === 'IF-MIB');
    expect(ifMib).toMatchObject({
      source_group: 'bundled-1',
      source_path: 'bundled-1/IF-MIB.txt',
      status: 'active',
      smi: 'v2',
      oid: '1.3.6.1.2.1.31',
      last_updated: '200006140000Z',
      notifications: 2,
    });
    expect(ifMib.description).toBeUndefined();
    expect(r.body.modules.find((m: { module: string }) => m.module === 'ACME-V1-MIB')).toMatchObject({
      source_group: 'bundled-2',
      smi: 'v1',
      objects: 7,
      notifications: 2,
    });
  });

  it('GET /api/mibs/browse/tree/module: one module as a tree; type_filter by kind or shorthand; 422 for unknown kinds, 404 unknown module', async () => {
    const all = await get('/api/mibs/browse/tree/module?module=IF-MIB');
    expect(all.status).toBe(200);
    expect(all.body.type_filter).toEqual([]);
    const flat = (ts: { oid: string; name: string; kind: string; children?: unknown[] }[]): { oid: string; name: string; kind: string }[] =>
      ts.flatMap((x) => [x, ...flat((x.children ?? []) as never)]);
    const nodes = flat(all.body.tree);
    expect(all.body.count).toBe(nodes.length);
    expect(nodes.map((x) => x.oid)).toEqual(
      on(
        translate(
          DIRS,
          ['-On'],
          nodes.map((x) => `IF-MIB::${x.name}`),
        ),
      ),
    );
    const notif = await get('/api/mibs/browse/tree/module?module=IF-MIB&type_filter=notification');
    expect(notif.body.tree.map((x: { name: string; oid: string }) => [x.name, x.oid])).toEqual([
      ['linkDown', '1.3.6.1.6.3.1.1.5.3'],
      ['linkUp', '1.3.6.1.6.3.1.1.5.4'],
    ]);
    const objs = await get('/api/mibs/browse/tree/module?module=IF-MIB&type_filter=Objects,trap');
    expect(objs.body.type_filter).toEqual(['scalar', 'table', 'row', 'column', 'trap']);
    expect(new Set(flat(objs.body.tree).map((x) => x.kind))).toEqual(new Set(['scalar', 'table', 'row', 'column']));
    expect(objs.body.count).toBe((await get('/api/mibs/objects?module=IF-MIB')).body.total);
    expect(detailOnly(await get('/api/mibs/browse/tree/module?module=IF-MIB&type_filter=column,widget'), 422)).toMatch(
      /^type_filter: unknown node kind\(s\) widget; use node, module-identity/,
    );
    expect(detailOnly(await get('/api/mibs/browse/tree/module?module=GHOST-MIB'), 404)).toContain("module 'GHOST-MIB'");
    expect(detailOnly(await get('/api/mibs/browse/tree/module'), 422)).toContain("must have required property 'module'");
  });

  it('GET /api/mibs/browse/tree/oid: the subtree to a depth (default 1.3.6.1, depth 1; max 10), by module', async () => {
    const def = await get('/api/mibs/browse/tree/oid');
    expect(def.status).toBe(200);
    expect(def.body).toMatchObject({ root_oid: '1.3.6.1', symbolic: 'SNMPv2-SMI::internet', depth: 1, module: null });
    expect(def.body.tree.children.map((c: { name: string }) => c.name)).toEqual(
      expect.arrayContaining(['directory', 'mgmt', 'experimental', 'private', 'security', 'snmpV2']),
    );
    expect(def.body.tree.children.every((c: { children?: unknown }) => c.children === undefined)).toBe(true);
    const t2 = await get(`/api/mibs/browse/tree/oid?root_oid=${encodeURIComponent('IF-MIB::ifTable')}&depth=2`);
    const entry = t2.body.tree.children[0];
    expect([t2.body.root_oid, entry.name, entry.childCount]).toEqual(['1.3.6.1.2.1.2.2', 'ifEntry', 22]);
    expect(entry.children.map((c: { oid: string }) => c.oid)).toEqual(
      on(
        translate(
          DIRS,
          ['-On'],
          entry.children.map((c: { name: string }) => `IF-MIB::${c.name}`),
        ),
      ),
    );
    const zero = await get('/api/mibs/browse/tree/oid?root_oid=1.3.6.1.2.1.2.2&depth=0');
    expect(zero.body.tree).toEqual({
      oid: '1.3.6.1.2.1.2.2',
      name: 'ifTable',
      module: 'IF-MIB',
      kind: 'table',
      type: 'SEQUENCE OF IfEntry',
      access: 'not-accessible',
      childCount: 1,
    });
    // With module: only arcs leading to that module's definitions.
    const byMod = await get('/api/mibs/browse/tree/oid?root_oid=1.3.6.1.2.1&depth=1&module=IF-MIB');
    const ifOids = (await get('/api/mibs/objects?module=IF-MIB&limit=10000')).body.objects.map((o: { oid: string }) => o.oid) as string[];
    const expected = [
      ...new Set(
        [...ifOids, ...(await get('/api/mibs/traps?module=IF-MIB')).body.traps.map((n: { oid: string }) => n.oid)]
          .filter((o) => o.startsWith('1.3.6.1.2.1.'))
          .map((o) => o.split('.').slice(0, 7).join('.')),
      ),
    ];
    expect(byMod.body.tree.children.map((c: { oid: string }) => c.oid).sort()).toEqual(expect.arrayContaining(expected.sort()));
    expect(byMod.body.tree.children.length).toBeLessThan(5);
    expect(detailOnly(await get('/api/mibs/browse/tree/oid?depth=11'), 422)).toBe('querystring.depth must be <= 10');
    expect(detailOnly(await get('/api/mibs/browse/tree/oid?depth=-1'), 422)).toBe('querystring.depth must be >= 0');
    expect(detailOnly(await get('/api/mibs/browse/tree/oid?root_oid=1..2'), 422)).toContain('malformed OID');
    expect(detailOnly(await get('/api/mibs/browse/tree/oid?root_oid=noSuchNode'), 404)).toContain("unknown MIB name in root_oid 'noSuchNode'");
    expect(detailOnly(await get('/api/mibs/browse/tree/oid?root_oid=1.3.6.1.9999'), 404)).toBe('no MIB node of the active bundle is at or below 1.3.6.1.9999');
    detailOnly(await get('/api/mibs/browse/tree/oid?module=GHOST-MIB'), 404);
  });

  it('GET /api/mibs/browse/search: names before descriptions, an OID or MODULE::name first; module and type_filter; limits', async () => {
    const r = await get('/api/mibs/browse/search?q=ifinoctets');
    expect(r.status).toBe(200);
    expect(r.body.results.slice(0, 2).map((x: { module: string; name: string; match: string }) => [x.module, x.name, x.match])).toEqual([
      ['IF-MIB', 'ifInOctets', 'name'],
      ['RFC1213-MIB', 'ifInOctets', 'name'],
    ]);
    const desc = await get('/api/mibs/browse/search?q=octets&module=IF-MIB&type_filter=column&limit=500');
    const results = desc.body.results as { module: string; kind: string; name: string; match: string }[];
    expect(results.every((x) => x.module === 'IF-MIB' && x.kind === 'column')).toBe(true);
    const firstDesc = results.findIndex((x) => x.match === 'description');
    expect(firstDesc).toBeGreaterThan(0);
    expect(results.slice(0, firstDesc).every((x) => x.name.toLowerCase().includes('octets'))).toBe(true);
    expect(results.slice(firstDesc).every((x) => x.match === 'description')).toBe(true);
    const byOid = await get('/api/mibs/browse/search?q=1.3.6.1.2.1.31.1.1.1.6');
    expect(byOid.body.results[0]).toMatchObject({ name: 'ifHCInOctets', module: 'IF-MIB', match: 'oid', type: 'Counter64' });
    const byName = await get(`/api/mibs/browse/search?q=${encodeURIComponent('RFC1213-MIB::ifInOctets')}`);
    expect(byName.body.results[0]).toMatchObject({ name: 'ifInOctets', module: 'RFC1213-MIB', match: 'oid' });
    expect((await get('/api/mibs/browse/search?q=if&limit=3')).body.count).toBe(3);
    expect((await get('/api/mibs/browse/search?q=zzzzqqq')).body).toEqual({ q: 'zzzzqqq', count: 0, results: [] });
    expect(detailOnly(await get('/api/mibs/browse/search'), 422)).toContain("must have required property 'q'");
    expect(detailOnly(await get('/api/mibs/browse/search?q=if&limit=501'), 422)).toBe('querystring.limit must be <= 500');
    detailOnly(await get('/api/mibs/browse/search?q=if&type_filter=tables'), 422);
    detailOnly(await get('/api/mibs/browse/search?q=if&module=GHOST'), 404);
  });

  it('GET /api/mibs/browse/node/{oid}: detail with breadcrumb (as snmptranslate -Of), children, trap members, notifications using an object', async () => {
    const byOid = await get('/api/mibs/browse/node/1.3.6.1.2.1.2.2.1.8');
    const byName = await get(`/api/mibs/browse/node/${encodeURIComponent('IF-MIB::ifOperStatus')}`);
    expect(byOid.status).toBe(200);
    expect(byName.body).toEqual(byOid.body);
    const n = byOid.body;
    expect(n).toMatchObject({ name: 'ifOperStatus', module: 'IF-MIB', kind: 'column', access: 'read-only', alsoDefinedIn: ['RFC1213-MIB'], children: [] });
    const full = snmptranslate(DIRS, ['-Of'], ['IF-MIB::ifOperStatus']).trim();
    expect('.' + n.breadcrumb.map((c: { name: string }) => c.name).join('.')).toBe(full);
    expect(n.breadcrumb.map((c: { oid: string }) => c.oid).at(-1)).toBe('1.3.6.1.2.1.2.2.1.8');
    expect(n.usedInNotifications.map((x: { name: string }) => x.name)).toEqual(['linkDown', 'linkUp']);
    // Enumerations as -Td shows them (a column only IF-MIB defines: net-snmp picks RFC1213-MIB's ifOperStatus).
    const upDown = (await get('/api/mibs/browse/node/IF-MIB::ifLinkUpDownTrapEnable')).body;
    const td = snmptranslate(DIRS, ['-Td'], ['IF-MIB::ifLinkUpDownTrapEnable']);
    expect(td).toContain(
      `SYNTAX\tINTEGER {${Object.entries(upDown.syntax.enums as Record<string, number>)
        .map(([k, v]) => `${k}(${v})`)
        .join(', ')}}`,
    );
    // A notification: its members with their definitions.
    const trap = (await get('/api/mibs/browse/node/ACME-V1-MIB::acmePortDown')).body;
    expect(trap).toMatchObject({ kind: 'trap', oid: '1.3.6.1.4.1.424242.0.3', enterprise: '1.3.6.1.4.1.424242', trapNumber: 3 });
    expect(trap.members.map((m: { name: string; kind: string; oid: string; resolved: boolean }) => [m.name, m.kind, m.oid, m.resolved])).toEqual([
      ['acmePortIndex', 'column', '1.3.6.1.4.1.424242.1.2.1.1', true],
      ['acmePortState', 'column', '1.3.6.1.4.1.424242.1.2.1.2', true],
    ]);
    expect(on(translate(DIRS, ['-On'], ['ACME-V1-MIB::acmePortDown']))).toEqual([trap.oid]);
    // Children of a row, and a qualified name asking for the non-preferred module's definition.
    const entry = (await get('/api/mibs/browse/node/IF-MIB::ifEntry')).body;
    expect(entry.children.length).toBe(22);
    const old = (await get('/api/mibs/browse/node/RFC1213-MIB::ifInOctets')).body;
    expect([old.module, old.status, old.syntax.type, old.alsoDefinedIn, old.breadcrumb.at(-1).module]).toEqual([
      'RFC1213-MIB',
      'mandatory',
      'Counter',
      ['IF-MIB'],
      'RFC1213-MIB',
    ]);
    expect((await get('/api/mibs/browse/node/ifInOctets')).body.module).toBe('IF-MIB');
    expect(detailOnly(await get('/api/mibs/browse/node/1.3.6.1.2.1.2.2.1.10.3'), 404)).toBe(
      '1.3.6.1.2.1.2.2.1.10.3 is an instance (.3) of IF-MIB::ifInOctets, not a node: ask for /api/mibs/browse/node/1.3.6.1.2.1.2.2.1.10',
    );
    // Longer than Fastify's default 100-character parameter: still answered, as {detail}.
    const long = `1.3.6.1.2.1.2.2.1.10${'.1'.repeat(60)}`;
    expect(detailOnly(await get(`/api/mibs/browse/node/${long}`), 404)).toBe(
      `${long} is an instance (${'.1'.repeat(60)}) of IF-MIB::ifInOctets, not a node: ask for /api/mibs/browse/node/1.3.6.1.2.1.2.2.1.10`,
    );
    expect(detailOnly(await get('/api/mibs/browse/node/IF-MIB::noSuchThing'), 404)).toContain('unknown MIB name');
    expect(detailOnly(await get('/api/mibs/browse/node/2.999'), 404)).toBe('no MIB node of the active bundle is a prefix of 2.999');
    expect(detailOnly(await get('/api/mibs/browse/node/1..3'), 422)).toContain('malformed OID');
  });

  it('OIDs with leading zeros come back canonical, as snmptranslate gives them; a leading dot is no arc (128 arcs plus the dot are fine)', async () => {
    // Decimal arcs (net-snmp reads `010` as octal 8: the inputs keep to digits where both readings agree).
    const inputs = ['01.3.6', '1.3.6.1.2.1.01', '.1.03.6.1.2.1.2.2.1.10.0003'];
    const theirs = on(translate(DIRS, ['-On'], inputs));
    expect(theirs).toEqual(['1.3.6', '1.3.6.1.2.1.1', '1.3.6.1.2.1.2.2.1.10.3']);
    for (const [k, o] of inputs.entries()) {
      const r = await get(`/api/mibs/resolve?oid=${o}&mode=numeric`);
      expect([r.status, r.body.result, r.body.oid], o).toEqual([200, theirs[k], theirs[k]]);
    }
    expect((await get('/api/mibs/resolve?oid=1.3.6.1.2.1.2.2.1.0010.0003&mode=symbolic')).body.result).toBe('IF-MIB::ifInOctets.3');
    expect((await get('/api/mibs/resolve?oid=1.3.6.1.2.1.2.2.1.10.00000000004294967295&mode=numeric')).body.result).toBe('1.3.6.1.2.1.2.2.1.10.4294967295');
    const arcs128 = `1${'.1'.repeat(127)}`;
    for (const o of [arcs128, `.${arcs128}`]) expect((await get(`/api/mibs/resolve?oid=${o}&mode=numeric`)).body.result, o).toBe(arcs128);
    expect(detailOnly(await get(`/api/mibs/resolve?oid=.${arcs128}.1`), 422)).toContain('more than 128 arcs');
  });

  it('GET /api/mibs/browse/node/iso (and 1): the root arc, which no module defines, with its children, as tree/oid takes it', async () => {
    const iso = await get('/api/mibs/browse/node/iso');
    expect(iso.status).toBe(200);
    expect(iso.body).toMatchObject({
      oid: '1',
      name: 'iso',
      module: null,
      kind: 'node',
      breadcrumb: [{ oid: '1', name: 'iso' }],
      alsoDefinedIn: [],
      usedInNotifications: [],
    });
    expect(iso.body.children).toContainEqual({ oid: '1.3', name: 'org', module: 'SNMPv2-SMI' });
    expect((await get('/api/mibs/browse/node/1')).body).toEqual(iso.body);
    const tree = (await get('/api/mibs/browse/tree/oid?root_oid=iso&depth=1')).body.tree;
    expect(iso.body.children.map((c: { oid: string }) => c.oid)).toEqual(tree.children.map((c: { oid: string }) => c.oid));
    expect(snmptranslate(DIRS, ['-On'], ['iso']).trim()).toBe('.1');
  });

  it('the OpenAPI document lists every catalog endpoint under the mibs tag with a summary', async () => {
    const res = await fetch(`${t.c.url}/docs/json`);
    const doc = (await res.json()) as { paths: Record<string, Record<string, { tags?: string[]; summary?: string }>> };
    for (const [p, m] of [
      ['/api/mibs/objects', 'get'],
      ['/api/mibs/traps', 'get'],
      ['/api/mibs/resolve', 'get'],
      ['/api/mibs/export', 'post'],
      ['/api/mibs/browse/modules', 'get'],
      ['/api/mibs/browse/tree/module', 'get'],
      ['/api/mibs/browse/tree/oid', 'get'],
      ['/api/mibs/browse/search', 'get'],
      ['/api/mibs/browse/node/{oid}', 'get'],
    ]) {
      expect(doc.paths[p!]?.[m!]?.tags, p).toEqual(['mibs']);
      expect(doc.paths[p!]![m!]!.summary!.length, p).toBeGreaterThan(10);
    }
  });
});
