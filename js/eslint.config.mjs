// The front-end's linter: `npx eslint .` in js/ (tests/js/test_vitest_and_bundle.py runs it in
// `make test`). ESLint's recommended rules only: they catch real bugs (unused variables, undefined
// names, unreachable code, duplicate keys), not style; formatting is left alone.
import js from '@eslint/js';
import globals from 'globals';

export default [
  { ignores: ['node_modules/**'] },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { ...globals.browser },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  {
    // build.mjs and the vitest config run under Node.
    files: ['*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    // The tests run under vitest in jsdom (vitest's API is imported, not global) and read
    // fixtures from disk through Node.
    files: ['tests/**/*.js'],
    languageOptions: { globals: { ...globals.browser, ...globals.node } },
  },
  {
    // Being edited elsewhere at the moment (issue 37): float32s's `let bin = ''` is overwritten
    // before it is read. Remove this entry once that initialiser is gone.
    files: ['src/timeline.js'],
    rules: { 'no-useless-assignment': 'off' },
  },
];
