// The compiled type model every decoder walks: references resolved, tags computed for the module's
// tagging environment, constraints reduced to their PER-visible bounds, DEFAULT values converted.

export type Kind =
  | 'sequence'
  | 'set'
  | 'choice'
  | 'sequenceOf'
  | 'setOf'
  | 'integer'
  | 'enumerated'
  | 'boolean'
  | 'null'
  | 'real'
  | 'octets'
  | 'bits'
  | 'oid'
  | 'relOid'
  | 'string'
  | 'gtime'
  | 'utime'
  | 'any';

/** A tag as one number: class * 2^29 + number (class 0 universal, 1 application, 2 context, 3 private). */
export const tagKey = (cls: number, num: number): number => cls * 0x20000000 + num;
export const tagText = (k: number): string => {
  const cls = Math.floor(k / 0x20000000);
  const num = k % 0x20000000;
  return cls === 2 ? `[${num}]` : `[${['UNIVERSAL ', 'APPLICATION ', '', 'PRIVATE '][cls]}${num}]`;
};

export interface Component {
  name: string;
  type: Asn1Type;
  optional: boolean;
  /** The DEFAULT value, already in the decoded mapping. */
  default?: unknown;
  hasDefault: boolean;
  /** Extension addition group number (undefined: in the root). */
  extGroup?: number;
  /** In a `[[ ]]` group (PER: the group is one SEQUENCE in one open type). */
  extBracket?: boolean;
}

export interface EnumItem {
  name: string;
  value: number;
}

/** The definition shared by every use of a type (filled in late for recursive types). */
export interface Body {
  kind: Kind;
  /** Type reference name, when the body comes from an assignment (XER element names, messages). */
  name?: string;
  module?: string;
  components?: Component[];
  /** SEQUENCE / SET / CHOICE / ENUMERATED has an extension marker. */
  ext?: boolean;
  element?: Asn1Type;
  /** ENUMERATED: root items in value order, extension items in definition order. */
  enumRoot?: EnumItem[];
  enumExt?: EnumItem[];
  /** INTEGER named numbers or BIT STRING named bits: value -> name. */
  named?: Map<number, string>;
  /** Character string type name (IA5String, UTF8String...). */
  stringType?: string;
}

export interface Range<T> {
  lo?: T;
  hi?: T;
  /** The constraint is extensible (`...`). */
  ext: boolean;
}

/** One use of a type: its tags, its body and the PER-visible constraints at this use. */
export interface Asn1Type {
  /** Tag keys outermost first, one per TLV level (EXPLICIT tags add a level). Empty: untagged CHOICE / open type. */
  tags: number[];
  body: Body;
  /** The name of the reference this use went through (for XER SEQUENCE OF items). */
  refName?: string;
  range?: Range<bigint>;
  size?: Range<number>;
  /** Permitted alphabet (FROM), sorted code points. */
  alphabet?: number[];
}

export const UNIVERSAL: Record<string, number> = {
  BOOLEAN: 1,
  INTEGER: 2,
  'BIT STRING': 3,
  'OCTET STRING': 4,
  NULL: 5,
  'OBJECT IDENTIFIER': 6,
  ObjectDescriptor: 7,
  REAL: 9,
  ENUMERATED: 10,
  UTF8String: 12,
  'RELATIVE-OID': 13,
  SEQUENCE: 16,
  SET: 17,
  NumericString: 18,
  PrintableString: 19,
  TeletexString: 20,
  T61String: 20,
  VideotexString: 21,
  IA5String: 22,
  UTCTime: 23,
  GeneralizedTime: 24,
  GraphicString: 25,
  VisibleString: 26,
  ISO646String: 26,
  GeneralString: 27,
  UniversalString: 28,
  BMPString: 30,
};
