// npm test's closing table names the test a stopped phase was in (issue 34: a phase stopped at its limit showed only
// node's "Promise resolution is still pending" for the test it cancelled). The file format is pinned by literal
// lines; the last test runs node's runner with the reporter and stops it mid-test, as npm test does.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { describeRunning, runningTests } from '../../../scripts/running-tests.ts';
import { nodeTestArgs, progressFileVariable } from '../../../scripts/running-tests-reporter.ts';

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

/** Runs `body` as a test file with npm test's arguments; resolves with its exit code and the recorded lines. */
async function runAsPhase(
  body: string,
  whileRunning?: (child: ReturnType<typeof spawn>) => Promise<void>,
): Promise<{ code: number | null; recorded: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'running-tests-'));
  try {
    const file = join(dir, 'phase.test.ts');
    const recorded = join(dir, 'tests.jsonl');
    writeFileSync(file, body);
    const child = spawn(process.execPath, nodeTestArgs({ timeoutMs: 60_000, select: [], file }), {
      // Without this test's NODE_TEST_CONTEXT: with it, node would run the file as a child of this test's runner.
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      detached: true,
      env: { ...runnerEnv(), [progressFileVariable]: recorded },
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await whileRunning?.(child);
    const code = await exited;
    return { code, recorded: readFileSync(recorded, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a phase whose tests pass exits 0 with the reporter beside spec, and every test it started has ended', async () => {
  const { code, recorded } = await runAsPhase(
    ["import { test } from 'node:test';", "test('one', () => {});", "test('two', async () => {});"].join(
      '\n',
    ),
  );
  assert.equal(
    code,
    0,
    'the reporter must not fail a passing phase (a /dev/null destination did: EINVAL fsync)',
  );
  assert.deepEqual(runningTests(recorded, Date.now()), []);
  assert.match(recorded, /"ended":"two"/);
});

test('node’s runner with the reporter, stopped by SIGTERM inside its second test, leaves that test as the running one', async () => {
  // The second test tells this process that it runs (a message on the IPC channel: with --test-isolation=none the
  // tests run in the process spawned) and then waits on a timer the stop ends first.
  const { recorded } = await runAsPhase(
    [
      "import { test } from 'node:test';",
      "test('first', () => {});",
      "test('second, stopped', async () => { process.send?.('started'); await new Promise((r) => setTimeout(r, 60_000)); });",
      "test('third', () => {});",
    ].join('\n'),
    async (child) => {
      await new Promise<void>((resolve, reject) => {
        const deadline = setTimeout(
          () => reject(new Error('the second test did not start within 20 s')),
          20_000,
        );
        child.once('message', () => {
          clearTimeout(deadline);
          resolve();
        });
      });
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    },
  );
  assert.deepEqual(
    runningTests(recorded, Date.now()).map((t) => t.name),
    ['second, stopped'],
  );
});
