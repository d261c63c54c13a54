// SMIv1/SMIv2 parser: tokens -> one ParsedModule per `NAME DEFINITIONS ::= BEGIN ... END`.
// Recursive descent over the SMI macros (RFC 1155/1212/1215, RFC 2578/2579/2580). A syntax error
// is recorded with file, line, column and token, then parsing resumes at the next definition, so one
// error yields one diagnostic per bad definition and the module's other definitions stay known.
import { LexError, Tok, Tokens } from './lexer.js';
import { MIB_LIMITS, MIB_LIMIT_SETTINGS, MIB_MAX_DIAGNOSTICS, type MibDiagnostic, type Range, type TypeAst } from './types.js';
import { exactNumber } from '../util/exact-number.js';

/** One `{ ... }` OID component: `iso`, `3`, or `org(3)`. */
export interface OidComponent {
  name?: string;
  num?: number;
}

export type DefKind =
  | 'oid' // name OBJECT IDENTIFIER ::= { ... }
  | 'object-type'
  | 'module-identity'
  | 'object-identity'
  | 'notification-type'
  | 'trap-type'
  | 'object-group'
  | 'notification-group'
  | 'module-compliance'
  | 'agent-capabilities'
  | 'textual-convention' // Name ::= TEXTUAL-CONVENTION ...
  | 'type' // Name ::= <type>
  | 'value'; // name <type> ::= <value> (other than OBJECT IDENTIFIER; kept for completeness)

export interface Definition {
  kind: DefKind;
  name: string;
  line: number;
  col: number;
  /** OID value (`::= { parent 3 }`) */
  oid?: OidComponent[];
  syntax?: TypeAst;
  units?: string;
  access?: string;
  status?: string;
  description?: string;
  reference?: string;
  index?: { name: string; implied: boolean }[];
  augments?: string;
  defval?: string;
  /** OBJECTS (notification, group), VARIABLES (trap), NOTIFICATIONS (group) */
  objects?: string[];
  /** TRAP-TYPE */
  enterprise?: OidComponent[];
  trapNumber?: number;
  displayHint?: string;
  lastUpdated?: string;
  organization?: string;
  contactInfo?: string;
  revisions?: { date: string; description: string }[];
  /** MODULE-COMPLIANCE: MANDATORY-GROUPS and GROUP names; AGENT-CAPABILITIES: INCLUDES groups.
   * `module` is the module the MODULE/SUPPORTS clause names (absent: the defining module). */
  groups?: { module?: string; name: string }[];
  productRelease?: string;
}

export interface ParsedModule {
  name: string;
  file: string;
  /** where the module name stands in its header */
  line: number;
  column: number;
  /** imported module -> symbols */
  imports: { module: string; symbols: string[]; line: number; column: number }[];
  defs: Definition[];
  /** syntax errors; the module is incomplete when there are any */
  errors: MibDiagnostic[];
  /** SMIv2 when it uses SMIv2 definitions, imports from SNMPv2-*, or defines SMIv2's macros */
  smi: 'v1' | 'v2';
}

export interface ParseResult {
  modules: ParsedModule[];
  /** errors outside any module (e.g. text that is no module at all) */
  errors: MibDiagnostic[];
}

/** SMI macro names: known to the parser, so importing them needs no source module. */
export const MACROS = new Set([
  'OBJECT-TYPE',
  'MODULE-IDENTITY',
  'OBJECT-IDENTITY',
  'NOTIFICATION-TYPE',
  'TRAP-TYPE',
  'TEXTUAL-CONVENTION',
  'OBJECT-GROUP',
  'NOTIFICATION-GROUP',
  'MODULE-COMPLIANCE',
  'AGENT-CAPABILITIES',
]);

/** The definition kind of each macro that defines an OID value. */
const MACRO_KINDS = new Map<string, DefKind>();
for (const m of MACROS) if (m !== 'TEXTUAL-CONVENTION') MACRO_KINDS.set(m, m.toLowerCase() as DefKind);

/** A syntax error at token index `at`; `limit` when it is a breached limit (see MibDiagnostic). */
class SmiSyntaxError extends Error {
  constructor(
    message: string,
    readonly at: number,
    readonly limit?: string,
  ) {
    super(message);
  }
}

