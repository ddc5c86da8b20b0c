// npm test's closing table names the test a stopped phase was in (issue 34: a phase stopped at its limit showed only
// node's "Promise resolution is still pending" for the test it cancelled). The file format is pinned by literal
// lines; the last test runs node's runner with the reporter and stops it mid-test, as npm test does.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { describeRunning, runningTests } from '../../../scripts/running-tests.ts';
import { progressFileVariable } from '../../../scripts/running-tests-reporter.ts';

const reporter = fileURLToPath(new URL('../../../scripts/running-tests-reporter.ts', import.meta.url));

test('the running tests are those started and not ended, without the file itself, innermost last', () => {
  const lines = [
    '{"started":"test/e2e/gitops/gitops.test.ts","nesting":0,"at":1000}',
    '{"started":"a commit to overrideSpec","nesting":0,"at":2000}',
    '{"ended":"a commit to overrideSpec","nesting":0,"at":145000}',
    '{"started":"a second commit while zone-b is in maintenance","nesting":0,"at":262000}',
    '{"started":"zone-b drained","nesting":1,"at":263000}',
    '{"started":"cut off by the st',
  ].join('\n');
  assert.deepEqual(runningTests(lines, 270_000), [
    { name: 'a second commit while zone-b is in maintenance', seconds: 8 },
    { name: 'zone-b drained', seconds: 7 },
  ]);
  assert.equal(describeRunning(runningTests(lines, 270_000)), "while running 'zone-b drained' (for 7 s)");
  assert.equal(describeRunning([]), undefined);
});

test('a test with the same name at another depth is another test', () => {
  const lines = [
    '{"started":"walk","nesting":0,"at":0}',
    '{"started":"walk","nesting":1,"at":10}',
    '{"ended":"walk","nesting":1,"at":20}',
  ].join('\n');
  assert.deepEqual(
    runningTests(lines, 1000).map((t) => t.name),
    ['walk'],
  );
});

function runnerEnv(): NodeJS.ProcessEnv {
  const { NODE_TEST_CONTEXT: _inRunner, ...env } = process.env;
  return env;
}

test('node’s runner with the reporter, stopped by SIGTERM inside its second test, leaves that test as the running one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'running-tests-'));
  try {
    const file = join(dir, 'stopped.test.ts');
    const recorded = join(dir, 'tests.jsonl');
    // The second test tells this process that it runs (SIGUSR2) and then waits on a timer the stop ends first.
    writeFileSync(
      file,
      [
        "import { test } from 'node:test';",
        "test('first', () => {});",
        "test('second, stopped', async () => { process.kill(Number(process.env.NOTIFY_PID), 'SIGUSR2'); await new Promise((r) => setTimeout(r, 60_000)); });",
        "test('third', () => {});",
      ].join('\n'),
    );
    const child = spawn(
      process.execPath,
      // As scripts/test.ts runs an end-to-end phase.
      [
        '--test',
        '--test-isolation=none',
        '--test-reporter=tap',
        '--test-reporter-destination=stdout',
        `--test-reporter=${reporter}`,
        '--test-reporter-destination=/dev/null',
        file,
      ],
      // Without this test's NODE_TEST_CONTEXT: with it, node would run the file as a child of this test's runner.
      {
        stdio: 'ignore',
        detached: true,
        env: { ...runnerEnv(), NOTIFY_PID: String(process.pid), [progressFileVariable]: recorded },
      },
    );
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(
        () => reject(new Error('the second test did not start within 20 s')),
        20_000,
      );
      process.once('SIGUSR2', () => {
        clearTimeout(deadline);
        resolve();
      });
    });
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    await exited;
    const running = runningTests(readFileSync(recorded, 'utf8'), Date.now()).map((t) => t.name);
    assert.deepEqual(running, ['second, stopped']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
