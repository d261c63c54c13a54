// A side-by-side, read-only diff of two pipeline versions (@codemirror/merge). Loaded on demand,
// sharing the CodeMirror chunks with the editor.
import { MergeView } from '@codemirror/merge';
import { yaml } from '@codemirror/lang-yaml';
import { EditorState } from '@codemirror/state';
import { EditorView, lineNumbers } from '@codemirror/view';

export interface YamlDiff {
  destroy(): void;
}

export function createYamlDiff(parent: HTMLElement, opts: { a: string; b: string; nonce: string }): YamlDiff {
  const extensions = [EditorView.cspNonce.of(opts.nonce), lineNumbers(), yaml(), EditorState.readOnly.of(true), EditorView.editable.of(false)];
  const view = new MergeView({
    parent,
    a: { doc: opts.a, extensions },
    b: { doc: opts.b, extensions },
    // Long unchanged stretches fold away, as in a code review.
    collapseUnchanged: { margin: 3, minSize: 6 },
    highlightChanges: true,
    gutter: true,
  });
  return { destroy: () => view.destroy() };
}