/**
 * Types and constraints nested deeper than this are refused: each level is a recursive call, and
 * real MIBs nest two or three (a SEQUENCE in a CHOICE, a SIZE in parentheses).
 */
export const MAX_NESTING = 32;
const NESTING_LIMIT = `SMI nesting (${MAX_NESTING} levels)`;

export interface ParseOptions {
  /** definitions per module (default MIB_LIMITS.maxSymbols); more are an error of the module */
  maxSymbols?: number;
}

const isUpper = (s: string): boolean => {
  const c = s.charCodeAt(0);
  return c >= 65 && c <= 90;
};

/** Parses one file; never throws. A bad character is reported and read as a blank. */
export function parseMib(text: string, file: string, opts: ParseOptions = {}): ParseResult {
  const lexErrors: MibDiagnostic[] = [];
  let toks: Tokens | undefined;
  for (let tries = 0; !toks; tries++) {
    try {
      toks = new Tokens(text);
    } catch (e) {
      if (!(e instanceof LexError)) throw e;
      lexErrors.push({ severity: 'error', file, line: e.line, column: e.col, token: e.token, message: e.message });
      if (tries >= 20) return { modules: [], errors: lexErrors };
      text = text.slice(0, e.offset) + ' ' + text.slice(e.offset + 1);
    }
  }
  const r = new Parser(toks, file, opts.maxSymbols ?? MIB_LIMITS.maxSymbols).parseFile();
  for (const d of lexErrors) {
    const m = r.modules.filter((x) => x.line <= d.line).pop();
    if (m) m.errors.push({ ...d, module: m.name });
    else r.errors.push(d);
  }
  return r;
}

/** Definitions only SMIv2 has. */
const V2_KINDS = new Set<DefKind>([
  'module-identity',
  'object-identity',
  'notification-type',
  'textual-convention',
  'object-group',
  'notification-group',
  'module-compliance',
  'agent-capabilities',
]);

/** SMIv2 when it uses SMIv2 definitions or imports from SNMPv2-* (plain loops: no closures). */
function isV2(m: ParsedModule): boolean {
  const { defs, imports } = m;
  for (let i = 0; i < defs.length; i++) if (V2_KINDS.has(defs[i]!.kind)) return true;
  for (let i = 0; i < imports.length; i++) if (imports[i]!.module.startsWith('SNMPv2-')) return true;
  return false;
}

class Parser {
  private i = 0;
  /** the module defines SMIv2's macros (SNMPv2-SMI, SNMPv2-TC, SNMPv2-CONF) */
  private v2Macros = false;
  private mod!: ParsedModule;
  private readonly K: Tok[];
  private readonly V: string[];
  /** types and constraints open around the cursor (reset at each definition) */
  private nesting = 0;
  /** diagnostics of the current module left out after MIB_MAX_DIAGNOSTICS, and whether one was an error */
  private dropped = 0;
  private droppedError = false;
  /** findHeader: the index of the first `}` at or after some point (-1: none left), so its scans stay linear */
  private nextClose = -2;

  constructor(
    private readonly t: Tokens,
    private readonly file: string,
    private readonly maxSymbols: number,
  ) {
    this.K = t.k;
    this.V = t.v;
  }

  parseFile(): ParseResult {
    const modules: ParsedModule[] = [];
    const errors: MibDiagnostic[] = [];
    while (this.K[this.i] !== Tok.Eof) {
      const start = this.i;
      const hdr = this.findHeader();
      if (hdr < 0) {
        errors.push(this.diag(`expected a module header 'NAME DEFINITIONS ::= BEGIN'`, start));
        break;
      }
      if (hdr > this.i) errors.push(this.diag(`text before the module header`, start));
      this.i = hdr;
      modules.push(this.parseModule());
    }
    if (!modules.length && !errors.length) errors.push(this.diag('no MIB module in file', this.i));
    return { modules, errors };
  }

