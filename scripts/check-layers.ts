// Enforces the layering of plugin/: a module may import its own layer or lower ones, never a higher one.
// Lowest first. main.ts sits on top and wires everything.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const layers = ['goplugin', 'rollouts', 'kube', 'vm', 'zones', 'gates', 'observe', 'cli'] as const;

const root = resolve('plugin');

function layerOf(file: string): number {
  const top = relative(root, file).split('/')[0] ?? '';
  if (top.endsWith('.ts')) return layers.length; // plugin/main.ts
  const index = (layers as readonly string[]).indexOf(top);
  if (index < 0)
    throw new Error(`${relative('.', file)}: folder "${top}" is not a known layer (${layers.join(', ')})`);
  return index;
}

function* tsFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* tsFiles(path);
    else if (name.endsWith('.ts')) yield path;
  }
}

const importPattern = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]/g;
const problems: string[] = [];
for (const file of tsFiles(root)) {
  const from = layerOf(file);
  for (const match of readFileSync(file, 'utf8').matchAll(importPattern)) {
    const spec = match[1] ?? '';
    if (!spec.startsWith('.')) continue;
    const target = resolve(dirname(file), spec);
    if (!target.startsWith(`${root}/`)) {
      problems.push(`${relative('.', file)} imports ${spec}, outside plugin/`);
      continue;
    }
    const to = layerOf(target);
    if (to > from) {
      problems.push(
        `${relative('.', file)} (layer ${layers[from] ?? 'main'}) imports ${spec} (higher layer ${layers[to] ?? 'main'})`,
      );
    }
  }
}
if (problems.length > 0) {
  console.error(`layer check failed:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`layer check: ${layers.join(' < ')} < main — ok`);
