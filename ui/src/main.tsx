// Entry of the web UI (docs/ui.md). Only the shell and the light pages load up front; the YAML
// editor (CodeMirror) and the charts (uPlot) are separate chunks loaded when a page needs them.
import { render } from 'preact';
import { App } from './app.js';
import './styles.css';

render(<App />, document.getElementById('app')!);