  /** Index of the next `NAME [{oid}] DEFINITIONS` at or after the cursor, or -1. */
  private findHeader(): number {
    const { K, V } = this;
    for (let j = this.i; j < K.length - 1; j++) {
      if (K[j] !== Tok.Id) continue;
      if (V[j + 1] === 'DEFINITIONS') return j;
      if (V[j + 1] === '{' && isUpper(V[j]!)) {
        // The first `}` after j + 1, found once for a run of such names (`A { A { A {` would
        // otherwise scan to the end from each of them).
        if (this.nextClose !== -1 && this.nextClose < j + 1) {
          let k = j + 1;
          while (k < K.length - 1 && V[k] !== '}') k++;
          this.nextClose = V[k] === '}' ? k : -1;
        }
        if (this.nextClose >= 0 && V[this.nextClose + 1] === 'DEFINITIONS') return j;
      }
    }
    return -1;
  }

  private parseModule(): ParsedModule {
    const at = this.i++;
    this.v2Macros = false;
    const line = this.t.lineAt(this.t.pos[at]!);
    this.mod = { name: this.V[at]!, file: this.file, line, column: this.t.col, imports: [], defs: [], errors: [], smi: 'v1' };
    this.dropped = 0;
    this.droppedError = false;
    try {
      if (this.V[this.i] === '{') this.rawBalanced('{', '}');
      this.expect('DEFINITIONS');
      while (this.V[this.i] !== '::=' && this.K[this.i] !== Tok.Eof) this.i++; // IMPLICIT TAGS etc.
      this.expect('::=');
      this.expect('BEGIN');
    } catch (e) {
      this.fail(e);
      this.skipToEnd();
      this.closeErrors();
      return this.mod;
    }
    for (;;) {
      const k = this.K[this.i];
      const v = this.V[this.i];
      if (k === Tok.Eof) {
        this.report(this.diag(`module ${this.mod.name} has no END`, this.i));
        break;
      }
      if (v === 'END' && k === Tok.Id && this.isModuleEnd(this.i)) {
        this.i++;
        break;
      }
      const start = this.i;
      this.nesting = 0;
      try {
        if (v === 'IMPORTS' && k === Tok.Id) this.parseImports();
        else if (v === 'EXPORTS' && k === Tok.Id) this.skipPast(';');
        else this.parseAssignment();
      } catch (e) {
        this.fail(e);
        // The offending token may itself start the next definition: look from it, never from `start`.
        this.resync(Math.max(start + 1, this.i - 1));
      }
      if (this.mod.defs.length > this.maxSymbols) {
        // The rest is not parsed: the module fails, and the work stays bounded by the limit.
        const d = this.mod.defs.pop()!;
        const setting = MIB_LIMIT_SETTINGS.maxSymbols;
        this.report({
          ...this.diag(
            `module ${this.mod.name} has more than ${this.maxSymbols} definitions (${setting}=${this.maxSymbols}): split the module, or raise ${setting}`,
            start,
          ),
          line: d.line,
          column: d.col,
          token: d.name,
          limit: setting,
        });
        this.skipToEnd();
        break;
      }
    }
    this.closeErrors();
    if (this.v2Macros || isV2(this.mod)) this.mod.smi = 'v2';
    return this.mod;
  }

  /** `END` at j closes the module when the file ends or the next module header follows. */
  private isModuleEnd(j: number): boolean {
    return this.K[j + 1] === Tok.Eof || this.V[j + 2] === 'DEFINITIONS' || this.V[j + 2] === '{';
  }

  private parseImports(): void {
    this.i++; // IMPORTS
    let pending: string[] = [];
    while (this.V[this.i] !== ';') {
      const j = this.i++;
      const k = this.K[j];
      const v = this.V[j]!;
      if (k === Tok.Eof) throw new SmiSyntaxError(`unterminated IMPORTS (missing ';')`, j);
      if (v === ',') continue;
      if (v === 'FROM' && k === Tok.Id) {
        const m = this.expectId('module name after FROM');
        const line = this.t.lineAt(this.t.pos[m]!);
        this.mod.imports.push({ module: this.V[m]!, symbols: pending, line, column: this.t.col });
        pending = [];
        if (this.V[this.i] === '{') this.rawBalanced('{', '}'); // FROM MODULE { oid }
        continue;
      }
      if (k !== Tok.Id) throw new SmiSyntaxError(`unexpected '${v}' in IMPORTS`, j);
      // A missing ';' before the first definition: `sym OBJECT-TYPE`, `sym OBJECT IDENTIFIER`, `X ::=`.
      const nx = this.V[this.i]!;
      if (!pending.length && (MACROS.has(nx) || nx === '::=' || nx === 'OBJECT' || nx === 'MACRO')) {
        this.i--;
        this.report(this.diag(`IMPORTS not terminated by ';'`, j, 'warning'));
        return;
      }
      pending.push(v);
    }
    this.i++;
    if (pending.length) throw new SmiSyntaxError(`symbols ${pending.join(', ')} imported without FROM`, this.i - 1);
  }

