// ESLint 9 flat config: typescript-eslint's recommended rules plus the house style the code
// already follows (no semicolons, single quotes, 2-space indent, trailing commas on multi-line
// lists). `npm run lint` checks sources, specs, the benchmarks and the example; CI runs it first.
import js from '@eslint/js'
import stylistic from '@stylistic/eslint-plugin'
import globals from 'globals'
import tseslint from 'typescript-eslint'

const FACE_MESSAGE = 'src/index.ts only re-exports (CONTRIBUTING: Conventions); move this into its own file and re-export it'
// Anything but an import or an export at the top (this takes `export *` too), an export that declares, a default that is no name.
const FACE_ONLY_REEXPORTS = [
  'Program > :not(ImportDeclaration, ExportNamedDeclaration, ExportDefaultDeclaration)',
  'ExportNamedDeclaration[declaration]',
  'ExportDefaultDeclaration[declaration.type!="Identifier"]',
].map((selector) => ({ selector, message: FACE_MESSAGE }))

export default tseslint.config(
  {
    ignores: ['**/lib/**', '**/node_modules/**', 'coverage/**', '**/*.d.ts'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    plugins: { '@stylistic': stylistic },
    rules: {
      '@stylistic/semi': ['error', 'never'],
      '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'always' }],
      '@stylistic/indent': ['error', 2, { SwitchCase: 1, ignoredNodes: ['TemplateLiteral *', 'ConditionalExpression'] }],
      '@stylistic/comma-dangle': ['error', 'always-multiline'],
      '@stylistic/eol-last': 'error',
      '@stylistic/no-trailing-spaces': 'error',
      '@stylistic/max-len': ['error', { code: 140, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true }],
      // Boundaries with untyped input (`Tool<any>`, JSON) are typed `any` on purpose; `strict` tsc is the type gate.
      '@typescript-eslint/no-explicit-any': 'off',
      // cordis' convention: `namespace Plugin { export interface Config }` beside the plugin class.
      '@typescript-eslint/no-namespace': 'off',
      '@typescript-eslint/no-unused-vars': ['error', {
        argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true,
      }],
      // Scrubbers and terminal tests match control characters on purpose.
      'no-control-regex': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // House rule: no source file over 350 lines, counted as `wc -l` counts them (blank lines and comments included).
    files: ['packages/*/src/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 350, skipBlankLines: false, skipComments: false }] },
  },
  {
    // A package's src/index.ts is its face (DESIGN §3): named re-exports only. Allowed: `export … from`,
    // and an import handed on as `export { X }` / `export default X` (a Service plugin). No code, no
    // constants (a plugin's name, inject and reusable live in plugin.ts), no `export *`.
    files: ['packages/*/src/index.ts', 'packages/*/src/*/index.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...FACE_ONLY_REEXPORTS],
    },
  },
  {
    // chai's property assertions (`expect(x).to.be.true`) are expressions.
    files: ['packages/*/tests/**', 'test/**'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off' },
  },
  {
    // Fixture agents end a `case` with process.exit(), which the rule cannot see.
    files: ['**/fixtures/**'],
    rules: { 'no-fallthrough': 'off' },
  },
  {
    // The console's page: a classic browser script, no modules.
    files: ['packages/console/page/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser } },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
)
