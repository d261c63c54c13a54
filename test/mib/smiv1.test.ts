// SMIv1 (RFC 1155/1212/1215): TRAP-TYPE, ACCESS/mandatory, Counter and IpAddress from RFC1155-SMI,
// macros imported from RFC-1212 (not in the corpus: built into the parser), against snmptranslate.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileMibs } from '../../src/mib/compiler.js';
import { MibIndex } from '../../src/mib/mib-index.js';
import { CORPUS, FIXTURES, details, readSources, translate } from './helpers.js';

const V1 = join(FIXTURES, 'v1');
const DIRS = [CORPUS, V1];

describe('SMIv1 module with TRAP-TYPE', () => {
  const r = compileMibs([...readSources(V1), ...readSources(CORPUS)]);
  const index = new MibIndex(r.modules);
  const mod = r.modules.find((m) => m.module === 'ACME-V1-MIB')!;

  it('compiles as SMIv1 although RFC-1212 and RFC-1215 only provide macros', () => {
    expect(r.failed).toEqual([]);
    expect(mod.smi).toBe('v1');
  });

  it('places every node where snmptranslate does, traps at enterprise.0.specific (RFC 3584)', () => {
    const names = mod.nodes.map((n) => `ACME-V1-MIB::${n.name}`);
    const theirs = translate(DIRS, ['-On'], names);
    expect(mod.nodes.map((n) => '.' + n.oid)).toEqual(theirs);
    const down = index.lookup('ACME-V1-MIB::acmePortDown')!;
    expect([down.kind, down.oid, down.enterprise, down.trapNumber]).toEqual(['trap', '1.3.6.1.4.1.424242.0.3', '1.3.6.1.4.1.424242', 3]);
    expect(index.toSymbolic('1.3.6.1.4.1.424242.1.0.1').symbolic).toBe('ACME-V1-MIB::acmeReboot');
  });

  it('has the details snmptranslate -Td shows (VARIABLES, enums, access, DEFVAL)', () => {
    const td = details(DIRS, [
      'ACME-V1-MIB::acmePortDown',
      'ACME-V1-MIB::acmePortState',
      'ACME-V1-MIB::acmePortEntry',
      'ACME-V1-MIB::acmePortErrors',
      'ACME-V1-MIB::acmePortPeer',
    ]);
    const down = index.node('ACME-V1-MIB::acmePortDown')!;
    expect(`{ ${down.objects!.map((o) => o.name).join(', ')} }`).toBe(td.get('ACME-V1-MIB::acmePortDown')!['OBJECTS']);
    expect(down.members!.map((m) => [m.name, m.kind, m.syntax?.base])).toEqual([
      ['acmePortIndex', 'column', 'INTEGER'],
      ['acmePortState', 'column', 'INTEGER'],
    ]);
    const state = index.lookup('ACME-V1-MIB::acmePortState')!;
    const t = td.get('ACME-V1-MIB::acmePortState')!;
    expect(
      `INTEGER {${Object.entries(state.syntax!.enums!)
        .map(([k, v]) => `${k}(${v})`)
        .join(', ')}}`,
    ).toBe(t['SYNTAX']);
    expect(state.access).toBe(t['ACCESS'] ?? t['MAX-ACCESS']);
    expect(`{ ${state.defval} }`).toBe(t['DEFVAL']);
    expect(state.description).toBe('The state of the port,\n                 on two lines.');
    expect(
      `{ ${index
        .lookup('ACME-V1-MIB::acmePortEntry')!
        .index!.map((x) => x.name)
        .join(', ')} }`,
    ).toBe(td.get('ACME-V1-MIB::acmePortEntry')!['INDEX']);
    expect(index.lookup('ACME-V1-MIB::acmePortErrors')!.syntax!.base).toBe(td.get('ACME-V1-MIB::acmePortErrors')!['SYNTAX'].replace(/^Counter$/, 'Counter32'));
    expect(index.lookup('ACME-V1-MIB::acmePortPeer')!.syntax!.base).toBe(td.get('ACME-V1-MIB::acmePortPeer')!['SYNTAX']);
    expect(index.lookup('ACME-V1-MIB::acmePortPeer')!.status).toBe('optional');
  });

  it('lists traps among the notifications', () => {
    expect(index.notifications('ACME-V1-MIB').map((n) => n.name)).toEqual(['acmePortDown', 'acmeReboot']);
  });
});