  private parseAssignment(): void {
    const at = this.i++;
    const name = this.V[at]!;
    if (this.K[at] !== Tok.Id) throw new SmiSyntaxError(`expected a definition, found '${name}'`, at);
    const kw = this.V[this.i]!;
    if (kw === 'MACRO') {
      // The macro definitions of SNMPv2-SMI, RFC-1212... are built into this parser.
      if (name === 'MODULE-IDENTITY' || name === 'TEXTUAL-CONVENTION' || name === 'OBJECT-GROUP') this.v2Macros = true;
      this.i++;
      this.expect('::=');
      this.expect('BEGIN');
      while (this.V[this.i] !== 'END') {
        if (this.K[this.i] === Tok.Eof) throw new SmiSyntaxError(`macro ${name} has no END`, this.i);
        this.i++;
      }
      this.i++;
      return;
    }
    const line = this.t.lineAt(this.t.pos[at]!);
    const d = newDefinition(name, line, this.t.col);
    if (kw === '::=') {
      this.i++;
      if (this.V[this.i] === 'TEXTUAL-CONVENTION') {
        this.i++;
        d.kind = 'textual-convention';
        this.parseClauses(d);
      } else {
        d.kind = 'type';
        d.syntax = this.parseType();
      }
      this.mod.defs.push(d);
      return;
    }
    if (kw === 'OBJECT' && this.V[this.i + 1] === 'IDENTIFIER') {
      this.i += 2;
      this.expect('::=');
      d.oid = this.parseOid();
      this.mod.defs.push(d);
      return;
    }
    const macro = MACRO_KINDS.get(kw);
    if (macro !== undefined) {
      this.i++;
      d.kind = macro;
      this.parseClauses(d);
      if (d.kind === 'trap-type') {
        const n = this.i++;
        if (this.K[n] !== Tok.Num) throw new SmiSyntaxError(`TRAP-TYPE ${name}: expected the trap number after '::=', found '${this.V[n]}'`, n);
        d.trapNumber = Number(this.V[n]);
      } else d.oid = this.parseOid();
      this.mod.defs.push(d);
      return;
    }
    if (!isUpper(name) && this.K[this.i] === Tok.Id) {
      // name <Type> ::= <value>: a value assignment of another type.
      d.kind = 'value';
      d.syntax = this.parseType();
      this.expect('::=');
      if (this.V[this.i] === '{') this.rawBalanced('{', '}');
      else this.i++;
      this.mod.defs.push(d);
      return;
    }
    throw new SmiSyntaxError(`unexpected '${kw}' after '${name}' (expected OBJECT IDENTIFIER, a macro such as OBJECT-TYPE, or '::=')`, this.i);
  }

