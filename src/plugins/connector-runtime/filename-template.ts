// Filename and object-key templates, shared by every file and object sink (local, sftp, ftp, s3,
// gcs, azure_blob). Pure functions: the sink supplies the values, this module builds a safe,
// '/'-separated relative path that can never climb out of the sink's directory or prefix.
import path from 'node:path';
import type { Rec, SourceMeta } from '../types.js';

/** Tokens without arguments; `{field.<name>}` is the one parameterised token. */
export const TEMPLATE_TOKENS = [
  'pipeline',
  'timestamp',
  'epoch',
  'epoch_m',
  'part',
  'index',
  'run_id',
  'source_filename',
  'source_stem',
  'source_suffix',
  'source_path',
] as const;

const FIELD_PREFIX = 'field.';
const TOKEN_RE = /\{([^{}]*)\}/g;
/** Values that stand in for a missing source name or field. */
export const UNKNOWN = 'unknown';
/** Field values are cut to this length so a long value cannot exceed file-name limits. */
const MAX_FIELD_CHARS = 100;

export interface TemplateValues {
  pipeline: string;
  runId: string;
  /** Run start: {timestamp}, {epoch} and {epoch_m} are fixed for the whole run. */
  startedAt: Date;
  /** The part number, already zero-padded (see `padPart`). */
  part: string;
  /** Metadata of the source unit the records came from. */
  meta?: SourceMeta;
  /** First record of the batch, for `{field.<name>}`. */
  first?: Rec;
}

/** Every `{...}` token of a template, in order, without braces. */
export function templateTokens(template: string): string[] {
  return [...template.matchAll(TOKEN_RE)].map((m) => m[1] ?? '');
}

const isKnown = (token: string): boolean =>
  (TEMPLATE_TOKENS as readonly string[]).includes(token) || (token.startsWith(FIELD_PREFIX) && token.length > FIELD_PREFIX.length);

/** Tokens the template uses that do not exist (for lint), without braces, deduplicated. */
export function unknownTokens(template: string): string[] {
  return [...new Set(templateTokens(template).filter((t) => !isKnown(t)))];
}

export const hasPartToken = (template: string): boolean => templateTokens(template).some((t) => t === 'part' || t === 'index');

/** Problems that make a template unusable; empty when it is fine. Messages name the culprit. */
export function lintTemplate(template: string): string[] {
  const problems = unknownTokens(template).map((t) => `unknown token {${t}}; known tokens: ${TEMPLATE_TOKENS.map((k) => `{${k}}`).join(', ')}, {field.<name>}`);
  const literal = template.replace(TOKEN_RE, 'x');
  if (/[{}]/.test(literal)) problems.push("unbalanced '{' or '}'");
  if (template.startsWith('/') || template.startsWith('\\')) problems.push('must be a relative path (it is placed under the target directory)');
  if (literal.split(/[/\\]/).some((s) => s === '..')) problems.push("must not contain '..' path segments");
  if (/[/\\]$/.test(template)) problems.push('must end with a file name, not a directory');
  return problems;
}

/** Run start as `YYYYMMDDTHHMMSSZ` (UTC, sortable, no characters that file systems dislike). */
export function formatTimestamp(d: Date): string {
  return `${d.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
}

/** Part number zero-padded to the digit count of `maxIndex` (99999 -> 5 digits). */
export function padPart(part: number, maxIndex: number): string {
  return String(part).padStart(String(maxIndex).length, '0');
}

/** `name.ext` -> `name_<part>.ext` (last path segment, last extension); used when the template has no {part}. */
export function withPartSuffix(relPath: string, part: string): string {
  const dir = path.posix.dirname(relPath);
  const base = path.posix.basename(relPath);
  const ext = path.posix.extname(base);
  const named = `${base.slice(0, base.length - ext.length)}_${part}${ext}`;
  return dir === '.' ? named : `${dir}/${named}`;
}

/**
 * Expands a template into a relative '/'-separated path. Token values cannot add path segments
 * (separators are replaced) except `{source_path}`, whose segments are cleaned one by one; empty,
 * `.` and `..` segments are dropped, so the result always stays inside the target directory.
 * Throws on an unknown token or an empty result (lint catches both first).
 */
export function expandTemplate(template: string, v: TemplateValues): string {
  const meta = v.meta ?? {};
  const filename = typeof meta.source_filename === 'string' && meta.source_filename !== '' ? meta.source_filename : undefined;
  const suffix = filename ? path.posix.extname(filename) : '';
  const expanded = template.replace(TOKEN_RE, (_m, token: string) => {
    switch (token) {
      case 'pipeline':
        return cleanValue(v.pipeline);
      case 'timestamp':
        return formatTimestamp(v.startedAt);
      case 'epoch':
        return String(Math.floor(v.startedAt.getTime() / 1000));
      case 'epoch_m':
        return String(v.startedAt.getTime());
      case 'part':
      case 'index':
        return v.part;
      case 'run_id':
        return cleanValue(v.runId);
      case 'source_filename':
        return filename ? cleanValue(filename) : UNKNOWN;
      case 'source_stem':
        return filename ? cleanValue(filename.slice(0, filename.length - suffix.length)) : UNKNOWN;
      case 'source_suffix':
        return cleanValue(suffix);
      case 'source_path':
        return sourceDir(meta);
      default:
        if (isKnown(token)) return fieldValue(v.first, token.slice(FIELD_PREFIX.length));
        throw new Error(`unknown token {${token}} in template "${template}"`);
    }
  });
  const segments = expanded
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .map((s) => (s === '..' ? '_' : s));
  if (segments.length === 0) throw new Error(`template "${template}" expands to an empty name`);
  return segments.join('/');
}

/** A value from the file system or config: keep it as is, but it may not add or climb path segments. */
function cleanValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  const s = value.replace(/[/\\\u0000-\u001f\u007f]/g, '_');
  return /^\.+$/.test(s) ? '_' : s;
}

/**
 * `{source_path}`: the unit's directory relative to the source's root (`source_relative_dir`
 * meta, set by file and object sources), else the directory of `source_path` without its root.
 */
function sourceDir(meta: SourceMeta): string {
  const rel =
    typeof meta.source_relative_dir === 'string'
      ? meta.source_relative_dir
      : typeof meta.source_path === 'string'
        ? path.posix.dirname(meta.source_path.replace(/\\/g, '/'))
        : '';
  return rel
    .split(/[/\\]/)
    .filter((s) => s !== '' && s !== '.' && s !== '..')
    .map(cleanValue)
    .join('/');
}

/** `{field.<name>}`: a top-level key (which may itself contain dots), else a dotted path. */
function fieldValue(first: Rec | undefined, name: string): string {
  let value: unknown = first?.[name];
  if (value === undefined && first && name.includes('.')) {
    value = name.split('.').reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as Rec)[k] : undefined), first);
  }
  if (value === undefined || value === null) return UNKNOWN;
  const text = value instanceof Date ? value.toISOString() : typeof value === 'object' ? JSON.stringify(value) : String(value);
  // Record data is arbitrary: keep letters, digits, '.', '_' and '-' only.
  const s = text.replace(/[^\p{L}\p{N}._-]/gu, '_').slice(0, MAX_FIELD_CHARS);
  if (s === '') return UNKNOWN;
  return /^\.+$/.test(s) ? '_' : s;
}
