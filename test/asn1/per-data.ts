// PerTypes.Constrained values: the XER that asn1c reads and the record each encoding must decode to.
import type { Rec } from '../../src/plugins/types.js';

export interface PerCase {
  xer: string;
  record: Rec;
}

const full = `<Constrained><byte>200</byte><word>40000</word><small>-3</small><offset>1002</offset><one>7</one><semi>70000</semi>
<unconstrained>-70000</unconstrained><extRange>5</extRange><bigRange>4000000000</bigRange><flag><true/></flag>
<fixedOctets>01020304</fixedOctets><varOctets>0A0B0C</varOctets><longOctets>${'CD'.repeat(300)}</longOctets>
<fixedBits>101010101010</fixedBits><varBits>11001</varBits><digits>4915551234</digits><ia5>hello world</ia5><alpha>GATTACA</alpha>
<vis>Visible!</vis><utf>Grüße ✓</utf><color><green/></color><extColor><green/></extColor>
<list><INTEGER>1</INTEGER><INTEGER>2</INTEGER><INTEGER>15</INTEGER></list><pick><c>x</c></pick><extPick><a>2</a></extPick>
<nested><x>-42</x><y>FF</y></nested><added>77</added><g1><true/></g1><g2>oks</g2></Constrained>`;

const minimal = `<Constrained><byte>0</byte><word>65535</word><small>5</small><offset>1000</offset><one>7</one><semi>0</semi>
<unconstrained>0</unconstrained><extRange>100</extRange><bigRange>0</bigRange><flag><false/></flag>
<fixedOctets>FFFFFFFF</fixedOctets><varOctets></varOctets><longOctets></longOctets>
<fixedBits>000000000001</fixedBits><varBits>1</varBits><digits>0</digits><ia5>A</ia5><alpha></alpha>
<vis></vis><utf></utf><color><blue/></color><extColor><blue/></extColor>
<list></list><pick><b><false/></b></pick><extPick><z><true/></z></extPick><opt>3</opt><dflt><false/></dflt>
<nested><x>100</x></nested></Constrained>`;

export const perCases: PerCase[] = [
  {
    xer: full,
    record: {
      byte: 200,
      word: 40000,
      small: -3,
      offset: 1002,
      one: 7,
      semi: 70000,
      unconstrained: -70000,
      extRange: 5,
      bigRange: 4000000000,
      flag: true,
      fixedOctets: '01020304',
      varOctets: '0a0b0c',
      longOctets: 'cd'.repeat(300),
      fixedBits: '101010101010',
      varBits: '11001',
      digits: '4915551234',
      ia5: 'hello world',
      alpha: 'GATTACA',
      vis: 'Visible!',
      utf: 'Grüße ✓',
      color: 'green',
      extColor: 'green',
      list: [1, 2, 15],
      pick: { type: 'c', value: 'x' },
      extPick: { type: 'a', value: 2 },
      dflt: true,
      nested: { x: -42, y: 'ff' },
      added: 77,
      g1: true,
      g2: 'oks',
    },
  },
  {
    xer: minimal,
    record: {
      byte: 0,
      word: 65535,
      small: 5,
      offset: 1000,
      one: 7,
      semi: 0,
      unconstrained: 0,
      extRange: 100,
      bigRange: 0,
      flag: false,
      fixedOctets: 'ffffffff',
      varOctets: '',
      longOctets: '',
      fixedBits: '000000000001',
      varBits: '1',
      digits: '0',
      ia5: 'A',
      alpha: '',
      vis: '',
      utf: '',
      color: 'blue',
      extColor: 'blue',
      list: [],
      pick: { type: 'b', value: false },
      extPick: { type: 'z', value: true },
      opt: 3,
      dflt: false,
      nested: { x: 100 },
    },
  },
];
