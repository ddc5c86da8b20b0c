// `npm test`: lint, typecheck and bundle (in order; each gates the rest), then the unit tests, the sandbox build
// (cached), each end-to-end file and the conformance suite, run in `VMZONES_TEST_LANES` parallel lanes (default
// 3). The sandbox phases wait for the sandbox build; every phase has its own sandbox (private state folder and
// ports), and most of a sandbox phase's time is waiting on controllers, so three lanes share the 2 cores well.
// The longest phases (by the durations the previous run on this machine recorded) start first. A parallel
// phase's output is kept in `.cache/test-logs/<phase>.log` while it runs and printed whole when it ends, so
// phases don't interleave. Each phase's duration is printed as it ends, then a table of all phases; closing line:
// `npm test: N passed, M failed` (tests of node's runner and of the conformance suite, summed). Every phase
// runs even after a failure; the exit code is non-zero when any failed.

import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

interface Phase {
  name: string;
  command: string;
  args: string[];
  /** Gate phases: when one fails, the phases that need it cannot mean anything. */
  gate?: boolean;
  /** Needs the sandbox's binaries. */
  sandbox?: boolean;
}

interface Outcome {
  name: string;
  seconds: number;
  ok: boolean;
  passed: number;
  failed: number;
  notRun?: boolean;
}

const node = process.execPath;
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const lanes = Math.max(1, Number(process.env.VMZONES_TEST_LANES ?? '3') || 1);
const logDir = '.cache/test-logs';
// Kept beside the build cache, so a fresh clone on the same machine still starts the longest phases first.
const durationsFile = join(
  process.env.VMZONES_CACHE ?? join(homedir(), '.cache', 'vmzones'),
  'test-durations.json',
);

function testFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...testFiles(path));
    else if (entry.name.endsWith('.test.ts')) found.push(path);
  }
  return found.sort();
}

const nodeTest = (file: string): Phase => ({
  name: file,
  command: node,
  args: ['--test', '--test-concurrency=1', '--test-reporter=spec', file],
  sandbox: true,
});

const gates: Phase[] = [
  { name: 'lint', command: npm, args: ['run', '--silent', 'lint'], gate: true },
  { name: 'typecheck', command: npm, args: ['run', '--silent', 'typecheck'], gate: true },
  { name: 'build', command: npm, args: ['run', '--silent', 'build'], gate: true },
];
const sandboxBuild: Phase = {
  name: 'sandbox build (cached)',
  command: npm,
  args: ['run', '--silent', 'env:build'],
  gate: true,
};
const parallel: Phase[] = [
  { name: 'unit tests', command: npm, args: ['run', '--silent', 'test:unit'] },
  ...testFiles('test/sandbox').map(nodeTest),
  ...testFiles('test/e2e').map(nodeTest),
  { name: 'conformance', command: node, args: ['test/conformance/run.ts'] },
];

function previousDurations(): Record<string, number> {
  try {
    const parsed: unknown = JSON.parse(readFileSync(durationsFile, 'utf8'));
    if (typeof parsed !== 'object' || parsed === null) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, number] => typeof entry[1] === 'number'),
    );
  } catch {
    return {};
  }
}

/** Counts of node's runner (`ℹ pass N`) and of the conformance suite in a phase's output. */
function countTests(line: string, counts: { passed: number; failed: number }): void {
  const pass = /^ℹ pass (\d+)$/.exec(line);
  const fail = /^ℹ fail (\d+)$/.exec(line);
  const conformance = /^conformance: (\d+) passed, (\d+) failed/.exec(line);
  if (pass) counts.passed += Number(pass[1]);
  if (fail) counts.failed += Number(fail[1]);
  if (conformance) {
    counts.passed += Number(conformance[1]);
    counts.failed += Number(conformance[2]);
  }
}

