// Port reservations across processes (test/sandbox/ports.ts): a port another live process reserved is not
// handed out; once that process is gone, its reservation is taken over.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { freePort, reservePort } from './ports.ts';

test('a port reserved by another live process is refused, and taken over once that process is gone', async () => {
  const port = await freePort();
  assert.equal(reservePort(port), false, 'this process holds it already');
  const other = await freePort();
  const child = spawn(
    process.execPath,
    [
      '-e',
      `import('./test/sandbox/ports.ts').then((m) => { console.log(m.reservePort(${other + 1})); setInterval(() => {}, 1000); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const reservedByChild = line.toString().trim() === 'true';
  if (reservedByChild) assert.equal(reservePort(other + 1), false, 'the child, alive, holds it');
  child.kill('SIGKILL');
  await once(child, 'exit');
  assert.ok(reservedByChild, 'the child could reserve a port next to ours');
  assert.equal(reservePort(other + 1), true, 'a dead owner’s reservation is taken over');
});
