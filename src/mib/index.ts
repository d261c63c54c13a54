// The MIB core, as the console's /api/mibs endpoints and the engine's resolve_oids use it:
//
//   const { modules, failed, shadowed, json } = compileMibs(sources, { mode: 'full', limits });
//   for (const m of modules) writeFile(`${SVC_MIB_DIR}/${m.module}.json`, json.get(m.module)); // = compiledToJson(m)
//   const index = new MibIndex(modules);            // or from compiledFromJson() of those files
//   index.toSymbolic('1.3.6.1.2.1.2.2.1.10.3')      // { symbolic: 'IF-MIB::ifInOctets.3', node, suffix: '3' }
//   index.toNumeric('IF-MIB::ifInOctets.3')          // { oid: '1.3.6.1.2.1.2.2.1.10.3', ... }
//   index.subtree('1.3.6.1.2.1.2', 2) / search('octets', { module, kinds }) / node(oid) / objects() / notifications()
//
// See docs/mibs.md for the supported SMI, the diagnostics and the compiled format.
import { MIB_FORMAT, type CompiledModule } from './types.js';

export { compileMibs, preferSource, groupRank, jsonWithin, type MibSource, type CompileOptions } from './compiler.js';
export {
  MibIndex,
  OidSyntaxError,
  compareOids,
  type MibNode,
  type Resolution,
  type TreeNode,
  type Crumb,
  type NodeDetail,
  type SearchOptions,
} from './mib-index.js';
export { parseMib, type ParsedModule, type ParseResult } from './parser.js';
export * from './types.js';

export class CompiledFormatError extends Error {
  override name = 'CompiledFormatError';
}

/** A compiled module as the JSON text persisted in SVC_MIB_DIR. */
export function compiledToJson(m: CompiledModule): string {
  return JSON.stringify(m);
}

/**
 * A compiled module back from its JSON text. Throws CompiledFormatError when the text is not one,
 * or was written by another format version (then recompile from the sources).
 */
export function compiledFromJson(text: string, file = 'compiled module'): CompiledModule {
  let m: Partial<CompiledModule>;
  try {
    m = JSON.parse(text) as Partial<CompiledModule>;
  } catch (e) {
    throw new CompiledFormatError(`${file}: not JSON (${(e as Error).message})`);
  }
  if (typeof m !== 'object' || m === null || typeof m.module !== 'string' || !Array.isArray(m.nodes))
    throw new CompiledFormatError(`${file}: not a compiled MIB module`);
  if (m.format !== MIB_FORMAT)
    throw new CompiledFormatError(`${file}: compiled format ${String(m.format)}, this version reads ${MIB_FORMAT}; recompile from the sources`);
  return m as CompiledModule;
}
