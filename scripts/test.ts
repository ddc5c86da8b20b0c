// `npm test`: lint, typecheck and bundle (in order; each gates the rest), then the unit tests alone beside the
// sandbox build (cached), then each end-to-end phase (a file, or a part of one of the longest files:
// scripts/test-files.ts) and the conformance suite, run in `VMZONES_TEST_LANES` parallel lanes (default 5). The
// sandbox phases wait for the sandbox build; every phase has its own sandbox (private state folder and ports), and
// most of a sandbox phase's time is waiting on controllers and timers (the gates file alone: 36 CPU-seconds in
// 171 s), so five lanes share the 2 cores: clean-clone runs on a quiet machine took 16.3 min with five, 19.0–20.2
// with four, 25.6 with three (docs/testing.md); `VMZONES_TEST_LANES=3` on a slower machine.
// The longest phases (by the durations the previous run on this machine recorded, else by the committed figures
// of scripts/phase-durations.json) start first. A parallel
// phase's output is kept in `.cache/test-logs/<phase>.log` while it runs and printed whole when it ends, so
// phases don't interleave. Each phase's duration is printed as it ends, then a table of all phases; closing line:
// `npm test: N passed, M failed` (tests of node's runner and of the conformance suite, summed). Every phase
// runs even after a failure; the exit code is non-zero when any failed. Before the table, each failed phase's
// failures are repeated in a few lines (CI shows only the end of the output).
//
// Nothing can hang the run silently: every 5 minutes the runner prints which phases are running, for how long,
// and the last line each printed; a node test that runs past 20 minutes fails (node's --test-timeout), a file
// whose tests have ended exits (--test-force-exit) even with a handle left open; a phase
// that runs past its limit (2.5 times its previous duration, at least 25 and at most 40 minutes) is stopped
// (SIGTERM to its process group, SIGKILL a minute later, then the runner takes down the sandboxes that group
// started) and counted failed, its output so far printed; and at `VMZONES_TEST_DEADLINE` (epoch seconds; `.ci/run` sets it inside CI's time limit) the
// phases still running are stopped the same way, those not started are NOT RUN, and the table is printed.

import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { noBuildVariable } from '../test/env/build.ts';
import { interruptedWaitPrefix } from '../test/sandbox/eventually.ts';
import { downStartedBy } from '../test/sandbox/sandbox.ts';
import { startSlotsVariable } from '../test/sandbox/start-slots.ts';
import { failureDigest, firstReason } from './failure-digest.ts';
import { describeRunning, runningTests } from './running-tests.ts';
import { nodeTestArgs, progressFileVariable } from './running-tests-reporter.ts';
import { type FilePhase, filePhases } from './test-files.ts';

interface Phase {
  name: string;
  command: string;
  args: string[];
  /** Gate phases: when one fails, the phases that need it cannot mean anything. */
  gate?: boolean;
  /** Needs the sandbox's binaries. */
  sandbox?: boolean;
  /** Only the deadline stops it: a cold build's time says nothing of the next (a version key changed). */
  unlimited?: boolean;
  /** Where its node:test run records the tests it starts and ends (scripts/running-tests-reporter.ts). */
  testsFile?: string;
}

interface Outcome {
  name: string;
  seconds: number;
  ok: boolean;
  passed: number;
  failed: number;
  notRun?: boolean;
  /** Stopped at its limit or at the deadline. */
  stopped?: string;
  /** A failed phase's failures in a few lines (scripts/failure-digest.ts). */
  digest?: string[];
  /** A stopped or failed phase: the test it was in, and what that test was waiting for. */
  interrupted?: string;
  /** Lines the table shows under the phase (the sandbox build: each binary it built, with its time). */
  details?: string[];
}

/**
 * A phase's limit: generous against its previous duration, bounded so one hang can't eat CI's time. At least 25
 * minutes: a file's time under a cold run's load is not its warm time (the GitOps file took 395 s warm and 901 s
 * in three loaded lanes; 15 minutes once stopped it mid-test).
 */