  /** Macro clauses up to `::=` (consumed). */
  private parseClauses(d: Definition): void {
    for (;;) {
      const j = this.i++;
      const v = this.V[j]!;
      if (v === '::=') return;
      if (this.K[j] !== Tok.Id) throw new SmiSyntaxError(`unexpected '${v}' in ${d.kind.toUpperCase()} ${d.name}`, j);
      if (d.kind === 'textual-convention' && v === 'SYNTAX') {
        d.syntax = this.parseType();
        return; // SYNTAX ends a TEXTUAL-CONVENTION
      }
      // One switch, most frequent clauses first (a table lookup by a token's text costs more in
      // unoptimised code: the text has to be looked up as a property name first).
      switch (v) {
        case 'SYNTAX':
          d.syntax = this.parseType();
          break;
        case 'MAX-ACCESS':
        case 'ACCESS':
          d.access = this.V[this.expectId('an access value')]!;
          break;
        case 'STATUS':
          d.status = this.V[this.expectId('a status value')]!;
          break;
        case 'DESCRIPTION':
          d.description = this.V[this.expectStr(v)]!;
          break;
        case 'REFERENCE':
          d.reference = this.V[this.expectStr(v)]!;
          break;
        case 'UNITS':
          d.units = this.V[this.expectStr(v)]!;
          break;
        case 'DISPLAY-HINT':
          d.displayHint = this.V[this.expectStr(v)]!;
          break;
        case 'LAST-UPDATED':
          d.lastUpdated = this.V[this.expectStr(v)]!;
          break;
        case 'ORGANIZATION':
          d.organization = this.V[this.expectStr(v)]!;
          break;
        case 'CONTACT-INFO':
          d.contactInfo = this.V[this.expectStr(v)]!;
          break;
        case 'PRODUCT-RELEASE':
          d.productRelease = this.V[this.expectStr(v)]!;
          break;
        case 'REVISION': {
          const date = this.V[this.expectStr('REVISION')]!;
          this.expect('DESCRIPTION');
          (d.revisions ??= []).push({ date, description: this.V[this.expectStr('DESCRIPTION')]! });
          break;
        }
        case 'INDEX':
          d.index = this.parseIndex();
          break;
        case 'AUGMENTS':
          this.expect('{');
          d.augments = this.V[this.expectId('the augmented row')]!;
          this.expect('}');
          break;
        case 'DEFVAL':
          d.defval = this.rawBalanced('{', '}');
          break;
        case 'OBJECTS':
        case 'VARIABLES':
        case 'NOTIFICATIONS':
          d.objects = this.nameList();
          break;
        case 'ENTERPRISE':
          d.enterprise = this.V[this.i] === '{' ? this.parseOid() : [{ name: this.V[this.expectId('the enterprise')]! }];
          break;
        default:
          if (d.kind === 'module-compliance' || d.kind === 'agent-capabilities') {
            // MODULE / SUPPORTS sections: keep the group names, skip the refinements.
            this.i--;
            this.complianceBody(d);
            return;
          }
          throw new SmiSyntaxError(`unexpected '${v}' in ${d.kind.toUpperCase()} ${d.name}`, j);
      }
    }
  }

  /** MODULE-COMPLIANCE / AGENT-CAPABILITIES sections up to `::=` (consumed): the groups they name. */
  private complianceBody(d: Definition): void {
    const groups: { module?: string; name: string }[] = [];
    let module: string | undefined;
    for (;;) {
      const j = this.i++;
      const v = this.V[j]!;
      const k = this.K[j];
      if (k === Tok.Eof) throw new SmiSyntaxError(`${d.name}: missing '::='`, j);
      if (v === '::=') break;
      if (k !== Tok.Id) {
        if (v === '{' || v === '(') {
          this.i--;
          this.rawBalanced(v, v === '{' ? '}' : ')');
        }
        continue;
      }
      // `MODULE [name]` / `SUPPORTS name`: the groups that follow belong to that module (none = this one).
      if (v === 'MODULE' || v === 'SUPPORTS')
        module = this.K[this.i] === Tok.Id && isUpper(this.V[this.i]!) && !KEYWORDS.has(this.V[this.i]!) ? this.V[this.i++] : undefined;
      else if (v === 'MANDATORY-GROUPS' || v === 'INCLUDES') for (const n of this.nameList()) groups.push(module ? { module, name: n } : { name: n });
      else if (v === 'GROUP') {
        const n = this.V[this.expectId('a group name')]!;
        groups.push(module ? { module, name: n } : { name: n });
      }
    }
    if (groups.length) d.groups = groups;
  }

  private parseIndex(): { name: string; implied: boolean }[] {
    this.expect('{');
    const out: { name: string; implied: boolean }[] = [];
    for (;;) {
      let j = this.i++;
      if (this.V[j] === '}') break;
      if (this.V[j] === ',') continue;
      let implied = false;
      if (this.V[j] === 'IMPLIED') {
        implied = true;
        j = this.i++;
      }
      if (this.K[j] !== Tok.Id) throw new SmiSyntaxError(`unexpected '${this.V[j]}' in INDEX`, j);
      // SMIv1 allows a type as an index (`INDEX { OCTET STRING }`): keep its words together.
      let name = this.V[j]!;
      while (this.K[this.i] === Tok.Id) name += ' ' + this.V[this.i++];
      if (this.V[this.i] === '(') name += ' (' + this.rawBalanced('(', ')') + ')';
      out.push({ name, implied });
    }
    return out;
  }

