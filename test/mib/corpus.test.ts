// The whole net-snmp corpus, given in a random order, against Debian's snmptranslate (-m ALL) as
// the reference: every node's numeric OID, every OID's symbolic name, instances, bare names (-IR),
// full symbolic paths (-Of), and each object's details (-Td: syntax, access, index, hints...).
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CompiledFormatError,
  MibIndex,
  OidSyntaxError,
  compileMibs,
  compiledFromJson,
  compiledToJson,
  type MibNode,
  type TreeNode,
} from '../../src/mib/index.js';
import type { CompileResult, CompiledSyntax } from '../../src/mib/types.js';
import { CORPUS, details, readSources, shuffle, snmptranslate, translate } from './helpers.js';

const SEED = Number(process.env.SEED ?? Date.now() % 100000);
const M = [CORPUS];

let result: CompileResult;
let index: MibIndex;
let nodes: MibNode[];

beforeAll(() => {
  const sources = shuffle(readSources(CORPUS), SEED);
  expect(sources.length).toBe(78);
  result = compileMibs(sources);
  index = new MibIndex(result.modules);
  nodes = index.all();
});

describe(`net-snmp corpus (seed ${SEED})`, () => {
  it('compiles at least 98% of the 78 modules in any order', () => {
    expect(result.failed).toEqual([]);
    expect(result.modules.length / 78).toBeGreaterThanOrEqual(0.98);
    expect(result.modules.length).toBe(78);
    expect(result.shadowed).toEqual([]);
    // The same modules and nodes whatever the order.
    const again = compileMibs(shuffle(readSources(CORPUS), SEED + 1));
    expect(JSON.stringify(again.modules)).toBe(JSON.stringify(result.modules));
  });

  it('knows every node snmptranslate knows, at the same OID (-Tz)', () => {
    const tz = snmptranslate(M, ['-Tz'], []);
    const pairs = [...tz.matchAll(/^"([^"]+)"\s+"([0-9.]+)"$/gm)].map((m) => [m[1]!, m[2]!] as const);
    expect(pairs.length).toBeGreaterThan(3000);
    const have = new Set(nodes.map((n) => `${n.name} ${n.oid}`));
    expect(pairs.filter(([name, oid]) => !have.has(`${name} ${oid}`))).toEqual([]);
  });

  it('resolves every MODULE::name to the numeric OID snmptranslate gives (-On)', () => {
    const want = translate(
      M,
      ['-On'],
      nodes.map((n) => `${n.module}::${n.name}`),
    );
    const bad = nodes.filter((n, i) => want[i] !== '.' + n.oid).map((n, i) => `${n.module}::${n.name} ours ${n.oid} theirs ${want[i]}`);
    expect(bad).toEqual([]);
    for (const n of nodes) expect(index.toNumeric(`${n.module}::${n.name}`)?.oid).toBe(n.oid);
  });

  it('resolves every numeric OID to the name snmptranslate gives (-OS)', () => {
    const oids = [...new Set(nodes.map((n) => n.oid))];
    const theirs = translate(
      M,
      ['-OS'],
      oids.map((o) => '.' + o),
    );
    const bad: string[] = [];
    oids.forEach((oid, i) => {
      const r = index.toSymbolic(oid);
      const t = theirs[i]!;
      const [mod, name] = t.split('::') as [string, string];
      // Several modules may define one OID (RFC1213-MIB and IF-MIB): the name must be the same and
      // snmptranslate's module must be one of ours for that OID.
      const ours = index.definitions(oid);
      if (r.node?.name !== name || r.suffix !== '' || !ours.some((n) => n.module === mod && n.name === name))
        bad.push(`${oid}: ours ${r.symbolic} theirs ${t}`);
    });
    expect(bad).toEqual([]);
  });

  it('resolves instances by longest prefix both ways (MODULE::column.7.1 <-> numeric)', () => {
    const leaves = nodes.filter((n) => n.kind === 'column' || n.kind === 'scalar');
    const inst = (n: MibNode) => (n.kind === 'scalar' ? '0' : '7.1');
    const numeric = translate(
      M,
      ['-Ir', '-On'],
      leaves.map((n) => `${n.module}::${n.name}.${inst(n)}`),
    );
    const symbolic = translate(
      M,
      ['-Ir', '-OSb'],
      leaves.map((n) => `.${n.oid}.${inst(n)}`),
    );
    const bad: string[] = [];
    leaves.forEach((n, i) => {
      const fwd = index.toNumeric(`${n.module}::${n.name}.${inst(n)}`);
      if ('.' + fwd?.oid !== numeric[i]) bad.push(`fwd ${n.module}::${n.name}: ${fwd?.oid} vs ${numeric[i]}`);
      const back = index.toSymbolic(`${n.oid}.${inst(n)}`);
      const theirName = symbolic[i]!.split('::')[1];
      if (`${back.node?.name}${back.suffix ? '.' + back.suffix : ''}` !== theirName) bad.push(`back ${n.oid}: ${back.symbolic} vs ${symbolic[i]}`);
    });
    expect(bad).toEqual([]);
  });

  it('resolves bare names like snmptranslate -IR', () => {
    // Names defined at one OID only (a name at two OIDs is ambiguous for any tool).
    const byName = new Map<string, Set<string>>();
    for (const n of nodes) (byName.get(n.name) ?? byName.set(n.name, new Set()).get(n.name)!).add(n.oid);
    const names = [...byName].filter(([, o]) => o.size === 1).map(([n]) => n);
    const theirs = translate(
      M,
      ['-Ir', '-IR', '-On'],
      names.map((n) => `${n}.5`),
    );
    const bad = names.filter((n, i) => '.' + index.toNumeric(`${n}.5`)?.oid !== theirs[i]);
    expect(bad).toEqual([]);
  });

  it('gives the same full symbolic path as snmptranslate -Of, and accepts it back', () => {
    const sample = nodes.filter((_, i) => i % 5 === 0);
    const theirs = translate(
      M,
      ['-Of'],
      sample.map((n) => '.' + n.oid),
    );
    const bad: string[] = [];
    sample.forEach((n, i) => {
      const path =
        '.' +
        index
          .breadcrumb(n.oid)
          .map((c) => c.name)
          .join('.');
      if (path !== theirs[i]) bad.push(`${n.oid}: ${path} vs ${theirs[i]}`);
      if (index.toNumeric(theirs[i]!)?.oid !== n.oid) bad.push(`back ${theirs[i]}`);
    });
    expect(bad).toEqual([]);
  });

  it('has the syntax, access, status, index, hints and members snmptranslate -Td shows', () => {
    const objs = nodes.filter((n) => n.kind !== 'node');
    const td = details(
      M,
      objs.map((n) => `${n.module}::${n.name}`),
    );
    const bad: string[] = [];
    let compared = 0;
    for (const n of objs) {
      // snmptranslate prints each OID's details once, under the module it prefers.
      const t = td.get(`${n.module}::${n.name}`);
      if (!t) continue;
      compared++;
      const check = (what: string, ours: string | undefined, theirs: string | undefined) => {
        if ((ours ?? '') !== (theirs ?? '')) bad.push(`${n.module}::${n.name} ${what}: ours '${ours}' theirs '${theirs}'`);
      };
      check(
        'FROM',
        index
          .definitions(n.oid)
          .filter((x) => x.name === n.name)
          .map((x) => x.module)
          .sort()
          .join(', '),
        t['FROM']?.split(', ').sort().join(', '),
      );
      // SMIv1's NetworkAddress is a CHOICE of IpAddress, which is what we resolve it to.
      // (net-snmp prints UCD-SNMP-MIB's Float, `Opaque (SIZE (7))`, as `Opaque (UCD-SNMP-MIB)`.)
      if (n.syntax && t['SYNTAX'] && t['SYNTAX'] !== 'Opaque (UCD-SNMP-MIB)')
        check('SYNTAX', netSnmpSyntax(n.syntax), t['SYNTAX'].replace(/^NetworkAddress$/, 'IpAddress'));
      check('MAX-ACCESS', n.access, t['MAX-ACCESS'] ?? t['ACCESS']);
      if (t['MAX-ACCESS'] ?? t['ACCESS']) check('STATUS', n.status, t['STATUS']);
      check('UNITS', n.units && `"${n.units}"`, t['UNITS']);
      check('DISPLAY-HINT', n.syntax?.displayHint && `"${n.syntax.displayHint}"`, t['DISPLAY-HINT']);
      check('TEXTUAL CONVENTION', n.syntax?.tc?.name, t['TEXTUAL CONVENTION']);
      if (n.kind === 'row' && !n.augments) check('INDEX', `{ ${n.index?.map((x) => (x.implied ? 'IMPLIED ' : '') + x.name).join(', ')} }`, t['INDEX']);
      if (n.augments) check('AUGMENTS', `{ ${n.augments.name} }`, t['AUGMENTS']);
      if (n.kind === 'notification') check('OBJECTS', n.objects?.length ? `{ ${n.objects.map((o) => o.name).join(', ')} }` : undefined, t['OBJECTS']);
    }
    expect(compared).toBeGreaterThan(1500);
    expect(bad).toEqual([]);
  });

  it('explains a node: breadcrumb, children, notification members', () => {
    const d = index.node('IF-MIB::linkDown')!;
    expect(d.oid).toBe('1.3.6.1.6.3.1.1.5.3');
    expect(d.breadcrumb.map((c) => c.name)).toEqual([
      'iso',
      'org',
      'dod',
      'internet',
      'snmpV2',
      'snmpModules',
      'snmpMIB',
      'snmpMIBObjects',
      'snmpTraps',
      'linkDown',
    ]);
    expect(d.members?.map((m) => [m.name, m.oid, m.kind, m.syntax?.base])).toEqual([
      ['ifIndex', '1.3.6.1.2.1.2.2.1.1', 'column', 'Integer32'],
      ['ifAdminStatus', '1.3.6.1.2.1.2.2.1.7', 'column', 'INTEGER'],
      ['ifOperStatus', '1.3.6.1.2.1.2.2.1.8', 'column', 'INTEGER'],
    ]);
    expect(d.members?.[1]?.syntax?.enums).toEqual({ up: 1, down: 2, testing: 3 });
    const row = index.node('1.3.6.1.2.1.31.1.1.1')!;
    expect([row.name, row.kind, row.augments?.name, row.index?.map((x) => x.name)]).toEqual(['ifXEntry', 'row', 'ifEntry', ['ifIndex']]);
    const hc = index.lookup('IF-MIB::ifHCInOctets')!;
    expect([hc.kind, hc.syntax?.base, hc.access]).toEqual(['column', 'Counter64', 'read-only']);
    const tree = index.subtree('IF-MIB::ifTable', 2)!;
    expect(tree.name).toBe('ifTable');
    expect(tree.children?.[0]?.name).toBe('ifEntry');
    expect(tree.children?.[0]?.children?.map((c) => c.name).slice(0, 3)).toEqual(['ifIndex', 'ifDescr', 'ifType']);
    expect(index.subtree('1.3.6.1.2.1.2.2', 0)!.children).toBeUndefined();
    expect(
      index
        .search('ifInOctets')
        .map((n) => `${n.module}::${n.name}`)
        .slice(0, 2),
    ).toEqual(expect.arrayContaining(['IF-MIB::ifInOctets']));
    expect(index.search('octets', { module: 'IF-MIB', kinds: ['column'] }).every((n) => n.module === 'IF-MIB' && n.kind === 'column')).toBe(true);
    const access = index.node('SNMP-VIEW-BASED-ACM-MIB::vacmAccessEntry')!;
    expect(access.index?.map((x) => `${x.module}::${x.name}${x.implied ? ' implied' : ''}`)).toEqual([
      'SNMP-VIEW-BASED-ACM-MIB::vacmGroupName',
      'SNMP-VIEW-BASED-ACM-MIB::vacmAccessContextPrefix',
      'SNMP-VIEW-BASED-ACM-MIB::vacmAccessSecurityModel',
      'SNMP-VIEW-BASED-ACM-MIB::vacmAccessSecurityLevel',
    ]);
    expect(index.node('SNMP-VIEW-BASED-ACM-MIB::vacmViewTreeFamilyEntry')!.index?.map((x) => x.name)).toEqual([
      'vacmViewTreeFamilyViewName',
      'vacmViewTreeFamilySubtree',
    ]);
  });

  it('browses one module as a tree, filtered by kind, and subtrees limited to a module', () => {
    const flat = (ts: TreeNode[]): TreeNode[] => ts.flatMap((t) => [t, ...flat(t.children ?? [])]);
    const all = flat(index.moduleTree('IF-MIB'));
    expect(all.map((t) => t.oid).sort()).toEqual(
      index
        .all('IF-MIB')
        .map((n) => n.oid)
        .sort(),
    );
    expect(all.every((t) => t.module === 'IF-MIB')).toBe(true);
    const tables = flat(index.moduleTree('IF-MIB', ['table']));
    expect(tables.map((t) => t.name).sort()).toEqual(['ifRcvAddressTable', 'ifStackTable', 'ifTable', 'ifTestTable', 'ifXTable']);
    // Under mib-2 only the arcs that lead to IF-MIB definitions.
    const sub = index.subtree('1.3.6.1.2.1', 1, 'IF-MIB')!;
    expect(sub.children!.map((c) => c.name)).toEqual(['interfaces', 'ifMIB']);
    expect(index.subtree('SNMPv2-SMI::mib-2', 1)!.childCount).toBeGreaterThan(20);
  });

  it('round-trips the compiled format through JSON, and refuses another format version', () => {
    const again = new MibIndex(result.modules.map((m) => compiledFromJson(compiledToJson(m), m.module)));
    expect(again.toSymbolic('1.3.6.1.2.1.2.2.1.10.3').symbolic).toBe('IF-MIB::ifInOctets.3');
    expect(again.all()).toEqual(nodes);
    const old = { ...result.modules[0]!, format: 0 };
    expect(() => compiledFromJson(JSON.stringify(old), 'X.json')).toThrow(CompiledFormatError);
    expect(() => compiledFromJson('{"nodes": 1}', 'Y.json')).toThrow(/Y.json: not a compiled MIB module/);
  });

  it('refuses malformed OIDs and answers null for unknown names', () => {
    expect(() => index.toSymbolic('1.3.x')).toThrow(OidSyntaxError);
    expect(() => index.toNumeric('IF-MIB::ifInOctets..3')).toThrow(OidSyntaxError);
    expect(index.toNumeric('IF-MIB::noSuchThing')).toBeNull();
    expect(index.toNumeric('noSuchThing.1')).toBeNull();
    expect(index.toSymbolic('1.3.6.1.4.1.99999.1').symbolic).toBe('SNMPv2-SMI::enterprises.99999.1');
    expect(index.toSymbolic('3.1').node).toBeUndefined();
  });
});

/** Our syntax as snmptranslate -Td prints it: base type, then enums or ranges/sizes. */
function netSnmpSyntax(s: CompiledSyntax): string {
  let out: string = s.base;
  if (s.enums)
    out += ` {${Object.entries(s.enums)
      .map(([k, v]) => `${k}(${v})`)
      .join(', ')}}`;
  else if (s.ranges ?? s.sizes) out += ` (${(s.ranges ?? s.sizes)!.map(([a, b]) => (a === b ? `${a}` : `${a}..${b}`)).join(' | ')})`;
  return out;
}
