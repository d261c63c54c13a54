// Types shared by the MIB parser, compiler and index, including the compiled module format that is
// persisted as JSON (one file per module in SVC_MIB_DIR). Bump MIB_FORMAT when that shape changes.

export const MIB_FORMAT = 1;

/** A parse or compile finding, located in the source file. */
export interface MibDiagnostic {
  severity: 'error' | 'warning';
  file: string;
  /** 1-based; 0 when the finding concerns the whole file */
  line: number;
  /** 1-based; 0 when unknown */
  column: number;
  /** the offending token, when there is one */
  token?: string;
  module?: string;
  message: string;
  /** set when the finding is a breached limit: the setting that raises it (MIB_LIMIT_SETTINGS), or the fixed limit's name */
  limit?: string;
}

/** Limits of one compile; each breach is an error of the module concerned (docs/reliability.md, Limits). */
export interface MibLimits {
  /** largest source file in UTF-8 bytes; a larger one is not parsed */
  maxSourceBytes: number;
  /** definitions in one module */
  maxSymbols: number;
  /** sub-identifiers in one OID (RFC 2578 and net-snmp: 128); also how many definitions deep an OID may be defined */
  maxOidDepth: number;
  /** length of one module's compiled JSON (characters) */
  maxCompiledBytes: number;
}

/** The defaults: several times the largest real MIBs (vendor modules of 1-2 MB and a few thousand definitions). */
export const MIB_LIMITS: Readonly<MibLimits> = { maxSourceBytes: 4 << 20, maxSymbols: 20000, maxOidDepth: 128, maxCompiledBytes: 32 << 20 };

/** The setting that raises each limit (src/settings.ts). */
export const MIB_LIMIT_SETTINGS: Readonly<Record<keyof MibLimits, string>> = {
  maxSourceBytes: 'SVC_MIB_MAX_SOURCE_BYTES',
  maxSymbols: 'SVC_MIB_MAX_SYMBOLS',
  maxOidDepth: 'SVC_MIB_MAX_OID_DEPTH',
  maxCompiledBytes: 'SVC_MIB_MAX_COMPILED_BYTES',
};

/** Diagnostics kept per module and list; the rest are counted in one last diagnostic (a hostile module can make one per definition). */
export const MIB_MAX_DIAGNOSTICS = 100;

/** A range or size bound: a number, a decimal string beyond 2^53, or `MIN`/`MAX`. */
export type Range = [number | string, number | string];

/** A SYNTAX as written (parser output). */
export interface TypeAst {
  tag?: { cls: 'APPLICATION' | 'UNIVERSAL' | 'PRIVATE' | 'CONTEXT'; num: number };
  base?: 'INTEGER' | 'OCTET STRING' | 'OBJECT IDENTIFIER' | 'BITS' | 'NULL' | 'SEQUENCE' | 'SEQUENCE OF' | 'CHOICE';
  /** a named type: an SMI type (Counter32...), a textual convention or a local type */
  ref?: string;
  /** INTEGER enumeration or BITS positions */
  enums?: [string, number][];
  ranges?: Range[];
  sizes?: Range[];
  /** SEQUENCE OF <of> */
  of?: string;
  members?: [string, TypeAst][];
}

/**
 * The SNMP base type an object's values have on the wire. INTEGER (enumerations, plain INTEGER) and
 * Integer32 are the same on the wire; they are kept apart as the MIB writes them (as net-snmp
 * does). BITS travel as OCTET STRING.
 */
export type BaseType =
  | 'INTEGER'
  | 'Integer32'
  | 'Unsigned32'
  | 'Gauge32'
  | 'Counter32'
  | 'Counter64'
  | 'TimeTicks'
  | 'IpAddress'
  | 'Opaque'
  | 'OCTET STRING'
  | 'OBJECT IDENTIFIER'
  | 'BITS'
  | 'NULL'
  | 'SEQUENCE'
  | 'SEQUENCE OF'
  | 'unknown';

