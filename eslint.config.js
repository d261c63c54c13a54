// ESLint (`npm run lint`, part of `npm test`): JavaScript's and typescript-eslint's recommended rules,
// without type information (a type-aware run costs minutes here; tsc already checks the types).
// Formatting is the formatter's (Biome, biome.json), not ESLint's.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', '.bench-build/', '.bench-data/', '.scratch/', 'out/', 'test-results/', 'node_modules/', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {},
  },
  {
    files: ['ui/src/**'],
    languageOptions: { globals: { ...globals.browser } },
  },
);
