// ESLint (`npm run lint`, part of `npm test`): JavaScript's and typescript-eslint's recommended rules,
// without type information (a type-aware run costs minutes here; tsc already checks the types).
// Formatting is the formatter's (Biome, biome.json), not ESLint's.
import js from '@eslint/js';
import globals from 'globals';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', '.bench-build/', '.bench-data/', '.scratch/', 'out/', 'test-results/', 'node_modules/', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `_name` marks what a signature or a destructuring must name but does not use.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // `ready && resolve()` and `ok ? a() : b()` as statements are the house style.
      '@typescript-eslint/no-unused-expressions': ['error', { allowShortCircuit: true, allowTernary: true }],
      // A `let` that a callback may read before its one assignment (a stop during the start) stays a `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Tests read untyped JSON bodies and reach into internals: `any` is allowed there.
    files: ['test/**', 'bench/**', 'soak/**', 'fuzz/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The UI is Preact with hooks: the two classic rules of hooks (v7's React Compiler rules do not apply).
    files: ['ui/src/**'],
    plugins: { 'react-hooks': reactHooks },
    languageOptions: { globals: { ...globals.browser } },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'error' },
  },
);