function limitSeconds(previous: number | undefined): number {
  return Math.min(40 * 60, Math.max(25 * 60, 2.5 * (previous ?? 40 * 60)));
}

interface Running {
  name: string;
  started: number;
  lastLine: () => string;
  stop: (why: string) => void;
}
const running = new Set<Running>();

const started = Date.now();
const node = process.execPath;
/** One node test (the longest, a fault walk, takes about 10 minutes on a loaded 2-core machine). */
const testTimeoutMs = 20 * 60_000;
const heartbeatMs = 5 * 60_000;
const deadline = Number(process.env.VMZONES_TEST_DEADLINE ?? '') * 1000 || Number.POSITIVE_INFINITY;
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const lanes = Math.max(1, Number(process.env.VMZONES_TEST_LANES ?? '5') || 1);
const logDir = '.cache/test-logs';
// Kept beside the build cache, so a fresh clone on the same machine still starts the longest phases first.
const durationsFile = join(
  process.env.VMZONES_CACHE ?? join(homedir(), '.cache', 'vmzones'),
  'test-durations.json',
);

/** Where a phase's files go: its output while it runs (`.log`), the tests it started and ended (`.tests`). */
const phaseFile = (name: string, extension: 'log' | 'tests'): string =>
  join(logDir, `${name.replaceAll(/[^A-Za-z0-9.-]+/g, '_')}.${extension}`);

const nodeTest = ({ name, file, select }: FilePhase): Phase => ({
  name,
  command: node,
  args: nodeTestArgs({ timeoutMs: testTimeoutMs, select, file }),
  sandbox: true,
  testsFile: phaseFile(name, 'tests'),
});

const gates: Phase[] = [
  { name: 'lint', command: npm, args: ['run', '--silent', 'lint'], gate: true },
  { name: 'typecheck', command: npm, args: ['run', '--silent', 'typecheck'], gate: true },
  { name: 'build', command: npm, args: ['run', '--silent', 'build'], gate: true },
  // The Debian packages the tests use (lua5.1 for the unit tests' Lua engine; tmux, iproute2, redis for end-to-end
  // files), installed where missing before the unit tests start beside the sandbox build. Never fails the run: a
  // package apt cannot install fails the tests that need it, naming it.
  {
    name: 'test tools (apt, cached)',
    command: node,
    args: ['test/env/build.ts', '--tools-only'],
    gate: true,
  },
];
const sandboxBuild: Phase = {
  name: 'sandbox build (cached)',
  command: npm,
  // Every binary a test file needs, Argo CD included: no test file builds (test/env/build.ts, noBuildVariable), so
  // a phase's time and limit are its tests' own.
  args: ['run', '--silent', 'env:build'],
  gate: true,
  unlimited: true,
};
/**
 * Runs first, beside only the sandbox build (a cache hit in a second when warm), before any lane starts: beside
 * three sandboxes it took 105 s of its ~50, and issue 22 asks ≤ 60 s for it in this table. The lanes start when it
 * ends; a cold sandbox build goes on beside them.
 */
const unitTests: Phase = { name: 'unit tests', command: npm, args: ['run', '--silent', 'test:unit'] };
const parallel: Phase[] = [
  ...filePhases('test/sandbox').map(nodeTest),
  ...filePhases('test/e2e').map(nodeTest),
  { name: 'conformance', command: node, args: ['test/conformance/run.ts'] },
];

function durationsIn(path: string | URL): Record<string, number> {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof parsed !== 'object' || parsed === null) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, number] => typeof entry[1] === 'number'),
    );
  } catch {
    return {};
  }
}

/**
 * Each phase's duration in the previous run on this machine; for a phase it has not recorded (a fresh machine, a
 * cold cache) the committed figure of a CI run (scripts/phase-durations.json), so the longest files still start
 * first (in name order the longest files started last).
 */
