// Runs the Go conformance harness (`go test -json -count=1 ./...` in test/conformance/) and prints one
// progress line per Go test and subtest, the output of failed ones, and as the last line
// `conformance: N passed, M failed` (N and M count top-level tests and subtests together; skipped ones
// are reported as `, K skipped` and never counted as passed).
// Usage: node test/conformance/run.ts [extra go test flags, e.g. -run TestStepFixture]
// Environment: CONFORMANCE_FUZZ_COUNT / CONFORMANCE_FUZZ_SEED (fuzz size), CONFORMANCE_FIXTURE_ARGV /
// CONFORMANCE_PRODUCT_ARGV (JSON argv to test another build). Go's build outputs stay in its cache.

import { spawn, spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

interface TestEvent {
  readonly Action: string;
  readonly Package?: string;
  readonly Test?: string;
  readonly Elapsed?: number;
  readonly Output?: string;
}

const harnessDir = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(harnessDir, '..', '..');

function fail(message: string): never {
  console.error(`\n!!! conformance: ${message}\n`);
  console.log('conformance: 0 passed, 1 failed');
  process.exit(2);
}

function isTestEvent(value: unknown): value is TestEvent {
  return typeof value === 'object' && value !== null && typeof (value as TestEvent).Action === 'string';
}

const goVersion = spawnSync('go', ['version'], { encoding: 'utf8' });
if (goVersion.error !== undefined || goVersion.status !== 0) {
  fail(`Go is missing or broken (${goVersion.error?.message ?? goVersion.stderr.trim()}); install Go ≥ 1.26`);
}
console.log(`conformance: ${goVersion.stdout.trim()}; go test -json -count=1 ./... in ${harnessDir}`);

const child = spawn('go', ['test', '-json', '-count=1', '-timeout=30m', ...process.argv.slice(2), './...'], {
  cwd: harnessDir,
  env: { ...process.env, CONFORMANCE_REPO_ROOT: repoRoot },
  stdio: ['ignore', 'pipe', 'pipe'],
});

const outputByTest = new Map<string, string[]>();
const failedPackages = new Set<string>();
const packagesWithTests = new Set<string>();
const nonJsonOutput: string[] = [];
let passed = 0;
let failed = 0;
let skipped = 0;

function record(event: TestEvent): void {
  const pkg = event.Package ?? '';
  const key = `${pkg} ${event.Test ?? ''}`;
  if (event.Action === 'output' || event.Action === 'build-output') {
    const lines = outputByTest.get(key) ?? [];
    lines.push(event.Output ?? '');
    outputByTest.set(key, lines);
    return;
  }
  if (event.Test === undefined) {
    if (event.Action === 'fail') failedPackages.add(pkg);
    return;
  }
  if (event.Action !== 'pass' && event.Action !== 'fail' && event.Action !== 'skip') return;
  packagesWithTests.add(pkg);
  const seconds = (event.Elapsed ?? 0).toFixed(2);
  const depth = event.Test.split('/').length - 1;
  const label = `${'  '.repeat(depth)}${event.Test}`;
  if (event.Action === 'pass') {
    passed++;
    console.log(`PASS ${label} (${seconds}s)`);
    // A passing test's own t.Log lines (e.g. how many fuzz iterations ran) are worth seeing.
    for (const line of outputByTest.get(key) ?? []) {
      if (/^\s+\w+_test\.go:\d+: /.test(line)) process.stdout.write(`     | ${line.trimStart()}`);
    }
  } else if (event.Action === 'skip') {
    skipped++;
    console.log(`SKIP ${label}`);
  } else {
    failed++;
    console.log(`FAIL ${label} (${seconds}s)`);
    for (const line of outputByTest.get(key) ?? []) {
      if (!/^(=== |--- |\s*--- )/.test(line)) process.stdout.write(`     | ${line}`);
    }
  }
  outputByTest.delete(key);
}

const stdoutLines = createInterface({ input: child.stdout });
stdoutLines.on('line', (line) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    nonJsonOutput.push(line);
    return;
  }
  if (isTestEvent(parsed)) record(parsed);
});
const stderrChunks: string[] = [];
child.stderr.on('data', (chunk: Buffer) => stderrChunks.push(chunk.toString('utf8')));

const exitCode: number = await new Promise((done) => {
  child.on('close', (code) => done(code ?? 1));
});
await new Promise((done) => setImmediate(done));

// Tests that started but never reported (a panic, or go test's -timeout) count as failed, with their output.
for (const [key, lines] of outputByTest) {
  const test = key.slice(key.indexOf(' ') + 1);
  if (test === '' || !lines.some((line) => line.startsWith('=== RUN'))) continue;
  failed++;
  console.log(`FAIL ${test} (did not finish)`);
  for (const line of lines) process.stdout.write(`     | ${line}`);
  outputByTest.delete(key);
}

// A package that failed without any test result did not build (or crashed before running tests).
const brokenPackages = [...failedPackages].filter((pkg) => !packagesWithTests.has(pkg));
if (brokenPackages.length > 0 || (exitCode !== 0 && passed + failed + skipped === 0)) {
  const buildOutput = [...outputByTest.values()].flat().join('');
  console.error(
    `\n!!! conformance: the Go harness did not build or crashed (${brokenPackages.join(', ') || 'go test'})`,
  );
  console.error(buildOutput + nonJsonOutput.join('\n') + stderrChunks.join(''));
  failed += Math.max(1, brokenPackages.length);
} else if (stderrChunks.length > 0) {
  process.stderr.write(stderrChunks.join(''));
}
if (passed + failed === 0) {
  console.error('\n!!! conformance: no test ran');
  failed = Math.max(failed, 1);
}
if (exitCode !== 0 && failed === 0) {
  console.error(`\n!!! conformance: go test exited ${exitCode} without a failing test`);
  failed = 1;
}
console.log(`conformance: ${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 ? 1 : 0);
