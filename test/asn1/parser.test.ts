// Module syntax: what the parser accepts (the constructs of 3GPP charging modules), what it skips,
// and where it reports errors. Tags and constraints are checked through the compiled model.
import { describe, expect, it } from 'vitest';
import { Asn1SchemaError } from '../../src/asn1/compile.js';
import { Asn1SyntaxError } from '../../src/asn1/lexer.js';
import { schemaOf } from '../../src/asn1/load.js';
import { tagKey } from '../../src/asn1/model.js';

const ctx = (n: number) => tagKey(2, n);
const univ = (n: number) => tagKey(0, n);

describe('asn1 module parser', () => {
  it('reads headers, comments, EXPORTS, value assignments and skips information object classes', () => {
    const s = schemaOf({
      'a.asn': `Attribute-ASN1Module {joint-iso-itu-t ms(9) smi(3) part2(2) asn1Module(2) 1}
DEFINITIONS IMPLICIT TAGS ::= BEGIN -- a comment -- EXPORTS ALL; /* block /* nested */ comment */
MANAGEMENT-EXTENSION ::= CLASS { &id OBJECT IDENTIFIER UNIQUE, &Value } WITH SYNTAX { IDENTIFIED BY &id WITH TYPE &Value }
ManagementExtension ::= SEQUENCE {
  identifier MANAGEMENT-EXTENSION.&id ({ExtSet}),
  significance [1] BOOLEAN DEFAULT FALSE,
  information [2] MANAGEMENT-EXTENSION.&Value ({ExtSet}{@.identifier})
}
ExtSet MANAGEMENT-EXTENSION ::= { ... }
maxLen INTEGER ::= 20
Name ::= IA5String (SIZE (1..maxLen)) -- trailing comment
Param {T} ::= SEQUENCE { t T }
Mode ::= ENUMERATED { a, b(5), c, ... , d }
Flags ::= BIT STRING { x(0), y(3) } (SIZE (4..8, ...))
Range ::= INTEGER (-5..<10 | 20)
Num ::= NumericString (FROM ("0".."9")) (SIZE (1..15))
END`,
    });
    const ext = s.type('ManagementExtension');
    expect(ext.body.components!.map((c) => [c.name, c.type.body.kind, c.type.tags])).toEqual([
      ['identifier', 'any', []],
      ['significance', 'boolean', [ctx(1)]],
      ['information', 'any', [ctx(2)]],
    ]);
    expect(ext.body.components![1]!.default).toBe(false);
    expect(s.type('Name').size).toEqual({ lo: 1, hi: 20, ext: false });
    expect(s.type('Mode').body.enumRoot).toEqual([
      { name: 'a', value: 0 },
      { name: 'c', value: 1 },
      { name: 'b', value: 5 },
    ]);
    expect(s.type('Mode').body.enumExt).toEqual([{ name: 'd', value: 6 }]);
    expect(s.type('Flags').size).toEqual({ lo: 4, hi: 8, ext: true });
    expect(s.type('Range').range).toEqual({ lo: -5n, hi: 20n, ext: false });
    expect(s.type('Num').alphabet).toEqual([48, 49, 50, 51, 52, 53, 54, 55, 56, 57]);
  });

  it('applies the tagging default: IMPLICIT, EXPLICIT, AUTOMATIC, and CHOICE tags always explicit', () => {
    const s = schemaOf({
      'i.asn': `I DEFINITIONS IMPLICIT TAGS ::= BEGIN
S ::= SEQUENCE { a [0] INTEGER, b [1] EXPLICIT INTEGER, c [2] C, d [APPLICATION 3] OCTET STRING }
C ::= CHOICE { x [0] NULL, y [1] BOOLEAN }
END
E DEFINITIONS EXPLICIT TAGS ::= BEGIN
S ::= SEQUENCE { a [0] INTEGER, b [1] IMPLICIT INTEGER }
END
A DEFINITIONS AUTOMATIC TAGS ::= BEGIN
S ::= SEQUENCE { a INTEGER, b C, c SEQUENCE OF INTEGER }
T ::= SEQUENCE { a [5] INTEGER, b INTEGER }
C ::= CHOICE { x NULL, y BOOLEAN }
END`,
    });
    const tags = (name: string) => s.type(name).body.components!.map((c) => c.type.tags);
    expect(tags('I.S')).toEqual([[ctx(0)], [ctx(1), univ(2)], [ctx(2)], [tagKey(1, 3)]]);
    expect(tags('E.S')).toEqual([[ctx(0), univ(2)], [ctx(1)]]);
    expect(tags('A.S')).toEqual([[ctx(0)], [ctx(1)], [ctx(2)]]);
    expect(s.type('A.S').body.components![1]!.type.body.kind).toBe('choice'); // [1] explicit around the CHOICE
    expect(tags('A.T')).toEqual([[ctx(5)], [univ(2)]]); // a tag written by hand turns automatic tagging off
    expect(tags('A.C')).toEqual([[ctx(0)], [ctx(1)]]);
  });

  it('reports a syntax error with file, line, column and token', () => {
    const bad = (text: string) => {
      try {
        schemaOf({ 'bad.asn': text });
      } catch (e) {
        expect(e).toBeInstanceOf(Asn1SyntaxError);
        return (e as Error).message;
      }
      throw new Error('no error');
    };
    expect(bad('M DEFINITIONS ::= BEGIN\nT ::= SEQUENCE { a INTEGER b BOOLEAN }\nEND')).toBe("bad.asn:2:28: expected ',' or '}' (at 'b')");
    expect(bad('M DEFINITIONS ::= BEGIN\nT ::= INTEGER\n')).toBe("bad.asn:3:1: module without 'END' (at '<end of file>')");
    expect(bad('M DEFINITIONS ::= BEGIN\nT ::= SEQUENCE { A INTEGER }\nEND')).toBe("bad.asn:2:18: a component name starts with a lower-case letter (at 'A')");
    expect(bad('M DEFINITIONS ::= BEGIN\nT ::= IA5String (SIZE (1..2)\nEND')).toBe("bad.asn:3:1: expected ')' (at 'END')");
    expect(bad('M DEFINITIONS ::= BEGIN\nT ::= INTEGER # \nEND')).toBe("bad.asn:2:15: unexpected character (at '#')");
  });

  it('reports schema errors: missing module, missing import, unknown type, unknown class', () => {
    const err = (texts: Record<string, string>, type = 'T') => {
      try {
        schemaOf(texts).type(type);
      } catch (e) {
        expect(e).toBeInstanceOf(Asn1SchemaError);
        return (e as Error).message;
      }
      throw new Error('no error');
    };
    expect(err({ 'm.asn': 'M DEFINITIONS ::= BEGIN\nIMPORTS X FROM Other;\nT ::= X\nEND' })).toBe(
      "m.asn:2: module 'M' imports from module 'Other', which is not in the schema files (known modules: M)",
    );
    expect(err({ 'm.asn': 'M DEFINITIONS ::= BEGIN\nIMPORTS X FROM O;\nT ::= X\nEND', 'o.asn': 'O DEFINITIONS ::= BEGIN\nY ::= NULL\nEND' })).toBe(
      "m.asn:2: 'X' is imported from 'O', which does not define it",
    );
    expect(err({ 'm.asn': 'M DEFINITIONS ::= BEGIN\nT ::= SEQUENCE {\n a U }\nEND' })).toBe(
      "m.asn:3: type 'U' is not defined in module 'M' nor imported into it",
    );
    expect(err({ 'm.asn': 'M DEFINITIONS ::= BEGIN\nT ::= NULL\nU ::= NULL\nEND' }, 'V')).toBe("unknown message class 'V'; known types: T, U");
    expect(err({ 'm.asn': 'M DEFINITIONS ::= BEGIN\nT ::= U\nU ::= T\nEND' })).toMatch(/defined in terms of itself/);
  });

  it('resolves imports across modules and names types by Module.Type when ambiguous', () => {
    const s = schemaOf({
      'a.asn': 'A DEFINITIONS IMPLICIT TAGS ::= BEGIN\nIMPORTS Id, maxN FROM B;\nT ::= SEQUENCE (SIZE (1..maxN)) OF Id\nEND',
      'b.asn': 'B DEFINITIONS ::= BEGIN\nId ::= [APPLICATION 1] INTEGER\nmaxN INTEGER ::= 4\nT ::= NULL\nEND',
    });
    expect(() => s.type('T')).toThrow(/defined in several modules \(A, B\): name it as Module.T/);
    const t = s.type('A.T');
    expect(t.size).toEqual({ lo: 1, hi: 4, ext: false });
    expect(t.body.element!.tags).toEqual([tagKey(1, 1), univ(2)]); // B is EXPLICIT TAGS (the default)
  });
});
