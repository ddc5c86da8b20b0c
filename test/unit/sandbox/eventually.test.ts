// The one polling helper of the sandbox tests (test/sandbox/eventually.ts), on a fake clock: it returns the first
// value, times out naming what it awaited and the last error, and fails at once, with the reason, when a check
// says the condition can no longer become true (its own `unless`, a standing check such as a dead sandbox daemon,
// or a Rollout aborted / Degraded).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { rolloutCanProgress } from '../../e2e/step/harness.ts';
import { checkDuringEveryWait, eventually, type WaitClock, WaitError } from '../../sandbox/eventually.ts';
import { deadDaemon, expectEnd } from '../../sandbox/processes.ts';

function fakeClock(): WaitClock & { sleeps: number[] } {
  let now = 1_000_000;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
  };
}

test('returns the first value the check gives, polling at the interval', async () => {
  const clock = fakeClock();
  let calls = 0;
  const value = await eventually('the third call', async () => (++calls === 3 ? 'ready' : undefined), {
    timeoutMs: 10_000,
    intervalMs: 250,
    clock,
  });
  assert.equal(value, 'ready');
  assert.deepEqual(clock.sleeps, [250, 250]);
});

test('times out at its deadline naming what it awaited and the last error the check threw', async () => {
  const clock = fakeClock();
  const error = await eventually(
    'the VMCluster to be operational',
    async () => {
      throw new Error('status expanding');
    },
    { timeoutMs: 5_000, intervalMs: 1_000, clock },
  ).catch((e: unknown) => e);
  assert.ok(error instanceof WaitError);
  assert.equal(error.kind, 'timeout');
  assert.equal(
    error.message,
    'timed out after 5 s waiting for the VMCluster to be operational: status expanding',
  );
  assert.equal(clock.sleeps.length, 5);
});

test('fails at once with the reason when the condition can no longer become true', async () => {
  const clock = fakeClock();
  let calls = 0;
  let polls = 0;
  const error = await eventually(
    'the Rollout to be Healthy',
    async () => {
      calls++;
      return undefined;
    },
    {
      timeoutMs: 600_000,
      clock,
      unless: [
        () => undefined,
        async () => (++polls >= 2 ? 'Rollout zones was aborted: step failed' : undefined),
      ],
    },
  ).catch((e: unknown) => e);
  assert.ok(error instanceof WaitError);
  assert.equal(error.kind, 'impossible');
  assert.equal(error.detail, 'Rollout zones was aborted: step failed');
  assert.match(
    error.message,
    /^gave up waiting for the Rollout to be Healthy after 0\.5 s: Rollout zones was aborted/,
  );
  assert.equal(calls, 2, 'no poll after the reason');
  assert.deepEqual(clock.sleeps, [500], 'it did not wait out its 600 s');
});

test('a standing check applies to every wait until it is removed', async () => {
  const clock = fakeClock();
  const remove = checkDuringEveryWait(() => 'sandbox daemon etcd (pid 1) died');
  try {
    await assert.rejects(
      eventually('anything', async () => undefined, { clock }),
      /gave up waiting for anything after 0 s: sandbox daemon etcd \(pid 1\) died/,
    );
  } finally {
    remove();
  }
  await assert.rejects(
    eventually('anything', async () => undefined, { timeoutMs: 1_000, clock }),
    /timed out/,
  );
});

const dir = mkdtempSync(join(tmpdir(), 'vmzones-eventually-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a sandbox daemon that died is named with its log; one ended on purpose is not', () => {
  const exited = Number(
    spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout,
  );
  const log = join(dir, 'kube-apiserver.log');
  writeFileSync(log, 'E1203 listen tcp 127.0.0.1:6443: bind: address already in use\n');
  const daemons = [
    { name: 'self', pid: process.pid, log: '', ports: [] },
    { name: 'kube-apiserver', pid: exited, log, ports: [] },
  ];
  const reason = deadDaemon(daemons) ?? '';
  assert.match(reason, new RegExp(`^sandbox daemon kube-apiserver \\(pid ${exited}\\) died`));
  assert.match(reason, /address already in use/);
  expectEnd(exited);
  assert.equal(deadDaemon(daemons), undefined);
});

test('a Rollout aborted or Degraded can no longer progress; one Progressing can', async () => {
  const rolloutWith = (status: object) =>
    ({ get: async () => ({ metadata: { uid: 'u', generation: 1 }, status }) }) as unknown as KubeObjects;
  assert.equal(
    await rolloutCanProgress(
      rolloutWith({ phase: 'Degraded', abort: true, message: 'RolloutAborted' }),
      'z',
    )(),
    'Rollout z was aborted: RolloutAborted',
  );
  assert.equal(
    await rolloutCanProgress(rolloutWith({ phase: 'Degraded', message: 'ProgressDeadlineExceeded' }), 'z')(),
    'Rollout z is Degraded: ProgressDeadlineExceeded',
  );
  assert.equal(await rolloutCanProgress(rolloutWith({ phase: 'Progressing' }), 'z')(), undefined);
});
