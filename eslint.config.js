// Lint rules: typescript-eslint's recommended set, plus the few that guard
// this codebase's ground rules (no floats for money is enforced by review and
// by the ban on parseFloat below).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'var/**', 'bench/out/**', '.ci/node24/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: Object.fromEntries(
        [
          'process',
          'console',
          'URL',
          'Buffer',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'setImmediate',
          'performance',
          'fetch',
          'AbortController',
          'AbortSignal',
          'TextDecoder',
          'TextEncoder',
        ].map((name) => [name, 'readonly']),
      ),
    },
    rules: {
      'no-restricted-globals': ['error', { name: 'parseFloat', message: 'Money is decimal text; see src/domain/money.ts' }],
      'no-restricted-properties': [
        'error',
        { object: 'Number', property: 'parseFloat', message: 'Money is decimal text; see src/domain/money.ts' },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/store/db.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.property.name='transaction']",
          message: 'Use writeTransaction (src/store/db.ts): on SQLite it takes the write lock before the first read.',
        },
      ],
    },
  },
);
