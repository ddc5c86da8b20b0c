// The prune of earlier test sandboxes (test/sandbox/helper.ts) at each sandbox start: a folder whose owner process
// lives is never taken, however old and however long it has had no state.json (a cold Argo CD build inside a
// sandbox start ran 969 s while another lane pruned its folder); a sandbox whose owner is gone is taken down and
// removed; the newest folder stays for its logs.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pruneOldTestDirs } from '../../sandbox/helper.ts';

const root = mkdtempSync(join(tmpdir(), 'vmzones-prune-'));
after(() => rmSync(root, { recursive: true, force: true }));

const now = Date.parse('2026-12-03T12:00:00Z');
const minutes = 60_000;

function folder(name: string, options: { owner?: number; daemons?: number[]; ageMinutes: number }): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  if (options.owner !== undefined) writeFileSync(join(dir, 'owner.pid'), `${options.owner}\n`);
  if (options.daemons !== undefined) {
    const daemons = options.daemons.map((pid) => ({ name: `d${pid}`, pid, log: '', ports: [] }));
    writeFileSync(join(dir, 'state.json'), JSON.stringify({ stateDir: dir, daemons }));
  }
  const at = new Date(now - options.ageMinutes * minutes);
  utimesSync(dir, at, at);
  return dir;
}

test('a starting sandbox (live owner, no state.json, old folder) is never pruned; ownerless and abandoned ones are', async () => {
  const live = new Set([100, 200, 300]);
  const downed: string[] = [];
  const newest = folder('test-newest', { owner: 999, daemons: [998], ageMinutes: 1 });
  const starting = folder('test-starting', { owner: 100, ageMinutes: 16 });
  const running = folder('test-running', { owner: 200, daemons: [300], ageMinutes: 30 });
  const abandoned = folder('test-abandoned', { owner: 400, ageMinutes: 20 });
  const killed = folder('test-killed', { owner: 500, daemons: [300], ageMinutes: 25 });
  const old = folder('test-old', { daemons: [600], ageMinutes: 60 });
  const justMade = folder('test-just-made', { ageMinutes: 2 });
  const other = folder('default', { daemons: [], ageMinutes: 90 });

  const removed = await pruneOldTestDirs(root, {
    isAlive: (pid) => live.has(pid),
    down: async (dir) => {
      downed.push(dir);
    },
    now: () => now,
  });

  assert.ok(existsSync(starting), 'the starting sandbox’s folder is still there');
  assert.ok(existsSync(running), 'a running sandbox’s folder is still there');
  assert.deepEqual(removed.sort(), [abandoned, killed, old].sort());
  assert.deepEqual(downed, [killed], 'the sandbox of a killed owner is taken down before its folder goes');
  assert.ok(existsSync(newest), 'the newest folder stays for its logs');
  assert.ok(existsSync(justMade), 'a folder whose owner is being written stays');
  assert.ok(existsSync(other), 'only test- folders are pruned');
});

test('a folder gone between the listing and its stat (another lane pruned it) is passed over, not an error', async () => {
  const lanes = mkdtempSync(join(tmpdir(), 'vmzones-prune-race-'));
  try {
    // A dangling link lists like a folder and fails stat with ENOENT, as a folder removed after readdir does.
    symlinkSync(join(lanes, 'removed-meanwhile'), join(lanes, 'test-gone'));
    const abandoned = join(lanes, 'test-abandoned');
    mkdirSync(abandoned);
    writeFileSync(join(abandoned, 'owner.pid'), '400\n');
    const at = new Date(now - 20 * minutes);
    utimesSync(abandoned, at, at);
    const kept = join(lanes, 'test-newest');
    mkdirSync(kept);
    writeFileSync(join(kept, 'owner.pid'), '999\n');
    const removed = await pruneOldTestDirs(lanes, {
      isAlive: () => false,
      down: async () => {},
      now: () => now,
    });
    assert.deepEqual(removed, [abandoned]);
  } finally {
    rmSync(lanes, { recursive: true, force: true });
  }
});