function previousDurations(): Record<string, number> {
  return {
    ...durationsIn(new URL('./phase-durations.json', import.meta.url)),
    ...durationsIn(durationsFile),
  };
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
function run(phase: Phase, buffered: boolean, previous?: number): Promise<Outcome> {
  const started = Date.now();
  const logPath = phaseFile(phase.name, 'log');
  if (phase.testsFile !== undefined) rmSync(phase.testsFile, { force: true });
  const log = buffered ? createWriteStream(logPath) : undefined;
  if (buffered) console.log(`[npm test] ${phase.name}: started (output in ${logPath})`);
  return new Promise((resolve) => {
    // Its own process group, so a stop reaches the test process and whatever it started.
    const child = spawn(phase.command, phase.args, {
      stdio: ['ignore', 'pipe', buffered ? 'pipe' : 'inherit'],
      detached: true,
      env:
        phase.testsFile === undefined
          ? process.env
          : { ...process.env, [progressFileVariable]: phase.testsFile },
    });
    const counts = { passed: 0, failed: 0 };
    const output: Buffer[] = [];
    let tail = '';
    let lastLine = '';
    let stopped: string | undefined;
    const keep = (chunk: Buffer): void => {
      output.push(chunk);
      if (log) log.write(chunk);
      else process.stdout.write(chunk);
      const lines = chunk
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim() !== '');
      lastLine = lines.at(-1) ?? lastLine;
    };
    child.stderr?.on('data', keep);
    child.stdout?.on('data', (chunk: Buffer) => {
      keep(chunk);
      const lines = (tail + chunk.toString('utf8')).split('\n');
      tail = lines.pop() ?? '';
      for (const line of lines) countTests(line, counts);
    });
    const signalGroup = (signal: NodeJS.Signals): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    };
    let killTimer: NodeJS.Timeout | undefined;
    const entry: Running = {
      name: phase.name,
      started,
      lastLine: () => lastLine,
      stop: (why) => {
        if (stopped !== undefined) return;
        stopped = why;
        console.log(
          `\n[npm test] ${phase.name}: STOPPING after ${((Date.now() - started) / 1000).toFixed(0)} s: ${why}`,
        );
        signalGroup('SIGTERM');
        killTimer = setTimeout(() => signalGroup('SIGKILL'), 60_000);
      },
    };
    running.add(entry);
    const limit = limitSeconds(previous);
    const limitTimer = phase.unlimited
      ? undefined
      : setTimeout(
          () => entry.stop(`past its limit of ${limit.toFixed(0)} s (previous run: ${previous ?? 'none'} s)`),
          limit * 1000,
        );
    let finished = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (finished) return;
      finished = true;
      clearTimeout(limitTimer);
      clearTimeout(killTimer);
      countTests(tail, counts);
      const seconds = (Date.now() - started) / 1000;
      if (log) {
        log.end();
        process.stdout.write(`\n==== ${phase.name} ====\n`);
        process.stdout.write(Buffer.concat(output));
      }
      const ok = code === 0 && stopped === undefined;
      const text = Buffer.concat(output).toString('utf8');
      const interrupted = ok ? undefined : interruptedAt(phase, text);
      const how =
        stopped !== undefined ? `STOPPED (${stopped})` : ok ? 'ok' : `FAILED (exit ${code ?? signal})`;
      console.log(
        `\n[npm test] ${phase.name}: ${how} in ${seconds.toFixed(0)} s${interrupted ? ` ${interrupted}` : ''}\n`,
      );
      const details = builtBinaries(text);
      const outcome = {
        name: phase.name,
        seconds,
        ok,
        ...counts,
        ...(stopped !== undefined ? { stopped } : {}),
        ...(ok ? {} : { digest: failureDigest(text) }),
        ...(interrupted !== undefined ? { interrupted } : {}),
        ...(details.length > 0 ? { details } : {}),
      };
      if (stopped === undefined || child.pid === undefined) {
        running.delete(entry);
        resolve(outcome);
        return;
      }
      // A stopped test process may end before its sandbox is down (node's runner exits on SIGTERM): take down
      // what its group started, so it does not slow the phases still running.
      void downStartedBy(child.pid)
        .then(
          (dirs) => {
            if (dirs.length > 0) console.log(`[npm test] ${phase.name}: took down ${dirs.join(', ')}`);
          },
          (error: unknown) =>
            console.log(`[npm test] ${phase.name}: its sandboxes not taken down: ${String(error)}`),
        )
        .finally(() => {
          running.delete(entry);
          resolve(outcome);
        });
    };
    child.on('close', finish);
    // A process the phase left behind may hold its pipes open: the phase is over when its own process exits
    // (its last output given a few seconds to arrive).
    child.on('exit', (code, signal) => {
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish(code, signal);
      }, 5_000).unref();
    });
  });
}

