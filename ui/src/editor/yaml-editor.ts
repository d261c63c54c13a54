// The pipeline YAML editor: CodeMirror 6 with YAML highlighting, completion and hover docs from the
// plugins' schemas, and the server's diagnostics shown inline. Loaded on demand (its own chunk).
// Tooltips are built with textContent only: descriptions are data, never markup.
import { autocompletion, type Completion, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { indentWithTab } from '@codemirror/commands';
import { yaml } from '@codemirror/lang-yaml';
import { indentUnit } from '@codemirror/language';
import { lintGutter, setDiagnostics, type Diagnostic } from '@codemirror/lint';
import { EditorSelection, EditorState } from '@codemirror/state';
import { EditorView, hoverTooltip, keymap } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import type { DryRunDiagnostic, PluginSchemas } from '../api/types.js';
import { componentKindAt, describe, keyOptions, mustWrite, SchemaIndex, typeLabel, valueOptions } from './schema-lookup.js';
import { contextAt, entryAt, outline, valueAt, type KeyEntry, type Seg } from './yaml-outline.js';

export interface YamlEditor {
  text(): string;
  setText(text: string): void;
  showDiagnostics(diagnostics: DryRunDiagnostic[]): void;
  /** Moves the cursor to a 1-based line and column and focuses the editor. */
  goTo(line: number, column?: number): void;
  destroy(): void;
}

export interface YamlEditorOptions {
  doc: string;
  /** The page's CSP nonce: CodeMirror's injected <style> must carry it. */
  nonce: string;
  schemas?: PluginSchemas;
  onChange(text: string): void;
}

/** The plugin named by the `type` of the component at `path`, read from the current text. */
const typeReader = (entries: KeyEntry[]) => (path: Seg[]) => valueAt(entries, [...path, 'type']);

function completionSource(index: SchemaIndex) {
  return (ctx: CompletionContext): CompletionResult | null => {
    const text = ctx.state.doc.toString();
    const c = contextAt(text, ctx.pos);
    if (!c) return null;
    // A bare new line is no reason to pop up a list; typing or Ctrl-Space is.
    if (c.prefix === '' && !ctx.explicit) return null;
    const entries = outline(text);
    const typeOf = typeReader(entries);

    if (c.kind === 'key') {
      const s = index.at(c.container, typeOf);
      if (!s) return null;
      const present = new Set(
        entries
          .filter((e) => e.path.length === c.container.length + 1 && c.container.every((seg, i) => e.path[i] === seg))
          .map((e) => e.path[c.container.length]),
      );
      const options: Completion[] = keyOptions(s)
        .filter(([k]) => !present.has(k) || k === c.prefix)
        .map(([k, p]) => ({
          label: k,
          type: 'property',
          detail: typeLabel(p),
          info: p.description,
          apply: `${k}: `,
          boost: mustWrite(s, k) ? 1 : 0,
        }));
      return { from: c.from, options, validFor: /^[\w.-]*$/ };
    }

    const parent = c.path.slice(0, -1);
    const kind = componentKindAt(parent);
    if (kind && c.path[c.path.length - 1] === 'type') {
      const options: Completion[] = Object.values(index.plugins(kind)).map((p) => ({ label: p.key, type: 'class', detail: p.kind, info: p.summary }));
      return { from: c.from, options, validFor: /^[\w.-]*$/ };
    }
    const s = index.at(c.path, typeOf);
    if (!s) return null;
    const values = valueOptions(s);
    if (!values.length) return null;
    return { from: c.from, options: values.map((v) => ({ label: v, type: 'constant' })), validFor: /^[\w.-]*$/ };
  };
}

function tooltipDom(title: string, body: string): HTMLElement {
  const dom = document.createElement('div');
  dom.className = 'cm-schema-doc';
  const t = document.createElement('div');
  t.className = 'cm-schema-doc-title';
  t.textContent = title;
  dom.append(t);
  if (body) {
    const b = document.createElement('div');
    b.textContent = body;
    dom.append(b);
  }
  return dom;
}

function hoverDocs(index: SchemaIndex) {
  return hoverTooltip((view, pos) => {
    const entries = outline(view.state.doc.toString());
    const hit = entryAt(entries, pos);
    if (!hit) return null;
    const { entry, on } = hit;
    const typeOf = typeReader(entries);
    const key = String(entry.path[entry.path.length - 1]);
    const parent = entry.path.slice(0, -1);
    let title: string;
    let body: string;
    const kind = componentKindAt(parent);
    if (on === 'value' && key === 'type' && kind) {
      const p = index.plugin(kind, entry.value);
      if (!p) return null;
      title = `${p.kind} ${p.key}${p.status === 'beta' ? ' (beta)' : ''}`;
      body = p.summary + (p.delivery ? `\nDelivery: ${p.delivery.guarantee}.` : '');
    } else if (on === 'key') {
      const s = index.at(entry.path, typeOf);
      if (!s) return null;
      const holder = index.at(parent, typeOf);
      ({ title, body } = describe(key, s, mustWrite(holder, key)));
    } else return null;
    return {
      pos: on === 'key' ? entry.keyFrom : entry.valueFrom,
      end: on === 'key' ? entry.keyTo : entry.valueTo,
      above: true,
      create: () => ({ dom: tooltipDom(title, body) }),
    };
  });
}

/** Server diagnostics (1-based line and column) as CodeMirror ranges: the word at the position. */
export function toRanges(state: EditorState, diagnostics: DryRunDiagnostic[]): Diagnostic[] {
  return diagnostics.map((d) => {
    const lineNo = Math.min(Math.max(d.line ?? 1, 1), state.doc.lines);
    const line = state.doc.line(lineNo);
    const from = Math.min(line.from + Math.max((d.column ?? 1) - 1, 0), line.to);
    const word = /^[^\s:,{}[\]]+/.exec(state.doc.sliceString(from, line.to));
    const to = d.line === undefined ? line.to : from + (word ? word[0].length : 0);
    return {
      from,
      to: Math.max(to, from),
      severity: d.severity,
      message: `${d.path ? `${d.path}: ` : ''}${d.message}${d.code ? ` [${d.code}]` : ''}`,
      source: 'svc',
    };
  });
}

/**
 * Typing over a selection that spans lines lets Chromium merge the line elements itself, keeping
 * their look with style attributes that the CSP refuses (a console error each time). Such input is
 * applied here instead, as a plain replacement of the selection.
 */
const typeOverLines = EditorView.domEventHandlers({
  beforeinput(e, view) {
    if ((e.inputType !== 'insertText' && e.inputType !== 'insertReplacementText') || e.data === null) return false;
    const { from, to, empty } = view.state.selection.main;
    if (empty || view.state.doc.lineAt(from).number === view.state.doc.lineAt(to).number) return false;
    e.preventDefault();
    view.dispatch(view.state.replaceSelection(e.data), { userEvent: 'input.type', scrollIntoView: true });
    return true;
  },
});

export function createYamlEditor(parent: HTMLElement, opts: YamlEditorOptions): YamlEditor {
  const index = opts.schemas ? new SchemaIndex(opts.schemas) : undefined;
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: opts.doc,
      extensions: [
        EditorView.cspNonce.of(opts.nonce),
        basicSetup,
        yaml(),
        indentUnit.of('  '),
        EditorState.tabSize.of(2),
        keymap.of([indentWithTab]),
        lintGutter(),
        typeOverLines,
        ...(index ? [autocompletion({ override: [completionSource(index)] }), hoverDocs(index)] : []),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) opts.onChange(u.state.doc.toString());
        }),
        EditorView.contentAttributes.of({ 'aria-label': 'pipeline YAML', spellcheck: 'false' }),
      ],
    }),
  });
  return {
    text: () => view.state.doc.toString(),
    setText: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    showDiagnostics: (diagnostics) => view.dispatch(setDiagnostics(view.state, toRanges(view.state, diagnostics))),
    goTo: (line, column = 1) => {
      const l = view.state.doc.line(Math.min(Math.max(line, 1), view.state.doc.lines));
      view.dispatch({ selection: EditorSelection.cursor(Math.min(l.from + column - 1, l.to)), scrollIntoView: true });
      view.focus();
    },
    destroy: () => view.destroy(),
  };
}
