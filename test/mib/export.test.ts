// The catalog export (src/mib/export.ts) over the net-snmp corpus plus the SMIv1 fixture, with a
// hand-made source inventory (a vendor group holding an active, a shadowed and a failed source):
// every export_type in JSON and CSV, the module / notification / source-group filters, CSV member
// rows, deduplication, errors. OIDs are checked against snmptranslate.
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { compileMibs } from '../../src/mib/compiler.js';
import { HttpError } from '../../src/core/http-errors.js';
import { buildExport, EXPORT_TYPES, type ExportRequest, type ExportResult } from '../../src/mib/export.js';
import { MibIndex } from '../../src/mib/mib-index.js';
import type { SourceRow } from '../../src/mib/store.js';
import { CORPUS, FIXTURES, readSources, translate } from './helpers.js';

const V1 = join(FIXTURES, 'v1');
const DIRS = [CORPUS, V1];
/** Sources named like store paths (`<group>/<file>`), as the store compiles them. */
const named = (dir: string, group: string) => readSources(dir).map((s) => ({ ...s, file: `${group}/${s.file.slice(dir.length + 1)}`, group }));
const compiled = compileMibs([...named(CORPUS, 'bundled-1'), ...named(V1, 'vendor')]);
const index = new MibIndex(compiled.modules);
const NOW = new Date('2026-11-21T12:00:00.000Z');

const row = (path: string, module: string | null, status: SourceRow['status'], extra: Partial<SourceRow> = {}): SourceRow => ({
  path,
  group: path.split('/')[0]!,
  file: path.split('/')[1]!,
  bundled: path.startsWith('bundled'),
  size_bytes: 100,
  modified: NOW.toISOString(),
  module,
  status,
  ...extra,
});
const inventory: SourceRow[] = [
  ...compiled.modules.map((m) => row(m.file, m.module, 'active')),
  row('vendor/IF-MIB.my', 'IF-MIB', 'shadowed', { shadowed_by: { path: 'bundled-1/IF-MIB.txt', group: 'bundled-1' }, last_updated: '199602282155Z' }),
  row('vendor/BROKEN-MIB.mib', 'BROKEN-MIB', 'failed', {
    errors: [{ severity: 'error', file: 'vendor/BROKEN-MIB.mib', line: 3, column: 9, message: 'imports from missing module NOWHERE-MIB' }],
    missing: ['NOWHERE-MIB'],
    failed_imports: [],
  }),
];

const run = (req: ExportRequest) => buildExport({ index, inventory, compiledAt: '2026-11-21T11:00:00.000Z', version: '9.9.9', now: NOW }, req);
const csvRows = (r: ExportResult) => parse(r.csv!, { columns: true }) as Record<string, string>[];
const fails = (req: ExportRequest, status: number) => {
  try {
    run(req);
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    expect((e as HttpError).statusCode).toBe(status);
    return (e as Error).message;
  }
  throw new Error(`no error for ${JSON.stringify(req)}`);
};
const stripDots = (xs: (string | null)[]) => xs.map((x) => x?.replace(/^\./, '') ?? null);