  private nameList(): string[] {
    this.expect('{');
    const out: string[] = [];
    for (;;) {
      const j = this.i++;
      const v = this.V[j]!;
      if (v === '}') return out;
      if (v === ',') continue;
      if (this.K[j] !== Tok.Id) throw new SmiSyntaxError(`unexpected '${v}' in a list of names`, j);
      out.push(v);
    }
  }

  private parseOid(): OidComponent[] {
    this.expect('{');
    const out: OidComponent[] = [];
    for (;;) {
      const j = this.i++;
      const v = this.V[j]!;
      const k = this.K[j];
      if (v === '}' && k === Tok.Punct) break;
      if (k === Tok.Num) out.push({ num: Number(v) });
      else if (k === Tok.Id) {
        if (this.V[this.i] === '(') {
          this.i++;
          const n = this.i++;
          if (this.K[n] !== Tok.Num) throw new SmiSyntaxError(`expected a number in '${v}(...)'`, n);
          this.expect(')');
          out.push({ name: v, num: Number(this.V[n]) });
        } else if (this.V[this.i] === '.') {
          this.i++; // Module.name
          out.push({ name: this.V[this.expectId('a name after the module')]! });
        } else out.push({ name: v });
      } else throw new SmiSyntaxError(`unexpected '${v}' in an OBJECT IDENTIFIER value (expected a name, a number or '}')`, j);
    }
    if (!out.length) throw new SmiSyntaxError('empty OBJECT IDENTIFIER value', this.i - 1);
    return out;
  }

  private parseType(): TypeAst {
    if (++this.nesting > MAX_NESTING) throw new SmiSyntaxError(`types nested more than ${MAX_NESTING} levels deep`, this.i, NESTING_LIMIT);
    const t = this.typeBody();
    this.nesting--;
    return t;
  }

  private typeBody(): TypeAst {
    // All fields up front, in one order (see newDefinition). A literal: a helper for it was hot
    // enough to be optimised on its own, twice, in a cold compile.
    const t: TypeAst = {
      tag: undefined,
      base: undefined,
      ref: undefined,
      enums: undefined,
      ranges: undefined,
      sizes: undefined,
      of: undefined,
      members: undefined,
    };
    let j = this.i++;
    if (this.V[j] === '[') {
      let cls: 'APPLICATION' | 'UNIVERSAL' | 'PRIVATE' | 'CONTEXT' = 'CONTEXT';
      if (this.K[this.i] === Tok.Id) cls = this.V[this.i++] as typeof cls;
      const n = this.i++;
      if (this.K[n] !== Tok.Num) throw new SmiSyntaxError(`expected a tag number`, n);
      this.expect(']');
      t.tag = { cls, num: Number(this.V[n]) };
      if (this.V[this.i] === 'IMPLICIT' || this.V[this.i] === 'EXPLICIT') this.i++;
      j = this.i++;
    }
    const v = this.V[j]!;
    switch (this.K[j] === Tok.Id ? v : '') {
      case 'INTEGER':
        t.base = 'INTEGER';
        break;
      case 'OCTET':
        this.expect('STRING');
        t.base = 'OCTET STRING';
        break;
      case 'OBJECT':
        this.expect('IDENTIFIER');
        t.base = 'OBJECT IDENTIFIER';
        break;
      case 'BITS':
        t.base = 'BITS';
        break;
      case 'NULL':
        t.base = 'NULL';
        return t;
      case 'SEQUENCE':
        if (this.V[this.i] === 'OF') {
          this.i++;
          t.base = 'SEQUENCE OF';
          t.of = this.V[this.expectId('the row type after SEQUENCE OF')]!;
          return t;
        }
        t.base = 'SEQUENCE';
        t.members = this.members();
        return t;
      case 'CHOICE':
        t.base = 'CHOICE';
        t.members = this.members();
        return t;
      default:
        if (this.K[j] !== Tok.Id || v.charCodeAt(0) > 90) throw new SmiSyntaxError(`expected a type, found '${v}'`, j); // (an Id starts with a letter: > 90 is lower case)
        t.ref = v;
        if (this.V[this.i] === '.' && this.K[this.i + 1] === Tok.Id) {
          this.i++;
          t.ref = this.V[this.i++]!; // Module.Type
        }
    }
    if (this.V[this.i] === '{') t.enums = this.namedNumbers();
    if (this.V[this.i] === '(') this.constraint(t);
    return t;
  }

