// Process management of the sandbox: a part that dies is named with its log tail, and stopping a
// part stops everything it started.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive, StartError, startDaemon, stopDaemon, waitFor } from './processes.ts';

const dir = mkdtempSync(join(tmpdir(), 'vmzones-processes-'));

test('a part that exits during start-up fails with its name and the tail of its log', async () => {
  const log = join(dir, 'crasher.log');
  const record = startDaemon({
    name: 'crasher',
    command: '/bin/sh',
    args: ['-c', 'echo "fatal: cannot bind 127.0.0.1:1"; exit 3'],
    log,
  });
  const error = await waitFor(async () => undefined, {
    part: 'crasher',
    log,
    pid: record.pid,
    timeoutMs: 10_000,
  }).catch((e: unknown) => e);
  assert.ok(error instanceof StartError);
  assert.equal(error.part, 'crasher');
  assert.match(error.message, /sandbox part "crasher" failed to start: process exited/);
  assert.match(error.message, /fatal: cannot bind 127\.0\.0\.1:1/);
});

test('a part that never gets healthy times out naming the part', async () => {
  const log = join(dir, 'sleeper.log');
  const record = startDaemon({ name: 'sleeper', command: '/bin/sleep', args: ['30'], log });
  try {
    await assert.rejects(
      waitFor(async () => undefined, { part: 'sleeper', log, pid: record.pid, timeoutMs: 500 }),
      (e: unknown) => e instanceof StartError && /"sleeper".*not healthy after 0.5 s/.test(e.message),
    );
  } finally {
    await stopDaemon(record);
  }
});

test('stopping a part kills its whole process group, children included', async () => {
  const log = join(dir, 'parent.log');
  const record = startDaemon({
    name: 'parent',
    command: '/bin/sh',
    // The child ignores SIGTERM: only the SIGKILL after the grace period ends it.
    args: ['-c', `sh -c 'trap "" TERM; echo child $$; while :; do sleep 0.1; done' & wait`],
    log,
  });
  const childPid = await waitFor(
    async () => {
      const match = /child (\d+)/.exec(readFileSync(log, 'utf8'));
      return match ? Number(match[1]) : undefined;
    },
    { part: 'parent', log, timeoutMs: 5_000 },
  );
  assert.ok(isAlive(childPid));
  await stopDaemon(record, 500);
  await sleep(100);
  assert.equal(isAlive(record.pid), false, 'the parent is gone');
  assert.equal(isAlive(childPid), false, 'the child that ignored SIGTERM is gone');
});
