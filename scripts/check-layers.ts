// Enforces the layering of plugin/: a module may import its own layer or lower ones, never a higher one, and the
// product never imports tests or scripts (tests and scripts may import the product). Every import form counts:
// `import … from`, `export … from`, a bare `import '…'` and a dynamic `import('…')`. Lowest layer first; main.ts
// sits on top and wires everything. A layer folder that does not exist is an error (no phantom layers).
// Inside plugin/zones the same rule holds between its floors (zonesFloors): state < spec.ts < moves < step <
// reconciler < step-plugin.ts.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const layers = ['goplugin', 'rollouts', 'kube', 'vm', 'zones', 'gates', 'observe', 'cli'] as const;

/** The floors of plugin/zones, lowest first: each entry is a folder or a root file of zones/. A module may import
 *  its own floor or lower ones; no two floors import each other (Abort hands a zone over through the hand-over
 *  move, the reconciler resolves a spec as a step does, and only step-plugin.ts, which serves the step plugin and
 *  runs the reconciler beside it, sees both). A file of zones/ on no floor is an error. */
export const zonesFloors: readonly (readonly string[])[] = [
  ['state'],
  ['spec.ts'],
  ['moves', 'spec-drift.ts'],
  ['step'],
  ['reconciler', 'render.ts'],
  ['step-plugin.ts'],
];

const root = resolve('plugin');
const zonesRoot = join(root, 'zones');

function zonesFloorOf(file: string): number | undefined {
  if (!file.startsWith(`${zonesRoot}/`)) return undefined;
  const top = relative(zonesRoot, file).split('/')[0] ?? '';
  const floor = zonesFloors.findIndex((names) => names.includes(top));
  if (floor < 0) {
    throw new Error(
      `${relative('.', file)}: "${top}" is on no floor of plugin/zones (${zonesFloors.map((f) => f.join(', ')).join(' < ')})`,
    );
  }
  return floor;
}
const outside = ['test', 'scripts'].map((dir) => resolve(dir));

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
    if (statSync(path).isDirectory()) {
      if (name !== 'node_modules') yield* tsFiles(path);
    } else if (name.endsWith('.ts')) yield path;
  }
}

/** Every module specifier a file imports, by any form. */
export function importSpecifiers(source: string): string[] {
  const patterns = [
    /(?:^|[\n;])\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]/g,
    /(?:^|[\n;])\s*import\s+['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((m) => m[1] ?? ''));
}

const problems: string[] = [];
for (const layer of layers) {
  if (!existsSync(join(root, layer)))
    problems.push(`layer ${layer} is listed but plugin/${layer}/ does not exist`);
}
for (const file of tsFiles(root)) {
  const from = layerOf(file);
  for (const spec of importSpecifiers(readFileSync(file, 'utf8'))) {
    if (!spec.startsWith('.')) continue;
    const target = resolve(dirname(file), spec);
    if (outside.some((dir) => target.startsWith(`${dir}/`))) {
      problems.push(`${relative('.', file)} imports ${spec}: the product never imports tests or scripts`);
      continue;
    }
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
    const [fromFloor, toFloor] = [zonesFloorOf(file), zonesFloorOf(target)];
    if (fromFloor !== undefined && toFloor !== undefined && toFloor > fromFloor) {
      problems.push(
        `${relative('.', file)} (zones floor ${zonesFloors[fromFloor]?.join(', ')}) imports ${spec} (higher floor ${zonesFloors[toFloor]?.join(', ')})`,
      );
    }
  }
}
// Tests and scripts may import the product, but only files that exist in a known layer.
for (const dir of outside) {
  for (const file of tsFiles(dir)) {
    for (const spec of importSpecifiers(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const target = resolve(dirname(file), spec);
      if (target.startsWith(`${root}/`)) {
        try {
          layerOf(target);
        } catch (err) {
          problems.push(`${relative('.', file)}: ${(err as Error).message}`);
        }
      }
    }
  }
}
if (problems.length > 0) {
  console.error(`layer check failed:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(
  `layer check: ${layers.join(' < ')} < main; zones: ${zonesFloors.map((f) => f.join(', ')).join(' < ')} — ok (static, bare and dynamic imports; tests and scripts)`,
);