/** Runs a phase; `buffered` keeps its output in a log file and prints it whole at the end. */
function run(phase: Phase, buffered: boolean): Promise<Outcome> {
  const started = Date.now();
  const logPath = join(logDir, `${phase.name.replaceAll(/[^A-Za-z0-9.-]+/g, '_')}.log`);
  const log = buffered ? createWriteStream(logPath) : undefined;
  if (buffered) console.log(`[npm test] ${phase.name}: started (output in ${logPath})`);
  return new Promise((resolve) => {
    const child = spawn(phase.command, phase.args, {
      stdio: ['ignore', 'pipe', buffered ? 'pipe' : 'inherit'],
    });
    const counts = { passed: 0, failed: 0 };
    const output: Buffer[] = [];
    let tail = '';
    const keep = (chunk: Buffer): void => {
      if (log) {
        log.write(chunk);
        output.push(chunk);
      } else process.stdout.write(chunk);
    };
    child.stderr?.on('data', keep);
    child.stdout?.on('data', (chunk: Buffer) => {
      keep(chunk);
      const lines = (tail + chunk.toString('utf8')).split('\n');
      tail = lines.pop() ?? '';
      for (const line of lines) countTests(line, counts);
    });
    child.on('close', (code) => {
      countTests(tail, counts);
      const seconds = (Date.now() - started) / 1000;
      if (log) {
        log.end();
        process.stdout.write(`\n==== ${phase.name} ====\n`);
        process.stdout.write(Buffer.concat(output));
      }
      console.log(
        `\n[npm test] ${phase.name}: ${code === 0 ? 'ok' : `FAILED (exit ${code})`} in ${seconds.toFixed(0)} s\n`,
      );
      resolve({ name: phase.name, seconds, ok: code === 0, ...counts });
    });
  });
}

mkdirSync(logDir, { recursive: true });
const started = Date.now();
const outcomes: Outcome[] = [];
let gatesPassed = true;
for (const phase of gates) {
  const outcome = await run(phase, false);
  outcomes.push(outcome);
  if (!outcome.ok) {
    console.log(`[npm test] ${phase.name} failed: the phases after it are not run`);
    gatesPassed = false;
    break;
  }
}

if (gatesPassed) {
  const durations = previousDurations();
  const queue = [...parallel].sort((a, b) => (durations[b.name] ?? 0) - (durations[a.name] ?? 0));
  // The sandbox build runs first, in its own lane; sandbox phases wait until it has passed.
  let sandboxReady: Promise<boolean> = Promise.resolve(false);
  const lane = async (first?: Phase): Promise<void> => {
    if (first) {
      const outcome = await run(first, lanes > 1);
      outcomes.push(outcome);
    }
    for (let phase = queue.shift(); phase !== undefined; phase = queue.shift()) {
      if (phase.sandbox && !(await sandboxReady)) {
        outcomes.push({ name: phase.name, seconds: 0, ok: false, passed: 0, failed: 0, notRun: true });
        continue;
      }
      outcomes.push(await run(phase, lanes > 1));
    }
  };
  // Phases that don't need the sandbox go first while it builds.
  queue.sort((a, b) => Number(a.sandbox ?? false) - Number(b.sandbox ?? false));
  const built = run(sandboxBuild, lanes > 1).then((outcome) => {
    outcomes.push(outcome);
    if (!outcome.ok) console.log('[npm test] sandbox build failed: the sandbox phases are not run');
    return outcome.ok;
  });
  sandboxReady = built;
  if (lanes === 1) await built;
  const workers = [lane()];
  for (let i = 2; i <= lanes; i++) workers.push(built.then(() => lane()));
  await Promise.all([built, ...workers]);
  mkdirSync(dirname(durationsFile), { recursive: true });
  writeFileSync(
    durationsFile,
    `${JSON.stringify(Object.fromEntries(outcomes.filter((o) => !o.notRun).map((o) => [o.name, Math.round(o.seconds)])), null, 2)}\n`,
  );
}

const wall = (Date.now() - started) / 1000;
const total = outcomes.reduce((sum, o) => sum + o.seconds, 0);
console.log(`\n---- npm test: phases (${lanes} lane${lanes === 1 ? '' : 's'}) ----`);
for (const o of outcomes) {
  const counts = o.passed + o.failed > 0 ? `  (${o.passed} passed, ${o.failed} failed)` : '';
  console.log(
    `${o.notRun ? 'NOT RUN' : o.ok ? 'ok     ' : 'FAILED '} ${o.seconds.toFixed(0).padStart(5)} s  ${o.name}${counts}`,
  );
}
console.log(
  `phases ${total.toFixed(0)} s (${(total / 60).toFixed(1)} min) in ${wall.toFixed(0)} s wall (${(wall / 60).toFixed(1)} min)`,
);
const passed = outcomes.reduce((sum, o) => sum + o.passed, 0);
const failedTests = outcomes.reduce((sum, o) => sum + o.failed, 0);
const expected = gates.length + (gatesPassed ? parallel.length + 1 : 0);
const failedPhases = outcomes.filter((o) => !o.ok).length + (gatesPassed ? 0 : expected - outcomes.length);
console.log(
  `npm test: ${passed} passed, ${failedTests + (failedTests === 0 && failedPhases > 0 ? failedPhases : 0)} failed`,
);
process.exit(failedPhases > 0 || !gatesPassed ? 1 : 0);
