// `vmzones status --watch` as a person sees it: the built CLI (dist/vmzones.mjs) runs in a real terminal (tmux)
// against the sandbox while the real Argo Rollouts controller walks three zones with a manual pause inside
// zone-b's walk (after its apply). The pane is captured mid-walk (`tmux capture-pane -p`): zone-b is marked as the
// zone being walked, out of reads and holding the lease; zone-a walked and zone-c not yet, both serving; the
// table is redrawn in place (one header on the screen, a moving spinner). After `kubectl argo rollouts promote`
// the walk ends Healthy and the watch exits 0. Needs tmux (`npm run env:build` installs it) and `npm run build`.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import {
  eventually,
  latencyOffset,
  ns,
  rolloutCanProgress,
  rolloutObject,
  rolloutState,
  sandboxKube,
  walkToPause,
  zoneSpec,
} from '../step/harness.ts';

const repoRoot = new URL('../../..', import.meta.url).pathname;
const bundle = join(repoRoot, 'dist', 'vmzones.mjs');
const socket = `vmzones-status-${process.pid}`;
const session = 'status';

let sandbox: Sandbox;
let kube: KubeObjects;

function tmux(args: string[]): string {
  const result = spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  if (result.error !== undefined) throw result.error;
  if (result.status !== 0) throw new Error(`tmux ${args.join(' ')}: exit ${result.status}: ${result.stderr}`);
  return result.stdout;
}

const capture = () => tmux(['capture-pane', '-p', '-t', session]);

before(async () => {
  // A missing tmux is a failure, never a skip: this is the test of how the table looks in a terminal.
  const probe = spawnSync('tmux', ['-V'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      `tmux is required for the vmzones status --watch test but cannot run (${probe.error?.message ?? probe.stderr}): npm run env:build installs it (apt-get install tmux)`,
    );
  }
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run "npm run build" first`);
  sandbox = await startSandbox({ zones: 3, podRestartSeconds: 2, plugin: true });
  kube = sandboxKube(sandbox);
});

after(async () => {
  spawnSync('tmux', ['-L', socket, 'kill-server']);
  await sandbox?.stop();
});

test('status --watch in a terminal follows a three-zone walk, marks the zone being walked and exits 0 when it is Healthy', async () => {
  const name = 'walk';
  const initial = zoneSpec({});
  await sandbox.kubectl.apply([rolloutObject(name, initial, [{ pause: {} }])]);
  await eventually(
    `${name}: the first revision to be Healthy`,
    async () => ((await rolloutState(kube, name)).status.phase === 'Healthy' ? true : undefined),
    { unless: rolloutCanProgress(kube, name) },
  );

  // zone-a 0..2, zone-b 3..4, a manual pause (5), zone-b's restoreReads (6), zone-c 7..9.
  const spec = zoneSpec(latencyOffset('5s'));
  await walkToPause(sandbox, kube, name, spec, 5);

  const exitFile = join(sandbox.state.stateDir, 'status-watch.exit');
  const command = [
    process.execPath,
    bundle,
    'status',
    name,
    '-n',
    ns,
    '--kubeconfig',
    sandbox.state.kubeconfig,
    '--watch',
  ]
    .map((word) => `'${word}'`)
    .join(' ');
  // The pane stays after the command ends (sleep), so that the final screen can be captured too.
  tmux([
    'new-session',
    '-d',
    '-s',
    session,
    '-x',
    '150',
    '-y',
    '16',
    `${command}; echo $? > '${exitFile}'; sleep 600`,
  ]);

  const mid = await eventually(
    'the watch to draw zone-b as the zone being walked',
    async () => {
      const pane = capture();
      return /^>> +zone-b /m.test(pane) && /waiting-gate/.test(pane) ? pane : undefined;
    },
    30_000,
    500,
  );
  process.stderr.write(`---- tmux capture-pane mid-walk ----\n${mid}\n`);
  writeFileSync(join(sandbox.state.stateDir, 'status-capture.txt'), mid);
  const lines = mid.split('\n');
  assert.match(
    lines[0] ?? '',
    /^Rollout vm\/walk {2}revision \S+ \(stable \S+\) {2}step 6\/10 \(pause\) {2}Paused/,
  );
  const row = (zone: string) =>
    lines.find((l) => new RegExp(`^.. +${zone} `).test(l) || l.startsWith(`    ${zone} `));
  assert.match(
    row('zone-b') ?? '',
    /^>> {2}zone-b {2}\[##-\] pause [|/\\-] +waiting-gate +\d+[smh]\S* +\d+ +operational +no +walk /,
  );
  assert.match(
    row('zone-a') ?? '',
    /^ok {2}zone-a {2}\[###\] +serving +- +\d+ +operational +yes +- +- +zone zone-a: /,
  );
  assert.match(row('zone-c') ?? '', /^ {4}zone-c {2}\[---\] +serving +- +\d+ +operational +yes +- /);
  assert.equal(mid.match(/^Rollout /gm)?.length, 1, 'redrawn in place: one table on the screen');

  // The spinner turns while nothing else changes.
  const spin = (pane: string) => /\[##-\] pause (.)/.exec(pane)?.[1];
  const first = spin(mid);
  await eventually(
    'the spinner to turn',
    async () => {
      const now = spin(capture());
      return now !== undefined && now !== first ? now : undefined;
    },
    10_000,
    200,
  );
  assert.ok(!existsSync(exitFile), 'the watch keeps running while the walk is paused');

  await sandbox.rollouts(['promote', name, '-n', ns]);
  const code = await eventually(
    'the watch to exit after the walk',
    async () => (existsSync(exitFile) ? readFileSync(exitFile, 'utf8').trim() : undefined),
    300_000,
    1000,
  );
  await sleep(200);
  const end = capture();
  process.stderr.write(`---- tmux capture-pane at the end ----\n${end}\n`);
  assert.equal(code, '0', end);
  assert.match(end, /^Rollout vm\/walk {2}revision \S+ {2}all 10 steps done {2}Healthy/m);
  for (const zone of ['zone-a', 'zone-b', 'zone-c']) {
    assert.match(end, new RegExp(`^ok {2}${zone} {2}\\[#+\\] +serving +- +\\d+ +operational +yes +- `, 'm'));
  }
  assert.equal((await rolloutState(kube, name)).status.phase, 'Healthy');
});
