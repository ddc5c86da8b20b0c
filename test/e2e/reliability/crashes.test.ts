// Crashes and other people's hands in the middle of a walk (issue 8, docs/reliability.md), under the real Argo
// Rollouts controller with reads through vmauth and the load generator writing: the controller's pod crashing
// (SIGKILL of the controller with the plugin processes it started) at every step boundary and during Abort, the
// plugin process SIGKILLed inside its actions (while its write is in flight: the API server applied it, the
// answer never came), and a VMCluster edited by someone else between apply and abort. One sandbox for the file:
// every scenario starts from a Healthy Rollout and ends with every zone released and routed (asserted), so the
// next one starts clean. Run `npm run build` first.

import { after as afterAll, before } from 'node:test';
import type { FaultConfig, FaultControl } from '../../sandbox/fault-proxy.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { vmauthName } from '../../sandbox/manifests.ts';
import { pidsRunning } from '../../sandbox/processes.ts';
import {
  cluster,
  eventually,
  pluginStatuses,
  type RolloutState,
  rolloutObject,
  rolloutState,
  runStatus,
  sandboxKube,
  stepsFor,
  zoneSpec,
} from '../step/harness.ts';
import {
  assertZeros,
  firstRevision,
  measure,
  measuredRow,
  rolloutName as name,
  reliabilityTable,
  type Scene,
  scenarioFilter,
  settledLeftovers,
  waitOrDescribe,
  walk,
  zoneValues,
} from './scenario.ts';
import { faultControl, killStepPlugin, latencyOffset, leftovers, ns, zones } from './support.ts';

const { record } = reliabilityTable();
const scenario = scenarioFilter(
  'crashes.test.ts',
  ['controller-kill', 'plugin-kill-in-action', 'vmauth-restart', 'abort-crash-edit'],
  ['controller-kill', 'plugin-kill-in-action', 'vmauth-restart', 'abort-crash-edit'],
  () => sandbox,
);

let sandbox: Sandbox | undefined;
let scene: Scene;
let control: FaultControl;
before(async () => {
  sandbox = await startSandbox({ zones: 3, podRestartSeconds: 2, plugin: true, faultProxy: true });
  scene = { sandbox, kube: sandboxKube(sandbox) };
  control = faultControl(sandbox);
  await firstRevision(scene);
});
afterAll(async () => {
  await sandbox?.stop();
});

/** Kill points: a step index the first time the controller is seen on it; 9 = after the last step. */
const killPoints = [...Array(stepsFor(zoneSpec({}), 'none').length + 1).keys()];

scenario(
  'controller-kill',
  'SIGKILL of the controller (and its plugins) at every step boundary',
  async () => {
    await control.reset();
    const probes = await measure(scene);
    // A point one walk misses (the step passed while the controller restarted) is tried in the next walk.
    const killed = new Map<number, number>();
    const outcomes: string[] = [];
    for (let w = 0; w < 3 && killed.size < killPoints.length; w++) {
      const start = await rolloutState(scene.kube, name);
      const seen = new Set<number>();
      const outcome = await walk(
        scene,
        12 * 60_000,
        async (s) => {
          if (s.status.currentPodHash === start.status.currentPodHash || s.status.phase === 'Healthy') return;
          const at = s.status.currentStepIndex ?? 0;
          if (seen.has(at)) return;
          seen.add(at);
          if (killed.has(at)) return;
          await scene.sandbox.crashController();
          killed.set(at, w + 1);
        },
        `${6 + w}s`,
      );
      outcomes.push(outcome);
      if (outcome !== 'completed') break;
    }
    const row = await finishRow(
      'SIGKILL of the controller at each step boundary',
      `${killed.size} controller crashes at ${killed.size} of ${killPoints.length} kill points, ${outcomes.length} walks`,
      outcomes,
      probes,
      [`crashed before step (walk): ${[...killed.entries()].map(([p, w]) => `${p} (${w})`).join(', ')}`],
    );
    assertZeros(row, 'completed');
  },
);

