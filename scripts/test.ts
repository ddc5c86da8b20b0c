// `npm test`: every phase in order — lint, typecheck, bundle, unit tests, the sandbox build (cached), each
// end-to-end file, the conformance suite — with each phase's duration printed as it ends and a table at the end,
// so that growth is visible run by run. Every phase runs even after a failure (the table shows all of them);
// the exit code is non-zero when any failed. Closing line: `npm test: N passed, M failed` (tests of node's
// runner and of the conformance suite, summed).

import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

interface Phase {
  name: string;
  command: string;
  args: string[];
  /** Gate phases: when one fails, the tests after it cannot mean anything. */
  gate?: boolean;
}

const node = process.execPath;
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

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
});

const phases: Phase[] = [
  { name: 'lint', command: npm, args: ['run', '--silent', 'lint'], gate: true },
  { name: 'typecheck', command: npm, args: ['run', '--silent', 'typecheck'], gate: true },
  { name: 'build', command: npm, args: ['run', '--silent', 'build'], gate: true },
  { name: 'unit tests', command: npm, args: ['run', '--silent', 'test:unit'] },
  { name: 'sandbox build (cached)', command: npm, args: ['run', '--silent', 'env:build'], gate: true },
  ...testFiles('test/sandbox').map(nodeTest),
  ...testFiles('test/e2e').map(nodeTest),
  { name: 'conformance', command: node, args: ['test/conformance/run.ts'] },
];

interface Outcome {
  name: string;
  seconds: number;
  ok: boolean;
  passed: number;
  failed: number;
}

function run(phase: Phase): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(phase.command, phase.args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let passed = 0;
    let failed = 0;
    let tail = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      const text = tail + chunk.toString('utf8');
      const lines = text.split('\n');
      tail = lines.pop() ?? '';
      for (const line of lines) {
        const pass = /^ℹ pass (\d+)$/.exec(line);
        const fail = /^ℹ fail (\d+)$/.exec(line);
        const conformance = /^conformance: (\d+) passed, (\d+) failed/.exec(line);
        if (pass) passed += Number(pass[1]);
        if (fail) failed += Number(fail[1]);
        if (conformance) {
          passed += Number(conformance[1]);
          failed += Number(conformance[2]);
        }
      }
    });
    child.on('close', (code) => {
      const seconds = (Date.now() - started) / 1000;
      console.log(
        `\n[npm test] ${phase.name}: ${code === 0 ? 'ok' : `FAILED (exit ${code})`} in ${seconds.toFixed(0)} s\n`,
      );
      resolve({ name: phase.name, seconds, ok: code === 0, passed, failed });
    });
  });
}

const outcomes: Outcome[] = [];
for (const phase of phases) {
  const outcome = await run(phase);
  outcomes.push(outcome);
  if (!outcome.ok && phase.gate) {
    console.log(`[npm test] ${phase.name} failed: the phases after it are not run`);
    break;
  }
}

const total = outcomes.reduce((sum, o) => sum + o.seconds, 0);
console.log('\n---- npm test: phases ----');
for (const o of outcomes) {
  console.log(
    `${o.ok ? 'ok    ' : 'FAILED'} ${o.seconds.toFixed(0).padStart(5)} s  ${o.name}${o.passed + o.failed > 0 ? `  (${o.passed} passed, ${o.failed} failed)` : ''}`,
  );
}
console.log(`total ${total.toFixed(0)} s (${(total / 60).toFixed(1)} min)`);
const passed = outcomes.reduce((sum, o) => sum + o.passed, 0);
const failedTests = outcomes.reduce((sum, o) => sum + o.failed, 0);
const failedPhases = outcomes.filter((o) => !o.ok).length + (phases.length - outcomes.length);
console.log(
  `npm test: ${passed} passed, ${failedTests + (failedTests === 0 && failedPhases > 0 ? failedPhases : 0)} failed`,
);
process.exit(failedPhases > 0 ? 1 : 0);
