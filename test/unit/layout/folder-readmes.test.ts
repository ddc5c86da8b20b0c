// Every folder of plugin/ has a README that maps its concepts to its files — its own, or for a sub-folder its
// layer's (plugin/zones/README.md maps moves/, step/…): each TypeScript file of the folder is named there (in
// backquotes), so a file added without a line in its folder's map fails here.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const pluginDir = join(import.meta.dirname, '../../../plugin');

/** plugin/ and every folder below it that holds TypeScript files, except plugin/ itself (its README is the repo's). */
function codeFolders(dir: string): string[] {
  const entries = readdirSync(dir, { withFileTypes: true });
  const here = dir !== pluginDir && entries.some((e) => e.isFile() && e.name.endsWith('.ts')) ? [dir] : [];
  return [...here, ...entries.filter((e) => e.isDirectory()).flatMap((e) => codeFolders(join(dir, e.name)))];
}

test('every folder of plugin/ has a README naming each of its files', () => {
  const folders = codeFolders(pluginDir);
  assert.ok(folders.length >= 10, `found only ${folders.length} folders under plugin/`);
  const problems: string[] = [];
  for (const folder of folders) {
    const where = folder.slice(pluginDir.length + 1);
    const parent = join(folder, '..');
    const own = join(folder, 'README.md');
    const layers = parent === pluginDir ? undefined : join(parent, 'README.md');
    const readme = existsSync(own) ? own : layers !== undefined && existsSync(layers) ? layers : undefined;
    if (readme === undefined) {
      problems.push(`plugin/${where}: no README.md`);
      continue;
    }
    const text = readFileSync(readme, 'utf8');
    const sub = where.split('/').at(-1);
    for (const file of readdirSync(folder).filter((f) => f.endsWith('.ts'))) {
      if (!text.includes(`\`${file}\``) && !text.includes(`\`${sub}/${file}\``)) {
        problems.push(`${readme.slice(pluginDir.length - 6)} does not name ${where}/${file}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