/**
 * Where a stopped or failed phase was: the test still running (from its reporter's file) and the waits its sandbox
 * helper said a signal interrupted (test/sandbox/helper.ts); undefined when it names neither.
 */
function interruptedAt(phase: Phase, output: string): string | undefined {
  let tests = '';
  try {
    tests = phase.testsFile === undefined ? '' : readFileSync(phase.testsFile, 'utf8');
  } catch {
    // no test started
  }
  const running = describeRunning(runningTests(tests, Date.now()));
  const waits = output
    .split('\n')
    .filter((line) => line.startsWith(interruptedWaitPrefix))
    .map((line) => line.slice(interruptedWaitPrefix.length).trim());
  const waiting = waits.length > 0 ? `waiting for ${waits.join('; ')}` : undefined;
  const parts = [running, waiting].filter((p): p is string => p !== undefined);
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/** The sandbox build's `built NAME in N s` lines (test/env/build.ts), for the table. */
function builtBinaries(output: string): string[] {
  return [...output.matchAll(/^\[sandbox build\] built (\S+) in ([\d.]+) s$/gm)].map(
    (m) => `built ${m[1]} in ${Number(m[2]).toFixed(0)} s`,
  );
}

const heartbeat = setInterval(() => {
  if (running.size === 0) return;
  const now = Date.now();
  const lines = [...running].map(
    (r) =>
      `  ${r.name}: ${((now - r.started) / 1000).toFixed(0)} s; last line: ${r.lastLine().slice(0, 160)}`,
  );
  console.log(`[npm test] still running at ${((now - started) / 1000).toFixed(0)} s:\n${lines.join('\n')}`);
}, heartbeatMs);
heartbeat.unref();

// The phases run in their own process groups, so a Ctrl-C of `npm test` reaches them through here.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const r of running) r.stop(`npm test got ${signal}`);
    // Exit once every phase has ended and its sandboxes are down (SIGKILL comes a minute after SIGTERM).
    const exit = () => process.exit(signal === 'SIGINT' ? 130 : 143);
    setInterval(() => running.size === 0 && exit(), 500);
    setTimeout(exit, 120_000);
  });
}

let pastDeadline = false;
if (Number.isFinite(deadline)) {
  setTimeout(
    () => {
      pastDeadline = true;
      for (const r of running) r.stop('the run reached VMZONES_TEST_DEADLINE');
    },
    Math.max(0, deadline - Date.now()),
  ).unref();
}

