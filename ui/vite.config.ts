// Builds the web UI (ui/) into dist/ui, which the daemon and the console serve at /ui (src/api/ui.ts).
// The nonce placeholder lands on every script, style link and the csp-nonce meta tag; the server
// replaces it per response. Everything is bundled: nothing is fetched from elsewhere at run time.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ui/',
  publicDir: false,
  html: { cspNonce: '__SVC_CSP_NONCE__' },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // The editor chunk (CodeMirror) is large by nature and loaded only on the editor pages.
    chunkSizeWarningLimit: 1024,
    sourcemap: false,
  },
  logLevel: 'warn',
});