scenario(
  'plugin-kill-in-action',
  'SIGKILL of the step plugin inside its actions, with its write applied and the answer in flight',
  async () => {
    await control.reset();
    const probes = await measure(scene);
    // Every PATCH of a VMCluster or a VMUser is held by the proxy after the API server applied it; the plugin
    // is killed while it waits for the answer. At most two kills per step (each action writes twice at most
    // before it ends: lease + route, dry run + patch, route + release), then the step runs unhindered.
    const hold: FaultConfig = {
      seed: 1,
      hangMs: 30_000,
      rules: [
        {
          faults: ['hang'],
          rate: 1,
          when: 'after',
          verbs: ['patch'],
          resources: ['vmclusters', 'vmusers'],
          limit: 1,
        },
      ],
    };
    const killsPerStep = new Map<number, number>();
    let held = 0;
    let armedAt = -1;
    const start = await rolloutState(scene.kube, name);
    const outcome = await walk(
      scene,
      15 * 60_000,
      async (s) => {
        if (s.status.currentPodHash === start.status.currentPodHash || s.status.phase === 'Healthy') return;
        const at = s.status.currentStepIndex ?? 0;
        const stats = await control.stats();
        if (stats.faultsTotal > held) {
          held = stats.faultsTotal;
          if (killStepPlugin(scene.sandbox).length > 0) killsPerStep.set(at, (killsPerStep.get(at) ?? 0) + 1);
          armedAt = -1;
          await control.clear();
        }
        if (armedAt < 0 && (killsPerStep.get(at) ?? 0) < 2) {
          armedAt = at;
          await control.set(hold);
        } else if (armedAt >= 0 && armedAt !== at) {
          // The step ended without a second write: re-arm for the step the controller is on now.
          armedAt = -1;
          await control.clear();
        }
      },
      '9s',
    );
    await control.clear();
    const kills = [...killsPerStep.values()].reduce((a, b) => a + b, 0);
    const row = await finishRow(
      'SIGKILL of the plugin inside its actions (write applied, answer lost)',
      `${kills} SIGKILLs during a held PATCH, in ${killsPerStep.size} of ${killPoints.length - 1} steps`,
      [outcome],
      probes,
      [`kills by step: ${[...killsPerStep.entries()].map(([p, n]) => `${p}×${n}`).join(', ')}`],
    );
    assertZeros(row, 'completed');
  },
);

/** Pids of this sandbox's vmauth processes (the data plane plays the VMAuth's pod with one). */
const vmauthPids = () => pidsRunning(scene.sandbox.state.binaries.vmauth, scene.sandbox.state.stateDir);