mkdirSync(logDir, { recursive: true });
// The build phase builds; the test files it then runs only use what it built.
process.env[noBuildVariable] = '1';
// Sandbox starts of this run take turns, two at a time (test/sandbox/start-slots.ts): the lanes' first phases all
// start at once, and four kube-apiservers booting together on two cores timed kubectl out.
const startSlots = join(process.cwd(), '.cache', 'sandbox-start-slots');
rmSync(startSlots, { recursive: true, force: true });
process.env[startSlotsVariable] ??= `${startSlots}:2`;
const outcomes: Outcome[] = [];
let gatesPassed = true;
for (const phase of gates) {
  const outcome = await run(phase, false, previousDurations()[phase.name]);
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
      const outcome = await run(first, lanes > 1, durations[first.name]);
      outcomes.push(outcome);
    }
    for (let phase = queue.shift(); phase !== undefined; phase = queue.shift()) {
      if (pastDeadline || (phase.sandbox && !(await sandboxReady))) {
        outcomes.push({ name: phase.name, seconds: 0, ok: false, passed: 0, failed: 0, notRun: true });
        continue;
      }
      outcomes.push(await run(phase, lanes > 1, durations[phase.name]));
    }
  };
  // Phases that don't need the sandbox go first while it builds.
  queue.sort((a, b) => Number(a.sandbox ?? false) - Number(b.sandbox ?? false));
  const built = run(sandboxBuild, lanes > 1, durations[sandboxBuild.name]).then((outcome) => {
    outcomes.push(outcome);
    if (!outcome.ok) console.log('[npm test] sandbox build failed: the sandbox phases are not run');
    return outcome.ok;
  });
  sandboxReady = built;
  if (lanes === 1) await built;
  // The unit tests alone (beside the build), then the lanes.
  if (pastDeadline)
    outcomes.push({ name: unitTests.name, seconds: 0, ok: false, passed: 0, failed: 0, notRun: true });
  else outcomes.push(await run(unitTests, lanes > 1, durations[unitTests.name]));
  const workers = [lane()];
  for (let i = 2; i <= lanes; i++) workers.push(built.then(() => lane()));
  await Promise.all([built, ...workers]);
  mkdirSync(dirname(durationsFile), { recursive: true });
  writeFileSync(
    durationsFile,
    `${JSON.stringify({ ...durations, ...Object.fromEntries(outcomes.filter((o) => !o.notRun && !o.stopped).map((o) => [o.name, Math.round(o.seconds)])) }, null, 2)}\n`,
  );
}

const failedOutcomes = outcomes.filter((o) => o.digest !== undefined);
if (failedOutcomes.length > 0) console.log('\n---- npm test: what the failed phases said ----');
for (const o of failedOutcomes)
  console.log(`${o.name}:\n${(o.digest ?? []).map((l) => `  ${l}`).join('\n')}`);

const wall = (Date.now() - started) / 1000;
const total = outcomes.reduce((sum, o) => sum + o.seconds, 0);
console.log(`\n---- npm test: phases (${lanes} lane${lanes === 1 ? '' : 's'}) ----`);
for (const o of outcomes) {
  const counts = o.passed + o.failed > 0 ? `  (${o.passed} passed, ${o.failed} failed)` : '';
  // A stopped phase: why it was stopped and where it was; what its tests then reported (node's runner calls the
  // test it cancels "still pending") says nothing of the cause.
  const reason =
    o.stopped !== undefined
      ? `stopped ${o.stopped}`
      : o.digest === undefined
        ? undefined
        : firstReason(o.digest);
  const where = o.interrupted === undefined ? '' : ` ${o.interrupted}`;
  console.log(
    `${o.notRun ? 'NOT RUN' : o.stopped ? 'STOPPED' : o.ok ? 'ok     ' : 'FAILED '} ${o.seconds.toFixed(0).padStart(5)} s  ${o.name}${counts}${reason === undefined && where === '' ? '' : `  — ${reason ?? ''}${where}`}`,
  );
  for (const line of o.details ?? []) console.log(`${' '.repeat(17)}${line}`);
}
console.log(
  `phases ${total.toFixed(0)} s (${(total / 60).toFixed(1)} min) in ${wall.toFixed(0)} s wall (${(wall / 60).toFixed(1)} min)`,
);
const passed = outcomes.reduce((sum, o) => sum + o.passed, 0);
const failedTests = outcomes.reduce((sum, o) => sum + o.failed, 0);
const expected = gates.length + (gatesPassed ? parallel.length + 2 : 0);
const failedPhases = outcomes.filter((o) => !o.ok).length + (gatesPassed ? 0 : expected - outcomes.length);
console.log(
  `npm test: ${passed} passed, ${failedTests + (failedTests === 0 && failedPhases > 0 ? failedPhases : 0)} failed`,
);
process.exit(failedPhases > 0 || !gatesPassed ? 1 : 0);
