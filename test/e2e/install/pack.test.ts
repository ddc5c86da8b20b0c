// The package as users install it: scripts/pack-check.ts packs a copy of this checkout (its prepack builds the
// bundles), installs the tarball into an empty prefix with npm and runs the installed `vmzones` and
// `kubectl-vmzones` under the pinned Node 24 and this machine's Node 20 (docs/cli.md, "Installing").

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { packCheck } from '../../../scripts/pack-check.ts';

test('npm pack → npm install -g into an empty prefix → vmzones version, lint and render under Node 24 and 20', () => {
  const lines: string[] = [];
  packCheck((line) => lines.push(line));
  for (const line of lines) process.stdout.write(`${line}\n`);
  assert.match(lines.join('\n'), /^v24\..*: ok$/m);
  assert.match(lines.join('\n'), /^v20\..*: ok$/m);
});
