// The types of an installed package as a TypeScript user compiles against them: every entry point
// imported (type-only) by a strict NodeNext project without skipLibCheck. Only what is wrong in our
// packages' declarations counts (a type they name from a package they do not declare, say); errors
// inside third-party declarations are theirs.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, SCOPE } from './workspace-packages.js'
import { describeResult, runCommand } from './run-command.js'

const TSC_MS = 180_000

/** What the project installs beside the package for this check: a Node user's @types/node (this repository's range). */
export function typesInstall(): string[] {
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
  return [`@types/node@${root.devDependencies['@types/node']}`]
}

export async function checkTypes(project: string, specifiers: readonly string[]): Promise<string[]> {
  const imports = specifiers.map((specifier, index) => `import type * as entry${index} from '${specifier}'`)
  writeFileSync(join(project, 'check.ts'), `${imports.join('\n')}\nexport type { ${specifiers.map((_, index) => `entry${index}`).join(', ')} }\n`)
  writeFileSync(join(project, 'tsconfig.json'), `${JSON.stringify({
    compilerOptions: {
      module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: false,
      types: ['node'],
    },
    files: ['check.ts'],
  }, null, 2)}\n`)
  const tsc = await runCommand(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', project, '--pretty', 'false'], {
    cwd: project, timeoutMs: TSC_MS,
  })
  if (tsc.timedOut) return [describeResult('tsc', tsc)]
  const ours = tsc.stdout.split('\n').filter((line) => line.startsWith('check.ts') || line.startsWith(`node_modules/${SCOPE}`))
  return ours.map((line) => `types: ${line}`)
}