describe('MIB catalog export', () => {
  it('compiles the corpus and the SMIv1 fixture (79 modules)', () => {
    expect(compiled.failed).toEqual([]);
    expect(compiled.modules.length).toBe(79);
  });

  it('every export_type in JSON and CSV carries summary, filters and metadata; JSON sections and CSV tables as documented', () => {
    const sections: Record<string, string[]> = {
      summary: [],
      modules: ['modules'],
      objects: ['objects'],
      notifications: ['notifications', 'notification_members'],
      catalog: ['modules', 'objects', 'notifications', 'notification_members'],
    };
    const full = run({ export_type: 'catalog' });
    const memberRows = full.notifications!.reduce((s, n) => s + Math.max(1, n.members.length), 0);
    for (const type of EXPORT_TYPES) {
      const j = run({ export_type: type });
      expect(Object.keys(j).sort(), type).toEqual(['filters', 'metadata', 'summary', ...sections[type]!].sort());
      expect(j.summary).toEqual(full.summary.export_type === type ? full.summary : { ...full.summary, export_type: type });
      expect(j.filters).toEqual({ modules: [], notifications: [], source_groups: [] });
      expect(j.metadata).toMatchObject({
        generated_at: NOW.toISOString(),
        version: '9.9.9',
        export_type: type,
        format: 'json',
        scope: 'active-bundle',
        deduplicated: true,
        compiled_at: '2026-11-21T11:00:00.000Z',
        active_bundle_modules: 79,
        content_type: 'application/json',
        filename: `mib-${type}-20261121T120000Z.json`,
      });

      const c = run({ export_type: type, format: 'csv' });
      expect(Object.keys(c).sort(), type).toEqual(['csv', 'filters', 'metadata', 'summary']);
      expect(c.summary).toEqual({ ...j.summary, format: 'csv' });
      expect(c.metadata).toMatchObject({ format: 'csv', content_type: 'text/csv', filename: `mib-${type}-20261121T120000Z.csv` });
      const header = parse(c.csv!, { to: 1 })[0] as string[];
      expect(header).toEqual(c.metadata.csv_columns);
      const rows = csvRows(c);
      expect(rows.length).toBe(c.metadata.csv_rows);
      const expected = {
        summary: undefined,
        modules: full.summary.modules,
        objects: full.summary.objects,
        notifications: memberRows,
        catalog: full.summary.modules + full.summary.objects + memberRows,
      }[type];
      if (expected !== undefined) expect(rows.length, type).toBe(expected);
      if (type === 'summary')
        expect(Object.fromEntries(rows.map((r) => [r.key, r.value]))).toMatchObject({
          modules: '79',
          objects: String(full.summary.objects),
          'objects_by_kind.column': String(full.summary.objects_by_kind.column),
          'notifications_by_kind.trap': '2',
          'source_group.vendor': 'modules=1 active=1 shadowed=0 failed=0',
        });
      if (type === 'catalog') expect(new Set(rows.map((r) => r.record_type))).toEqual(new Set(['module', 'object', 'notification_member']));
    }
  });

  it('the global export is deduplicated to the active bundle: each module once, from its active source; shadowed and failed sources are left out', () => {
    const r = run({ export_type: 'modules' });
    expect(r.modules!.map((m) => m.module)).toEqual(index.modules().map((m) => m.module));
    expect(r.modules!.filter((m) => m.module === 'IF-MIB')).toEqual([
      expect.objectContaining({
        status: 'active',
        source_group: 'bundled-1',
        source_path: 'bundled-1/IF-MIB.txt',
        smi: 'v2',
        oid: '1.3.6.1.2.1.31',
        last_updated: '200006140000Z',
      }),
    ]);
    expect(r.modules!.some((m) => m.module === 'BROKEN-MIB' || m.status !== 'active')).toBe(false);
    expect(r.summary).toMatchObject({ modules: 79, active_modules: 79, shadowed_modules: 0, failed_modules: 0, scope: 'active-bundle' });
    // Objects are every definition of the active modules (RFC1213-MIB and IF-MIB both define ifInOctets).
    const o = run({ export_type: 'objects' }).objects!;
    expect(
      o
        .filter((x) => x.name === 'ifInOctets')
        .map((x) => x.module)
        .sort(),
    ).toEqual(['IF-MIB', 'RFC1213-MIB']);
    expect(new Set(o.map((x) => `${x.module}::${x.name}`)).size).toBe(o.length);
  });

  it('objects: every OID as snmptranslate -On gives it, with syntax, access, index and CSV text forms', () => {
    const r = run({ export_type: 'objects' });
    const theirs = stripDots(
      translate(
        DIRS,
        ['-On'],
        r.objects!.map((o) => `${o.module}::${o.name}`),
      ),
    );
    expect(r.objects!.map((o) => o.oid)).toEqual(theirs);
    expect(r.objects!.map((o) => o.oid)).toEqual(
      [...r.objects!.map((o) => o.oid)].sort((a, b) => {
        const x = a.split('.').map(Number);
        const y = b.split('.').map(Number);
        for (let k = 0; k < Math.min(x.length, y.length); k++) if (x[k] !== y[k]) return x[k]! - y[k]!;
        return x.length - y.length;
      }),
    );
    const ifType = r.objects!.find((o) => o.module === 'IF-MIB' && o.name === 'ifAdminStatus')!;
    expect(ifType).toMatchObject({
      kind: 'column',
      syntax: 'INTEGER',
      base_type: 'INTEGER',
      access: 'read-write',
      status: 'current',
      enums: { up: 1, down: 2, testing: 3 },
      source_group: 'bundled-1',
    });
    const ifX = r.objects!.find((o) => o.module === 'IF-MIB' && o.name === 'ifXEntry')!;
    expect(ifX).toMatchObject({ kind: 'row', augments: 'IF-MIB::ifEntry', index: ['IF-MIB::ifIndex'] });
    const c = csvRows(run({ export_type: 'objects', format: 'csv', modules: ['IF-MIB', 'ACME-V1-MIB'] }));
    const admin = c.find((x) => x.module === 'IF-MIB' && x.name === 'ifAdminStatus')!;
    expect([admin.enums, admin.oid, admin.source_group]).toEqual(['up(1) down(2) testing(3)', '1.3.6.1.2.1.2.2.1.7', 'bundled-1']);
    const descr = c.find((x) => x.name === 'ifDescr')!;
    expect([descr.sizes, descr.textual_convention, descr.display_hint]).toEqual(['0..255', 'SNMPv2-TC::DisplayString', '255a']);
    const acmeState = c.find((x) => x.name === 'acmePortState')!;
    // The multi-line description survives CSV quoting.
    expect(acmeState.description).toBe(index.lookup('ACME-V1-MIB::acmePortState')!.description);
    expect([acmeState.defval, acmeState.access, acmeState.source_group]).toEqual(['up', 'read-write', 'vendor']);
    expect(new Set(c.map((x) => x.module))).toEqual(new Set(['IF-MIB', 'ACME-V1-MIB']));
  });

  it('notifications: JSON nests the resolved members under each notification; every OID as snmptranslate gives it', () => {
    const r = run({ export_type: 'notifications' });
    const ns = r.notifications!;
    expect(ns.length).toBe(36);
    expect(
      stripDots(
        translate(
          DIRS,
          ['-On'],
          ns.map((n) => `${n.module}::${n.name}`),
        ),
      ),
    ).toEqual(ns.map((n) => n.oid));
    const members = ns.flatMap((n) => n.members);
    expect(members.every((m) => m.resolved)).toBe(true);
    expect(
      stripDots(
        translate(
          DIRS,
          ['-On'],
          members.map((m) => `${m.module}::${m.name}`),
        ),
      ),
    ).toEqual(members.map((m) => m.oid!));
    const linkDown = ns.find((n) => n.name === 'linkDown')!;
    expect(linkDown).toMatchObject({ module: 'IF-MIB', oid: '1.3.6.1.6.3.1.1.5.3', kind: 'notification', status: 'current', source_group: 'bundled-1' });
    expect(linkDown.members.map((m) => [m.position, m.name, m.kind, m.syntax, m.base_type, m.access])).toEqual([
      [1, 'ifIndex', 'column', 'InterfaceIndex', 'Integer32', 'read-only'],
      [2, 'ifAdminStatus', 'column', 'INTEGER', 'INTEGER', 'read-write'],
      [3, 'ifOperStatus', 'column', 'INTEGER', 'INTEGER', 'read-only'],
    ]);
    const trap = ns.find((n) => n.name === 'acmePortDown')!;
    expect(trap).toMatchObject({ kind: 'trap', oid: '1.3.6.1.4.1.424242.0.3', enterprise: '1.3.6.1.4.1.424242', trap_number: 3, source_group: 'vendor' });
    expect(trap.members.map((m) => m.name)).toEqual(['acmePortIndex', 'acmePortState']);
    expect(r.summary).toMatchObject({ notifications: 36, notification_members: members.length, notifications_by_kind: { notification: 34, trap: 2 } });
    // notification_members: the same flat rows as the CSV.
    expect(r.notification_members!.length).toBe(ns.reduce((s, n) => s + Math.max(1, n.members.length), 0));
  });

  it('notifications CSV: one row per member repeating the notification identity; one empty-member row for a notification without members', () => {
    const r = run({ export_type: 'notifications', format: 'csv', notifications: ['IF-MIB::linkDown', 'ACME-V1-MIB::acmeReboot', 'ACME-V1-MIB::acmePortDown'] });
    expect(r.filters.notifications).toEqual(['IF-MIB::linkDown', 'ACME-V1-MIB::acmeReboot', 'ACME-V1-MIB::acmePortDown']);
    const rows = csvRows(r);
    expect(
      rows.map((x) => [
        x.notification_module,
        x.notification_name,
        x.notification_oid,
        x.notification_kind,
        x.member_position,
        x.member_name,
        x.member_oid,
        x.member_resolved,
      ]),
    ).toEqual([
      ['ACME-V1-MIB', 'acmePortDown', '1.3.6.1.4.1.424242.0.3', 'trap', '1', 'acmePortIndex', '1.3.6.1.4.1.424242.1.2.1.1', 'true'],
      ['ACME-V1-MIB', 'acmePortDown', '1.3.6.1.4.1.424242.0.3', 'trap', '2', 'acmePortState', '1.3.6.1.4.1.424242.1.2.1.2', 'true'],
      ['ACME-V1-MIB', 'acmeReboot', '1.3.6.1.4.1.424242.1.0.1', 'trap', '', '', '', ''],
      ['IF-MIB', 'linkDown', '1.3.6.1.6.3.1.1.5.3', 'notification', '1', 'ifIndex', '1.3.6.1.2.1.2.2.1.1', 'true'],
      ['IF-MIB', 'linkDown', '1.3.6.1.6.3.1.1.5.3', 'notification', '2', 'ifAdminStatus', '1.3.6.1.2.1.2.2.1.7', 'true'],
      ['IF-MIB', 'linkDown', '1.3.6.1.6.3.1.1.5.3', 'notification', '3', 'ifOperStatus', '1.3.6.1.2.1.2.2.1.8', 'true'],
    ]);
    expect(rows[3]).toMatchObject({
      source_group: 'bundled-1',
      notification_status: 'current',
      member_syntax: 'InterfaceIndex',
      member_base_type: 'Integer32',
      member_kind: 'column',
      member_access: 'read-only',
    });
    expect(rows[2]!.source_group).toBe('vendor');
    // OID order: acme.0.3 before acmeSystem.0.1.
    // Only the named notifications; the modules in scope are theirs.
    expect(r.summary).toMatchObject({ notifications: 3, notification_members: 5, modules: 2 });
  });

  it('filter by module narrows modules, objects and notifications; with notifications, those must be in the modules', () => {
    const r = run({ modules: ['IF-MIB', 'IF-MIB', ' ACME-V1-MIB '] });
    expect(r.filters.modules).toEqual(['IF-MIB', 'ACME-V1-MIB']);
    expect(r.modules!.map((m) => m.module)).toEqual(['ACME-V1-MIB', 'IF-MIB']);
    expect(new Set(r.objects!.map((o) => o.module))).toEqual(new Set(['IF-MIB', 'ACME-V1-MIB']));
    expect(r.objects!.length).toBe(r.modules!.reduce((s, m) => s + m.objects, 0));
    expect(r.notifications!.map((n) => n.name).sort()).toEqual(['acmePortDown', 'acmeReboot', 'linkDown', 'linkUp']);
    const both = run({ modules: ['IF-MIB'], notifications: ['IF-MIB::linkUp'] });
    expect(both.notifications!.map((n) => n.name)).toEqual(['linkUp']);
    expect(both.objects!.length).toBe(r.modules!.find((m) => m.module === 'IF-MIB')!.objects);
    expect(fails({ modules: ['IF-MIB'], notifications: ['SNMPv2-MIB::coldStart'] }, 422)).toBe(
      'notification SNMPv2-MIB::coldStart is not in the selected module(s) IF-MIB',
    );
  });

  it('filter by source group keeps the membership: shadowed and failed sources are listed as such, objects only of the active ones', () => {
    const v = run({ source_groups: ['vendor'] });
    expect(v.modules!.map((m) => [m.module, m.status, m.source_path, m.shadowed_by?.path ?? null])).toEqual([
      ['ACME-V1-MIB', 'active', 'vendor/ACME-V1-MIB.txt', null],
      ['BROKEN-MIB', 'failed', 'vendor/BROKEN-MIB.mib', null],
      ['IF-MIB', 'shadowed', 'vendor/IF-MIB.my', 'bundled-1/IF-MIB.txt'],
    ]);
    expect(v.modules![1]).toMatchObject({
      errors: ['vendor/BROKEN-MIB.mib:3:9 imports from missing module NOWHERE-MIB'],
      missing: ['NOWHERE-MIB'],
      objects: 0,
    });
    expect(new Set(v.objects!.map((o) => o.module))).toEqual(new Set(['ACME-V1-MIB']));
    expect(v.notifications!.map((n) => n.name)).toEqual(['acmePortDown', 'acmeReboot']);
    expect(v.summary).toMatchObject({
      scope: 'source-groups',
      modules: 3,
      active_modules: 1,
      shadowed_modules: 1,
      failed_modules: 1,
      source_groups: [{ group: 'vendor', modules: 3, active: 1, shadowed: 1, failed: 1 }],
    });
    expect(v.metadata).toMatchObject({ scope: 'source-groups', deduplicated: false });
    // Two groups: IF-MIB twice, once per group; its objects once (only the active copy is compiled).
    const two = run({ source_groups: ['vendor', 'bundled-1'], modules: ['IF-MIB'] });
    expect(two.modules!.map((m) => [m.source_group, m.module, m.status])).toEqual([
      ['bundled-1', 'IF-MIB', 'active'],
      ['vendor', 'IF-MIB', 'shadowed'],
    ]);
    expect(two.objects!.every((o) => o.source_group === 'bundled-1' && o.module === 'IF-MIB')).toBe(true);
    const csv = csvRows(run({ source_groups: ['vendor'], export_type: 'modules', format: 'csv' }));
    expect(csv.map((x) => [x.module, x.source_group, x.status, x.shadowed_by])).toEqual([
      ['ACME-V1-MIB', 'vendor', 'active', ''],
      ['BROKEN-MIB', 'vendor', 'failed', ''],
      ['IF-MIB', 'vendor', 'shadowed', 'bundled-1/IF-MIB.txt'],
    ]);
    const catalog = csvRows(run({ source_groups: ['vendor'], format: 'csv' }));
    expect(catalog.filter((x) => x.record_type === 'notification_member').every((x) => x.source_group === 'vendor')).toBe(true);
  });

  it('unknown names are 404, names outside the selection or malformed are 422, each naming them', () => {
    expect(fails({ modules: ['NOPE-MIB', 'IF-MIB', 'ALSO-NOPE'] }, 404)).toBe('unknown module(s): NOPE-MIB, ALSO-NOPE');
    expect(fails({ modules: ['BROKEN-MIB'] }, 404)).toBe('unknown module(s): BROKEN-MIB (failed, not in the active bundle)');
    expect(fails({ notifications: ['IF-MIB::linkSideways'], modules: ['X-MIB'] }, 404)).toBe(
      'unknown module(s): X-MIB; unknown notification(s): IF-MIB::linkSideways',
    );
    expect(fails({ source_groups: ['vendor', 'ghosts'] }, 404)).toBe('unknown source group(s): ghosts (known: bundled-1, vendor)');
    expect(fails({ notifications: ['linkDown', 'IF-MIB::linkDown.0', 'IF-MIB::ifIndex'] }, 422)).toBe(
      'notification name(s) not of the form MODULE::name: linkDown, IF-MIB::linkDown.0; not a NOTIFICATION-TYPE or TRAP-TYPE: IF-MIB::ifIndex (column)',
    );
    expect(fails({ source_groups: ['vendor'], modules: ['SNMPv2-MIB'] }, 422)).toBe('module(s) not in source group(s) vendor: SNMPv2-MIB');
    expect(fails({ source_groups: ['vendor'], modules: ['NOPE-MIB'] }, 404)).toBe('unknown module(s): NOPE-MIB');
    expect(fails({ source_groups: ['vendor'], notifications: ['IF-MIB::linkDown'] }, 422)).toBe(
      'notification IF-MIB::linkDown: its module is not active in source group(s) vendor',
    );
    expect(fails({ format: 'xml' as never }, 422)).toBe("format 'xml' is not one of json, csv");
    expect(fails({ export_type: 'everything' as never }, 422)).toBe("export_type 'everything' is not one of catalog, summary, modules, objects, notifications");
  });
});