  private members(): [string, TypeAst][] {
    this.expect('{');
    const out: [string, TypeAst][] = [];
    for (;;) {
      const j = this.i++;
      const v = this.V[j]!;
      if (v === '}') return out;
      if (v === ',') continue;
      if (this.K[j] !== Tok.Id) throw new SmiSyntaxError(`unexpected '${v}' in SEQUENCE`, j);
      out.push([v, this.parseType()]);
    }
  }

  private namedNumbers(): [string, number][] {
    this.expect('{');
    const out: [string, number][] = [];
    for (;;) {
      const j = this.i++;
      const v = this.V[j]!;
      if (v === '}') return out;
      if (v === ',') continue;
      if (this.K[j] !== Tok.Id) throw new SmiSyntaxError(`unexpected '${v}' in a list of named numbers`, j);
      this.expect('(');
      const n = this.i++;
      if (this.K[n] !== Tok.Num) throw new SmiSyntaxError(`expected a number for '${v}'`, n);
      this.expect(')');
      out.push([v, Number(this.V[n])]);
    }
  }

  /** `(SIZE (a..b | c))` or `(a..b | c)`, possibly in extra parentheses. */
  private constraint(t: TypeAst): void {
    if (++this.nesting > MAX_NESTING) throw new SmiSyntaxError(`parentheses nested more than ${MAX_NESTING} levels deep`, this.i, NESTING_LIMIT);
    this.expect('(');
    if (this.V[this.i] === 'SIZE') {
      this.i++;
      this.expect('(');
      t.sizes = this.ranges();
      this.expect(')');
    } else if (this.V[this.i] === '(') this.constraint(t);
    else t.ranges = this.ranges();
    this.expect(')');
    this.nesting--;
  }

  private ranges(): Range[] {
    const out: Range[] = [];
    for (;;) {
      const lo = this.rangeValue();
      let hi = lo;
      if (this.V[this.i] === '..') {
        this.i++;
        hi = this.rangeValue();
      }
      out.push([lo, hi]);
      if (this.V[this.i] !== '|') return out;
      this.i++;
    }
  }

  private rangeValue(): number | string {
    const j = this.i++;
    const v = this.V[j]!;
    switch (this.K[j]) {
      case Tok.Num:
        return v.length < 16 ? Number(v) : exactNumber(BigInt(v));
      case Tok.Hex:
        if (!/^[0-9a-f]*$/i.test(v)) throw new SmiSyntaxError(`'${v}'H is not a hexadecimal number`, j);
        return exactNumber(v ? BigInt('0x' + v) : 0n);
      case Tok.Bin:
        if (!/^[01]*$/.test(v)) throw new SmiSyntaxError(`'${v}'B is not a binary number`, j);
        return exactNumber(v ? BigInt('0b' + v) : 0n);
    }
    if (v === 'MIN' || v === 'MAX') return v;
    throw new SmiSyntaxError(`expected a range value, found '${v}'`, j);
  }

  // ---- token helpers

  private expect(v: string): number {
    const j = this.i;
    if (this.V[j] !== v || this.K[j] === Tok.Str) throw new SmiSyntaxError(`expected '${v}', found '${this.V[j]}'`, j);
    this.i++;
    return j;
  }
  private expectId(what: string): number {
    const j = this.i;
    if (this.K[j] !== Tok.Id) throw new SmiSyntaxError(`expected ${what}, found '${this.V[j]}'`, j);
    this.i++;
    return j;
  }
  private expectStr(clause: string): number {
    const j = this.i;
    if (this.K[j] !== Tok.Str) throw new SmiSyntaxError(`${clause}: expected a quoted string, found '${this.V[j]}'`, j);
    this.i++;
    return j;
  }
  private skipPast(v: string): void {
    while (this.K[this.i] !== Tok.Eof && this.V[this.i++] !== v);
  }
  /** The balanced `{ ... }` (or `( ... )`) at the cursor, as text without the outer brackets. */
  private rawBalanced(open: string, close: string): string {
    const first = this.expect(open);
    const parts: string[] = [];
    for (let depth = 1; ; ) {
      const j = this.i++;
      const k = this.K[j];
      const v = this.V[j]!;
      if (k === Tok.Eof) throw new SmiSyntaxError(`unbalanced '${open}'`, first);
      if (k === Tok.Punct && v === open) depth++;
      else if (k === Tok.Punct && v === close && --depth === 0) break;
      parts.push(k === Tok.Str ? `"${v}"` : k === Tok.Hex ? `'${v}'H` : k === Tok.Bin ? `'${v}'B` : v);
    }
    return parts.join(' ');
  }