scenario(
  'vmauth-restart',
  'the vmauth replica restarted while drainReads waits for its evidence: never drained without it; put back at readyTimeout',
  async () => {
    const initial = await zoneValues(scene);
    await control.reset();
    const probes = await measure(scene);
    const vmauthUrl = scene.sandbox.endpoint('VMAuth', vmauthName).url;
    // The first VMUser write of the walk is zone-a's drainReads taking it out of reads: vmauth is SIGKILLed right
    // after it, while drainReads waits for every replica to serve the new config. The data plane starts vmauth
    // again on its next resync (≤ 15 s), as the operator's Deployment would. Its start-up load proves nothing
    // (it may have read the old file) and the sandbox plays no config-reloader sidecar (whose content hash would
    // prove it), so no evidence can come: drainReads must keep zone-a unchanged and, at the spec document's
    // readyTimeout (2m here), fail, and the walk is aborted with zone-a put back. Reads cannot succeed while the
    // only vmauth is down: those are counted apart; every other read must succeed.
    const spec = zoneSpec(latencyOffset('12s'), { readyTimeout: '2m' });
    await scene.sandbox.kubectl.apply([rolloutObject(name, spec, stepsFor(spec, 'none'))]);
    let killedAt: number | undefined;
    let backAt: number | undefined;
    let failedBeforeKill = 0;
    let failedWhileDown = 0;
    let drainedWithoutEvidence = 0;
    const timeout = await waitOrDescribe(
      'drainReads of zone-a failed at readyTimeout, the walk aborted, zone-a back in reads and released',
      async () => {
        if (killedAt === undefined) {
          if (((await control.stats()).requests['patch vmusers'] ?? 0) === 0) return false;
          failedBeforeKill = probes.failedReads();
          for (const pid of vmauthPids()) process.kill(pid, 'SIGKILL');
          killedAt = Date.now();
          return false;
        }
        if (backAt === undefined) {
          const up = await fetch(`${vmauthUrl}/health`, { signal: AbortSignal.timeout(1000) }).then(
            (r) => r.ok,
            () => false,
          );
          if (up) {
            backAt = Date.now();
            failedWhileDown = probes.failedReads() - failedBeforeKill;
          }
          return false;
        }
        const state = await rolloutState(scene.kube, name);
        if (runStatus(state, 0)?.phase === 'Successful') drainedWithoutEvidence++;
        if (state.status.abort !== true) return false;
        const values = await zoneValues(scene);
        if (zones.some((_, i) => values[i] !== initial[i])) return false;
        return (await leftovers(scene.kube)).length === 0;
      },
      8 * 60_000,
      300,
    );
    const state = await rolloutState(scene.kube, name);
    const drain = runStatus(state, 0);
    const row = await finishRow(
      'vmauth restarted mid-drain (no config-reloader)',
      killedAt === undefined
        ? 'vmauth was never killed (no VMUser write seen)'
        : `1 vmauth SIGKILL, back after ${backAt === undefined ? '?' : ((backAt - killedAt) / 1000).toFixed(1)} s (${failedWhileDown} reads failed while it was down, not counted)`,
      [
        timeout === undefined && drainedWithoutEvidence === 0
          ? 'rolled back'
          : `${timeout ?? ''}${drainedWithoutEvidence > 0 ? ' drainReads reported Successful without evidence' : ''}; drainReads ${drain?.phase ?? '?'}: ${(drain?.message ?? '').slice(0, 200)}`,
      ],
      probes,
      [`zone-a drainReads ${drain?.phase ?? '?'}: ${(drain?.message ?? '').slice(0, 300)}`],
      'rolled back',
      failedWhileDown,
    );
    assertZeros(row, 'rolled back');
    // The next scenario starts from the stable revision again.
    await scene.sandbox.kubectl.apply([rolloutObject(name, zoneSpec({}), stepsFor(zoneSpec({}), 'none'))]);
    await eventually('the stable revision Healthy again', async () =>
      (await rolloutState(scene.kube, name)).status.phase === 'Healthy' ? true : undefined,
    );
  },
);

