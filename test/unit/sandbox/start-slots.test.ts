// test/sandbox/start-slots.ts: the sandbox starts of one npm test run take turns, N at a time; a slot whose process
// died is taken over; a wait that never gets a slot fails naming the holders. On a fake clock, in a temp folder.

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseStartSlots, type StartSlotDeps, takeStartSlot } from '../../sandbox/start-slots.ts';
import { FakeClock } from '../fake-clock.ts';

function depsOf(pid: number, clock: FakeClock, alive: Set<number>): StartSlotDeps {
  return { pid, isAlive: (p) => alive.has(p), sleep: clock.sleep, now: () => clock.now().getTime() };
}

test('two slots: a third start waits until one is released, then takes it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'slots-'));
  const clock = new FakeClock();
  const alive = new Set([101, 102, 103]);
  const releaseFirst = await takeStartSlot(`${dir}:2`, {}, depsOf(101, clock, alive));
  await takeStartSlot(`${dir}:2`, {}, depsOf(102, clock, alive));
  let third: (() => void) | undefined;
  const waiting = takeStartSlot(`${dir}:2`, { pollMs: 1000 }, depsOf(103, clock, alive)).then((r) => {
    third = r;
  });
  for (let i = 0; i < 5; i++) await clock.sleep(0);
  assert.equal(third, undefined, 'no slot free: the third start waits');
  assert.ok(
    clock.slept.some((ms) => ms === 1000),
    'it polls',
  );
  releaseFirst();
  await waiting;
  assert.deepEqual(
    readdirSync(dir)
      .sort()
      .map((f) => [f, readFileSync(join(dir, f), 'utf8')]),
    [
      ['slot-0', '103'],
      ['slot-1', '102'],
    ],
  );
});

test('a slot whose process is gone is taken over', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'slots-'));
  const clock = new FakeClock();
  writeFileSync(join(dir, 'slot-0'), '999');
  const release = await takeStartSlot(`${dir}:1`, {}, depsOf(201, clock, new Set([201])));
  assert.equal(readFileSync(join(dir, 'slot-0'), 'utf8'), '201');
  release();
  assert.deepEqual(readdirSync(dir), []);
});

test('no slot within the deadline: the error names the variable and the pids holding them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'slots-'));
  const clock = new FakeClock();
  writeFileSync(join(dir, 'slot-0'), '301');
  await assert.rejects(
    takeStartSlot(`${dir}:1`, { timeoutMs: 60_000, pollMs: 1000 }, depsOf(302, clock, new Set([301, 302]))),
    /no sandbox start slot free in .* within 60 s \(VMZONES_SANDBOX_START_SLOTS\); held by pids 301/,
  );
});

test('without the variable nothing waits; a malformed one is an error naming it', async () => {
  const release = await takeStartSlot(undefined);
  release();
  assert.equal(parseStartSlots(''), undefined);
  assert.deepEqual(parseStartSlots('/tmp/x:2'), { dir: '/tmp/x', slots: 2 });
  assert.throws(() => parseStartSlots('/tmp/x:0'), /VMZONES_SANDBOX_START_SLOTS=\/tmp\/x:0: expected/);
  assert.throws(() => parseStartSlots('/tmp/x'), /expected <folder>:<number of slots/);
});