  /** After an error: continue at the next token that starts a definition, or at the module's END. */
  private resync(from: number): void {
    const { K, V } = this;
    for (let j = from; j < K.length; j++) {
      if (K[j] === Tok.Eof) {
        this.i = j;
        return;
      }
      if (K[j] !== Tok.Id) continue;
      const v = V[j]!;
      if (v === 'END' && this.isModuleEnd(j)) {
        this.i = j;
        return;
      }
      const nx = V[j + 1]!;
      if (MACROS.has(nx) || nx === 'MACRO' || (nx === 'OBJECT' && V[j + 2] === 'IDENTIFIER' && V[j + 3] === '::=') || (nx === '::=' && isUpper(v))) {
        this.i = j;
        return;
      }
    }
    this.i = K.length - 1;
  }

  private skipToEnd(): void {
    while (this.K[this.i] !== Tok.Eof) {
      if (this.V[this.i] === 'END' && this.isModuleEnd(this.i)) {
        this.i++;
        return;
      }
      this.i++;
    }
  }

  private fail(e: unknown): void {
    if (!(e instanceof SmiSyntaxError)) throw e;
    const d = this.diag(e.message, e.at);
    this.report(e.limit ? { ...d, limit: e.limit } : d);
  }

  /** A diagnostic of the current module, within MIB_MAX_DIAGNOSTICS (a breached limit is always kept: it says why the module failed). */
  private report(d: MibDiagnostic): void {
    if (this.mod.errors.length < MIB_MAX_DIAGNOSTICS || (d.limit && !this.mod.errors.some((e) => e.limit))) this.mod.errors.push(d);
    else {
      this.dropped++;
      if (d.severity === 'error') this.droppedError = true;
    }
  }

  /** The count of the diagnostics report() left out, as one more. */
  private closeErrors(): void {
    if (!this.dropped) return;
    const last = this.mod.errors[this.mod.errors.length - 1]!;
    this.mod.errors.push({
      severity: this.droppedError ? 'error' : 'warning',
      file: this.file,
      line: last.line,
      column: last.column,
      module: this.mod.name,
      message: `${this.dropped} more diagnostics not shown (the first ${MIB_MAX_DIAGNOSTICS} are)`,
    });
  }

  private diag(message: string, at: number, severity: 'error' | 'warning' = 'error'): MibDiagnostic {
    const tk = this.t.token(at);
    return { severity, file: this.file, line: tk.line, column: tk.col, token: tk.v, message, ...(this.mod ? { module: this.mod.name } : {}) };
  }
}

// Every Definition and TypeAst gets all its fields up front, in one order: the clauses come in any
// order, and objects built field by field in varying orders get many hidden classes, which makes
// every later property access in the compiler slow (megamorphic).
function newDefinition(name: string, line: number, col: number): Definition {
  return {
    kind: 'oid',
    name,
    line,
    col,
    oid: undefined,
    syntax: undefined,
    units: undefined,
    access: undefined,
    status: undefined,
    description: undefined,
    reference: undefined,
    index: undefined,
    augments: undefined,
    defval: undefined,
    objects: undefined,
    enterprise: undefined,
    trapNumber: undefined,
    displayHint: undefined,
    lastUpdated: undefined,
    organization: undefined,
    contactInfo: undefined,
    revisions: undefined,
    groups: undefined,
    productRelease: undefined,
  };
}

/** Keywords that may follow MODULE in a compliance statement (so they are not a module name). */
const KEYWORDS = new Set(['MANDATORY-GROUPS', 'GROUP', 'OBJECT', 'INCLUDES', 'VARIATION', 'DESCRIPTION', 'SUPPORTS']);
