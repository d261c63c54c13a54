// A YAML syntax error in words, at the line that is wrong. The yaml library reports where it noticed
// the problem, in its own terms ("Implicit keys need to be on a single line", "Nested mappings are
// not allowed in compact mappings"), often a line before or after the one to fix: a key indented
// too far is reported at the line above it, an unclosed quote at the end of the file. This names
// the line to fix and what to do; the parser's message follows in brackets.
import type { YAMLError } from 'yaml';

export interface YamlProblem {
  line: number;
  column: number;
  message: string;
}

const indentOf = (l: string) => l.length - l.trimStart().length;
const blank = (l: string) => l.trim() === '' || l.trimStart().startsWith('#');
/** `key` of a `key: value` line (after an optional `- `), for quoting in messages. */
const keyOf = (l: string) => /^\s*(?:-\s+)?([^\s:#][^:#]*?)\s*:(?:\s|$)/.exec(l)?.[1];
const shown = (l: string) => {
  const t = l.trim();
  return `\`${t.length > 40 ? `${t.slice(0, 40)}…` : t}\``;
};

/** The first non-blank line after line `n` (1-based), or undefined. */
function nextLine(lines: string[], n: number): number | undefined {
  for (let i = n; i < lines.length; i++) if (!blank(lines[i]!)) return i + 1;
  return undefined;
}

/** Counts of an opening and a closing character outside quotes and comments on one line. */
function balance(line: string, open: string, close: string): number {
  let n = 0;
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote) {
      if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '#' && (i === 0 || /\s/.test(line[i - 1]!))) break;
    else if (ch === open) n++;
    else if (ch === close) n--;
  }
  return n;
}

/** The line (1-based, at or before `upTo`) where a quoted value is opened and not closed on it. */
function unclosedQuoteLine(lines: string[], upTo: number, q: string): number | undefined {
  for (let i = 0; i < Math.min(upTo, lines.length); i++) {
    const l = lines[i]!;
    // A value that starts with the quote: after `key: `, `- `, or at the start of the line.
    const m = /^(\s*(?:-\s+)?(?:[^\s:#][^:#]*?\s*:\s+)?)(["'])/.exec(l);
    if (!m || m[2] !== q) continue;
    const rest = l.slice(m[1]!.length + 1);
    const closed = q === '"' ? /(^|[^\\])(\\\\)*"/.test(rest) : rest.replace(/''/g, '').includes("'");
    if (!closed) return i + 1;
  }
  return undefined;
}

export function explainYamlError(text: string, err: YAMLError): YamlProblem {
  const lines = text.split(/\r?\n/);
  const parser = err.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
  const at = err.linePos?.[0] ?? { line: 1, col: 1 };
  const say = (line: number, message: string, column?: number): YamlProblem => ({
    line,
    column: column ?? indentOf(lines[line - 1] ?? '') + 1,
    message: `${message} (YAML parser: ${parser})`,
  });
  const here = lines[at.line - 1] ?? '';

  switch (err.code) {
    case 'TAB_AS_INDENT':
      return say(at.line, 'this line is indented with a tab; YAML indents with spaces only: replace the tab with spaces', 1);
    case 'DUPLICATE_KEY': {
      const key = keyOf(here);
      let first = -1;
      for (let i = at.line - 2; i >= 0 && key !== undefined && first < 0; i--)
        if (indentOf(lines[i]!) === indentOf(here) && keyOf(lines[i]!) === key) first = i;
      return say(
        at.line,
        `${key ? `\`${key}\`` : 'this key'} is given twice in the same mapping${first >= 0 ? ` (first on line ${first + 1})` : ''}: keep one of them`,
        at.col,
      );
    }
    case 'MULTILINE_IMPLICIT_KEY': {
      // A line without `key: value` that runs on into the next line.
      const noSpace = /^\s*(?:-\s+)?([^\s:#][^:#\s]*):(\S)/.exec(here);
      if (noSpace) return say(at.line, `put a space after the colon: \`${noSpace[1]}: ${here.slice(here.indexOf(':') + 1).trim()}\``);
      if (!here.includes(':')) return say(at.line, `${shown(here)} is not a \`key: value\` pair: a key needs a colon and a space after it`);
      break;
    }
    case 'BLOCK_AS_IMPLICIT_KEY': {
      const rest = here.slice(at.col - 1);
      if (/:(\s|$)/.test(rest)) {
        const key = keyOf(here);
        return say(at.line, `the value ${shown(rest)} contains ': ': put it in quotes${key ? ` (\`${key}: "${rest.trim()}"\`)` : ''}`, at.col);
      }
      // The line after a `key: value` is indented deeper, as if it belonged under that value.
      const next = nextLine(lines, at.line);
      if (next !== undefined && indentOf(lines[next - 1]!) > indentOf(here)) {
        const key = keyOf(here);
        return say(
          next,
          `this line is indented deeper than line ${at.line}, whose ${key ? `\`${key}\`` : 'key'} already has a value: indent it as the keys beside it (column ${indentOf(here) + 1})`,
        );
      }
      break;
    }
    case 'BAD_INDENT':
    case 'MISSING_CHAR': {
      if (/^Flow (sequence|mapping)/.test(parser) || /^Missing closing [\]}]/.test(parser)) {
        const [open, close, what] = parser.includes('mapping') || parser.includes('}') ? ['{', '}', 'mapping'] : ['[', ']', 'list'];
        for (let i = Math.min(at.line, lines.length) - 1; i >= 0; i--)
          if (balance(lines[i]!, open, close) > 0)
            return say(i + 1, `the ${what} opened with ${open} is not closed: end it with ${close} (or write it one item a line)`, lines[i]!.indexOf(open) + 1);
      }
      const quote = /^Missing closing (["'])quote/.exec(parser)?.[1];
      if (quote) {
        const open = unclosedQuoteLine(lines, at.line, quote);
        if (open !== undefined) return say(open, `the text opened with ${quote} is not closed: add the closing ${quote}`, lines[open - 1]!.indexOf(quote) + 1);
      }
      if (parser.startsWith('All sequence items must start at the same column'))
        return say(at.line, 'this list item is not in line with the items before it: start every `- ` of one list at the same column');
      if (parser.startsWith('All mapping items must start at the same column'))
        return say(at.line, 'this key is not in line with the keys before it: start every key of one mapping at the same column');
      if (parser.startsWith('Sequence item without - indicator'))
        return say(at.line, "this line is indented like neither a list item (`- `) nor the item's own keys: line it up with one of them");
      break;
    }
  }
  return say(
    at.line,
    `this line does not read as YAML: check its indentation (spaces, the same column for keys of one mapping), the ': ' after each key, and closing quotes and brackets`,
    at.col,
  );
}