export type NodeKind =
  | 'node' // OBJECT IDENTIFIER assignment (or a name given inside an OID value, `org(3)`)
  | 'module-identity'
  | 'object-identity'
  | 'scalar'
  | 'table'
  | 'row'
  | 'column'
  | 'notification' // NOTIFICATION-TYPE
  | 'trap' // SMIv1 TRAP-TYPE (OID per RFC 3584: enterprise.0.specific)
  | 'object-group'
  | 'notification-group'
  | 'compliance'
  | 'capabilities';

export interface SymbolRef {
  module: string;
  name: string;
  /** numeric OID; absent when the symbol is not an OID-valued node (e.g. an SMIv1 index type) */
  oid?: string;
}

export interface CompiledSyntax {
  /** the type as written: `DisplayString`, `INTEGER`, `Counter32`, `SEQUENCE OF IfEntry` */
  type: string;
  /** module defining the named type, when it is not an ASN.1 base type */
  typeModule?: string;
  base: BaseType;
  /** the nearest textual convention on the way to the base type */
  tc?: { module: string; name: string };
  displayHint?: string;
  /** INTEGER enumeration (name -> value) or BITS (name -> bit position), own or inherited */
  enums?: Record<string, number>;
  ranges?: Range[];
  sizes?: Range[];
}

export interface CompiledNode {
  name: string;
  /** the defining module (repeated on each node so that a node stands alone in API answers) */
  module: string;
  /** numeric, dotted, no leading dot */
  oid: string;
  kind: NodeKind;
  line: number;
  status?: string;
  description?: string;
  reference?: string;
  syntax?: CompiledSyntax;
  /** MAX-ACCESS (SMIv2) or ACCESS (SMIv1) */
  access?: string;
  units?: string;
  defval?: string;
  /** rows: INDEX objects (inherited through AUGMENTS); `implied` for an IMPLIED last index */
  index?: (SymbolRef & { implied?: true })[];
  augments?: SymbolRef;
  /** notifications and traps: OBJECTS/VARIABLES; groups: members; compliance: groups */
  objects?: SymbolRef[];
  /** traps: ENTERPRISE OID and specific-trap number */
  enterprise?: string;
  trapNumber?: number;
}

export interface CompiledType {
  name: string;
  kind: 'textual-convention' | 'type';
  line: number;
  status?: string;
  description?: string;
  reference?: string;
  displayHint?: string;
  syntax: CompiledSyntax;
}

/** One compiled module, self-contained (numeric OIDs resolved), serialisable with JSON.stringify. */
export interface CompiledModule {
  format: typeof MIB_FORMAT;
  module: string;
  /** the source file as given to the compiler */
  file: string;
  /** source group (`common`, a user group, `bundled`...) when the caller gave one */
  group?: string;
  smi: 'v1' | 'v2';
  /** MODULE-IDENTITY */
  identity?: {
    name: string;
    oid: string;
    lastUpdated?: string;
    organization?: string;
    contactInfo?: string;
    description?: string;
    revisions?: { date: string; description: string }[];
  };
  imports: { module: string; symbols: string[] }[];
  nodes: CompiledNode[];
  types: CompiledType[];
  /** warnings (and, in partial mode, the errors of definitions that were left out) */
  diagnostics: MibDiagnostic[];
}

/** A module (or a file that yielded none) that did not compile. */
export interface ModuleFailure {
  /** null when the file held no parsable module header */
  module: string | null;
  file: string;
  group?: string;
  /** imported modules that are not in the set */
  missing: string[];
  /** imported modules that are in the set but failed themselves */
  failedImports: string[];
  errors: MibDiagnostic[];
  /** the limit it breached (the `limit` of its first such error), when that is why it failed */
  limit?: string;
}

/** A compile failure as the API shows it: the ModuleFailure plus the store path of its file. */
export type FailureView = ModuleFailure & { path: string };

/** A module that lost to another source of the same module name (see preferSource). */
export interface ShadowedModule {
  module: string;
  file: string;
  group?: string;
  lastUpdated?: string;
  by: { file: string; group?: string; lastUpdated?: string };
}

export interface CompileResult {
  /** compiled modules, sorted by name */
  modules: CompiledModule[];
  failed: ModuleFailure[];
  shadowed: ShadowedModule[];
  /** each compiled module's JSON (compiledToJson's text), by module name: made while its size was checked */
  json: Map<string, string>;
}