scenario(
  'abort-crash-edit',
  'VMCluster edited by someone else between apply and abort, and the controller crashing during the Abort',
  async () => {
    const initial = await zoneValues(scene);
    await control.reset();
    const probes = await measure(scene);
    const spec = zoneSpec(latencyOffset('10s'));
    const steps = stepsFor(spec, 'none');
    // Zone-a's steps 0..2; zone-b's drainReads (3) and apply (4); a manual pause (5) with zone-b drained and
    // changed; zone-b's restoreReads (6); zone-c's 7..9.
    await scene.sandbox.kubectl.apply([
      rolloutObject(name, spec, [...steps.slice(0, 5), { pause: {} }, ...steps.slice(5)]),
    ]);
    await eventually(
      'the pause inside zone-b',
      async () => {
        const s = await rolloutState(scene.kube, name);
        return s.status.phase === 'Paused' && s.status.currentStepIndex === 5 ? s : undefined;
      },
      300_000,
      1000,
    );
    // Someone else (another field manager) changes zone-b while it is drained: the field vmzones changed, and
    // one it never touched. Neither is vmzones' to undo.
    const theirs = { 'search.latencyOffset': '11s' };
    const theirSelect = { 'search.maxQueryDuration': '45s' };
    await scene.sandbox.kubectl.run([
      'patch',
      'vmcluster',
      zones[1]?.vmcluster ?? '',
      '-n',
      ns,
      '--type=merge',
      '--field-manager=someone-else',
      '-p',
      JSON.stringify({ spec: { vmstorage: { extraArgs: theirs }, vmselect: { extraArgs: theirSelect } } }),
    ]);
    await scene.sandbox.rollouts(['abort', name, '-n', ns]);
    const abortSeen = await waitOrDescribe(
      'the first Abort status',
      async () => pluginStatuses(await rolloutState(scene.kube, name)).some((s) => s.operation === 'Abort'),
      120_000,
      100,
    );
    await scene.sandbox.crashController();
    const expected = [initial[0], theirs['search.latencyOffset'], initial[2]];
    const timeout = await waitOrDescribe(
      'zone-a rolled back, zone-b kept as someone else left it, every zone released and routed',
      async () => {
        const values = await zoneValues(scene);
        if (zones.some((_, i) => values[i] !== expected[i])) return false;
        return (await leftovers(scene.kube)).length === 0;
      },
      8 * 60_000,
    );
    const zoneB = (await cluster(scene.kube, zones[1]?.vmcluster ?? '')).spec as {
      vmselect?: { extraArgs?: Record<string, string> };
    };
    const values = await zoneValues(scene);
    const left = await leftovers(scene.kube);
    let outcome = 'rolled back';
    if (timeout !== undefined) {
      outcome = `not rolled back in 8 min: spec ${zones.map((z, i) => `${z.zone}=${String(values[i] ?? 'unset')}`).join(' ')}${left.length > 0 ? `; left behind: ${left.join('; ')}` : ''}`;
    } else if (zoneB.vmselect?.extraArgs?.['search.maxQueryDuration'] !== '45s') {
      outcome = `rolled back, but someone else's vmselect edit on zone-b is gone: ${JSON.stringify(zoneB.vmselect)}`;
    }
    const state = await rolloutState(scene.kube, name);
    const aborts = pluginStatuses(state).filter((s) => s.operation === 'Abort');
    const row = await finishRow(
      'VMCluster edited by someone else, then an Abort with a controller crash',
      `1 foreign edit (zone-b, our field and another), 1 controller crash ${abortSeen === undefined ? 'after the first Abort status' : 'before any Abort status was seen'}`,
      [outcome],
      probes,
      [
        `zone values after: ${zones.map((z, i) => `${z.zone}=${String(values[i] ?? 'unset')}`).join(' ')} (expected ${expected.map(String).join(' ')})`,
        `abort statuses: ${aborts.map((a) => `#${a.index} ${a.phase}: ${(a.message ?? '').slice(0, 160)}`).join(' / ')}`,
      ],
      'rolled back',
    );
    assertZeros(row, 'rolled back');
    // The next walk starts from the Rollout's stable revision again.
    await scene.sandbox.kubectl.apply([rolloutObject(name, zoneSpec({}), stepsFor(zoneSpec({}), 'none'))]);
  },
);

/** Stops the probes, waits for the reconciler, and records the scenario's row. */
async function finishRow(
  scenarioName: string,
  faults: string,
  outcomes: string[],
  probes: Awaited<ReturnType<typeof measure>>,
  notes: string[],
  expected = 'completed',
  /** Reads that failed while vmauth itself was down: no tool can keep those up; reported, not counted. */
  readsNotCounted = 0,
) {
  let outcome = outcomes.every((o) => o === expected) ? expected : outcomes.join('; ');
  const left = await settledLeftovers(scene.kube);
  if (left.length > 0) outcome += `; left behind: ${left.join('; ')}`;
  const stats = await control.stats();
  const m = await probes.finish();
  const state: RolloutState = await rolloutState(scene.kube, name);
  const measured = measuredRow(m, stats, state);
  return record({
    scenario: scenarioName,
    faults,
    outcome,
    ...measured,
    failedReads: measured.failedReads - readsNotCounted,
    notes: [...notes, ...measured.notes],
  });
}
