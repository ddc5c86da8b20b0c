// The walk in waves on the sandbox (docs/step-plugin.md, "Waves and the zone disruption budget"): six zones, four in
// the hub (zone-a … zone-d) and two in one zone cluster (zone-e, zone-f in cluster-e: a control plane of its own with
// the VM operator and data plane, registered as an Argo CD cluster Secret), walked in three waves of 1, 2 and 3 zones,
// the second and third each spanning both clusters. The steps are `vmzones render`'s (one drainReads, apply, gate
// analysis and restoreReads per wave).
//
// 1. A commit of an overrideSpec change walks every wave to Healthy: every zone has the change, reads through vmauth
//    never fail, no zone is routed while not ready, every sample reaches every zone, each wave's zones are out of
//    reads together and never zones of two waves at once.
// 2. A second revision aborted between wave 2's gate and its restore (both its zones changed and out of reads): the
//    zones of waves 1 and 2 roll back, wave 3's are never touched, every zone ends released, out of maintenance and
//    serving; no read fails, no sample is lost.
// 3. The disruption budget across Rollouts: while a Rollout holds zone-b and zone-e out of reads, another Rollout
//    whose budget allows 2 zones out waits to drain zone-d with a message naming both holders, and drains it once
//    they are back; never more than 2 zones are out.
// 4. The zones that keep serving are current before a drain (issue 37): while zone-c's vmagent queue is backed up
//    (its process stopped, its VMCluster still operational), a drain of zone-a waits naming zone-c and its queue,
//    and goes on once zone-c answers again and its queue drained.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { stringify } from 'yaml';
import { kubeconfigConnection } from '../../../plugin/kube/kube-config.ts';
import { type KubeObjects, kubeObjects } from '../../../plugin/kube/objects.ts';
import { vmclusterReadiness } from '../../../plugin/vm/vmcluster.ts';
import { type CanaryStep, defaultHealthTemplate, renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { applyAnalysisTemplates } from '../../sandbox/analysis-templates.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { loadgenStatus } from '../../sandbox/loadgen-client.ts';
import { readUser, vmauthName } from '../../sandbox/manifests.ts';
import { leftoversIn, samplesLost, specValue } from '../reliability/support.ts';
import {
  cluster,
  eventually,
  ns,
  type OutOfReads,
  type RolloutState,
  rolloutCanProgress,
  rolloutObject,
  rolloutStanding,
  rolloutState,
  routedZones,
  runStatus,
  type SpecDocument,
  type StepPluginStatus,
  sandboxKube,
  startReadProber,
  startRoutingWatcher,
  withRoundSpacing,
  zoneSpec,
  zonesAcrossClusters,
} from '../step/harness.ts';

const name = 'waves';
const waves = [['zone-a'], ['zone-b', 'zone-e'], ['zone-c', 'zone-d', 'zone-f']];
/** The budget of the walk: its widest wave (docs/step-plugin.md). */
const walkBudget = 3;
const figures: Record<string, number | string> = {};
let sandbox: Sandbox;
let hub: KubeObjects;
let zones: { zone: string; vmcluster: string }[] = [];
/** Each zone's VMCluster is read in its own cluster, with that cluster's admin kubeconfig. */
const kubeOf: Record<string, KubeObjects> = {};

/** The spec document of the six zones in waves, with `value` as the vmstorage flag the walks change. */
function spec(value: string | undefined, extra: Partial<SpecDocument> = { waves }): SpecDocument {
  return zoneSpec(
    value === undefined ? {} : { vmstorage: { extraArgs: { 'search.latencyOffset': value } } },
    {
      zones: zonesAcrossClusters(zones, sandbox.state.zoneClusters ?? []),
      ...extra,
    },
  );
}

/** `vmzones render`'s steps (the zone-healthy gate per wave, rounds close together: the sandbox's load is steady). */
function walkSteps(doc: SpecDocument, only?: string[]): CanaryStep[] {
  return withRoundSpacing(
    renderSteps(parseSpecDocument(stringify(doc)), {
      healthTemplate: defaultHealthTemplate,
      pauseBetweenZones: 'none',
      ...(only === undefined ? {} : { only }),
    }),
  );
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

before(async () => {
  const started = Date.now();
  sandbox = await startSandbox({
    zones: 6,
    zoneClusters: 1,
    zonesPerZoneCluster: 2,
    podRestartSeconds: 2,
    plugin: true,
    // cluster-e's query pods are reached through its API server's pod proxy (the zoneAnswers gate, the in-flight
    // reading of a drain), which refuses loopback Pod IPs: the zone cluster gives its Pods a pod-network address.
    zonePodNetwork: true,
  });
  figures['sandbox start (s)'] = seconds(Date.now() - started);
  hub = sandboxKube(sandbox);
  zones = sandbox.state.zones.map((z) => ({ zone: z.zone, vmcluster: z.vmcluster }));
  await applyAnalysisTemplates(sandbox.kubectl);
  const remote = sandbox.state.zoneClusters ?? [];
  assert.deepEqual(
    remote.map((c) => `${c.zone}@${c.name}`),
    ['zone-e@cluster-e', 'zone-f@cluster-e'],
    'zone-e and zone-f live in one zone cluster',
  );
  const clusterKube = new Map<string, KubeObjects>();
  for (const z of zones) {
    const zc = remote.find((c) => c.zone === z.zone);
    if (zc === undefined) {
      kubeOf[z.zone] = hub;
      continue;
    }
    let kube = clusterKube.get(zc.name);
    if (kube === undefined) {
      kube = kubeObjects(kubeconfigConnection([zc.kubeconfig]));
      clusterKube.set(zc.name, kube);
    }
    kubeOf[z.zone] = kube;
  }
  assert.deepEqual(waves.flat().sort(), zones.map((z) => z.zone).sort(), 'the waves name every zone once');
});

/** Probers and watchers still running: a test that failed before stopping its own leaves them to `after`. */
const running = new Set<() => Promise<unknown>>();

after(async () => {
  await Promise.all([...running].map((stop) => stop()));
  const report = await sandbox?.stop();
  console.log(`waves walk figures: ${JSON.stringify(figures)}`);
  assert.deepEqual(report?.portsStillBound ?? [], [], 'every daemon of both clusters is gone');
});

async function values(): Promise<Record<string, unknown>> {
  const entries = await Promise.all(
    zones.map(async (z) => [z.zone, await specValue(kubeOf[z.zone] as KubeObjects, z.vmcluster)] as const),
  );
  return Object.fromEntries(entries);
}

const everyZone = (value: string) => Object.fromEntries(zones.map((z) => [z.zone, value]));

/** Reads through the hub's vmauth, routing checked against each zone's readiness in its own cluster, samples. */
async function probes() {
  const loadgen = await loadgenStatus(sandbox);
  const reads = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const watcher = startRoutingWatcher(hub, zones, 300, spec(undefined), kubeOf);
  running.add(reads.stop);
  running.add(watcher.stop);
  return async () => {
    running.delete(reads.stop);
    running.delete(watcher.stop);
    const read = await reads.stop();
    const { violations, checks, outOfReads } = await watcher.stop();
    const to = (await loadgenStatus(sandbox)).lastSeq - 3;
    const samples = await samplesLost(sandbox, loadgen.lastSeq + 1, to, loadgen.failed, 120_000, zones);
    return { read, violations, checks, outOfReads, samples };
  };
}

async function leftovers(): Promise<string[]> {
  return leftoversIn(kubeOf, hub, spec(undefined), zones);
}

/** The most zones the routing watcher saw out of reads at once. */
const mostOut = (seen: OutOfReads[]) => Math.max(0, ...seen.map((s) => s.zones.length));

const describeOut = (seen: OutOfReads[]) =>
  seen.map((s) => `+${seconds(s.at - (seen[0]?.at ?? s.at))}s [${s.zones.join(',')}]`).join(' ');

/** Whether all of `wanted` were out of reads together at some moment the watcher saw. */
const outTogether = (seen: OutOfReads[], wanted: readonly string[]) =>
  seen.some((s) => wanted.every((z) => s.zones.includes(z)));

async function healthy(rollout: string, what: string, before?: RolloutState, timeoutMs = 8 * 60_000) {
  return eventually(
    what,
    async () => {
      const s = await rolloutState(hub, rollout);
      if (before !== undefined && s.status.currentPodHash === before.status.currentPodHash) return undefined;
      if (s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash) return s;
      throw new Error(rolloutStanding(s));
    },
    { timeoutMs, intervalMs: 500, unless: rolloutCanProgress(hub, rollout) },
  );
}

/** Applies a Rollout's first revision (Argo Rollouts skips its steps) and waits until it is Healthy. */
async function firstRevision(rollout: string, doc: SpecDocument): Promise<RolloutState> {
  await sandbox.kubectl.apply([rolloutObject(rollout, doc, [])]);
  return healthy(rollout, `Rollout ${rollout}'s first revision to be Healthy`, undefined, 120_000);
}

test('a commit walks six zones in three waves (1, 2, 3; two zones in cluster-e) to Healthy: each wave out of reads together, reads never fail, no sample lost', async () => {
  const before = await firstRevision(name, spec(undefined));
  const finish = await probes();
  const doc = spec('6s');
  const steps = walkSteps(doc);
  assert.equal(steps.length, 4 * waves.length, 'drainReads, apply, gate, restoreReads per wave');
  assert.deepEqual(
    steps
      .filter((s) => 'plugin' in s && s.plugin.config.action === 'drainReads')
      .map((s) => JSON.stringify(s)),
    waves.map((w) =>
      JSON.stringify({
        plugin: {
          name: 'vmzones/step',
          config: w.length === 1 ? { zone: w[0], action: 'drainReads' } : { zones: w, action: 'drainReads' },
        },
      }),
    ),
    'one drainReads per wave, naming its zones',
  );
  const started = Date.now();
  await sandbox.kubectl.apply([rolloutObject(name, doc, steps)]);
  // Wave i starts at step 4i.
  const waveStarted: number[] = [];
  /** Each wave's drainReads status, as last seen (the controller keeps it once the step finished). */
  const drainStatuses: (StepPluginStatus | undefined)[] = [];
  await eventually(
    'the walk in three waves to be Healthy',
    async () => {
      const s = await rolloutState(hub, name);
      if (s.status.currentPodHash === before.status.currentPodHash) return undefined;
      waves.forEach((_, i) => {
        drainStatuses[i] = runStatus(s, 4 * i) ?? drainStatuses[i];
      });
      const at = s.status.currentStepIndex ?? 0;
      for (let i = 0; i < waves.length; i++) if (at >= 4 * i) waveStarted[i] ??= Date.now();
      if (s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash) return true;
      throw new Error(rolloutStanding(s));
    },
    { timeoutMs: 8 * 60_000, intervalMs: 500, unless: rolloutCanProgress(hub, name) },
  );
  const ended = Date.now();
  figures['walk (s)'] = seconds(ended - started);
  waves.forEach((w, i) => {
    figures[`wave ${i + 1} [${w.join(',')}] (s)`] = seconds(
      (waveStarted[i + 1] ?? ended) - (waveStarted[i] ?? started),
    );
  });
  const m = await finish();
  figures['walk reads failed/total'] = `${m.read.failed}/${m.read.sent}`;
  figures['walk samples lost'] = m.samples.lost;
  figures['walk most zones out at once'] = mostOut(m.outOfReads);
  figures['walk out of reads'] = describeOut(m.outOfReads);
  assert.deepEqual(await values(), everyZone('6s'), 'every zone has the change, in its own cluster');
  assert.equal(m.read.failed, 0, `reads failed: ${m.read.failures.join('; ')}`);
  assert.deepEqual(m.violations, [], 'no zone routed while not ready');
  assert.ok(m.checks > 10, `the routing watcher looked ${m.checks} times`);
  assert.equal(m.samples.lost, 0, m.samples.detail);
  for (const wave of waves) {
    assert.ok(
      outTogether(m.outOfReads, wave),
      `the zones of wave ${wave.join(', ')} were out of reads together: ${describeOut(m.outOfReads)}`,
    );
  }
  for (const seen of m.outOfReads) {
    assert.ok(
      waves.some((wave) => seen.zones.every((z) => wave.includes(z))),
      `only zones of one wave out at once, never more than ${walkBudget}: [${seen.zones.join(', ')}]`,
    );
  }
  // A wave moves as one (issue 38): every zone of a wave is taken out of reads before the drain of any of them ends
  // (its queries seen done, or its grace period over; the status has whole seconds). One after another, each zone's
  // drain ended before the next zone's began (the grace, 3 s, is within the in-call wait), whole seconds apart.
  waves.forEach((wave, i) => {
    if (wave.length < 2) return;
    const moves = drainMoves(drainStatuses[i], wave);
    figures[`wave ${i + 1} drains (drainedAt → ended)`] = moves
      .map((mv) => `${mv.zone} ${mv.drainedAt.slice(11, 19)} → ${mv.ended.slice(11, 19)}`)
      .join(', ');
    const lastOut = Math.max(...moves.map((mv) => Date.parse(mv.drainedAt)));
    const firstEnded = Math.min(...moves.map((mv) => Date.parse(mv.ended)));
    assert.ok(
      lastOut <= firstEnded,
      `the drains of wave ${wave.join(', ')} overlap: ${figures[`wave ${i + 1} drains (drainedAt → ended)`]}`,
    );
  });
  assert.deepEqual(await leftovers(), []);
});

/** Each zone's drain in a wave's drainReads status: when it was taken out, and when its drain ended. */
function drainMoves(
  status: StepPluginStatus | undefined,
  wave: readonly string[],
): { zone: string; drainedAt: string; ended: string }[] {
  const zonesStatus = (status?.status?.zones ?? {}) as Record<string, Record<string, unknown> | undefined>;
  return wave.map((zone) => {
    const own = zonesStatus[zone];
    const drainedAt = own?.drainedAt;
    const ended = own?.queriesDoneAt ?? own?.graceUntil;
    if (typeof drainedAt !== 'string' || typeof ended !== 'string') {
      throw new Error(
        `the drainReads status of wave ${wave.join(', ')} has no drain times for ${zone}: ${JSON.stringify(status)}`,
      );
    }
    return { zone, drainedAt, ended };
  });
}

test('a second revision aborted between wave 2’s gate and its restore: waves 1 and 2 roll back (hub and cluster-e), wave 3 never changes, every zone released and serving', async () => {
  const wave3 = waves[2] as string[];
  const generations = async () =>
    Object.fromEntries(
      await Promise.all(
        wave3.map(async (zone) => {
          const z = zones.find((x) => x.zone === zone);
          assert.ok(z, zone);
          return [
            zone,
            (await cluster(kubeOf[zone] as KubeObjects, z.vmcluster)).metadata.generation,
          ] as const;
        }),
      ),
    );
  const wave3Before = await generations();
  const finish = await probes();
  const doc = spec('7s');
  const walk = walkSteps(doc);
  // Wave 2 is steps 4 (drainReads), 5 (apply), 6 (its gate) and 7 (restoreReads): a pause before its restore.
  const pauseAt = 7;
  await sandbox.kubectl.apply([
    rolloutObject(name, doc, [...walk.slice(0, pauseAt), { pause: {} }, ...walk.slice(pauseAt)]),
  ]);
  const wave2 = waves[1] as string[];
  await eventually(
    'wave 2 changed, gated and out of reads, the Rollout paused before its restore',
    async () => {
      const s = await rolloutState(hub, name);
      if (s.status.phase === 'Paused' && s.status.currentStepIndex === pauseAt) return true;
      throw new Error(rolloutStanding(s));
    },
    { timeoutMs: 6 * 60_000, intervalMs: 500, unless: rolloutCanProgress(hub, name) },
  );
  const atAbort = await values();
  assert.deepEqual(
    atAbort,
    { ...everyZone('6s'), 'zone-a': '7s', 'zone-b': '7s', 'zone-e': '7s' },
    'waves 1 and 2 changed, wave 3 not yet',
  );
  const outAtAbort = (await leftovers()).filter((l) => l.startsWith('out of reads'));
  assert.deepEqual(
    outAtAbort,
    [`out of reads: ${wave2.join(', ')}`],
    'both zones of wave 2 are out of reads',
  );
  const abortedAt = Date.now();
  await sandbox.rollouts(['abort', name, '-n', ns]);
  let settled: Record<string, unknown> = {};
  let left: string[] = [];
  await eventually(
    'waves 1 and 2 rolled back, every zone released and routed',
    async () => {
      settled = await values();
      left = await leftovers();
      if (Object.values(settled).every((v) => v === '6s') && left.length === 0) return true;
      throw new Error(`values ${JSON.stringify(settled)}, left: ${left.join('; ')}`);
    },
    5 * 60_000,
    1000,
  ).catch(() => undefined);
  figures['abort to settled (s)'] = seconds(Date.now() - abortedAt);
  const m = await finish();
  figures['abort reads failed/total'] = `${m.read.failed}/${m.read.sent}`;
  figures['abort samples lost'] = m.samples.lost;
  figures['abort out of reads'] = describeOut(m.outOfReads);
  assert.deepEqual(settled, everyZone('6s'), 'zone-a, zone-b and zone-e rolled back; wave 3 never changed');
  assert.deepEqual(await generations(), wave3Before, 'wave 3’s VMClusters were never written');
  assert.deepEqual(left, [], 'every zone released, out of maintenance, routed');
  for (const z of zones) {
    const readiness = vmclusterReadiness(await cluster(kubeOf[z.zone] as KubeObjects, z.vmcluster));
    assert.equal(readiness.state, 'ready', `${z.zone}: ${readiness.message}`);
  }
  assert.equal(m.read.failed, 0, `reads failed: ${m.read.failures.join('; ')}`);
  assert.deepEqual(m.violations, [], 'no zone routed while not ready');
  assert.equal(m.samples.lost, 0, m.samples.detail);
  assert.ok(
    mostOut(m.outOfReads) <= walkBudget,
    `never more than ${walkBudget} out: ${describeOut(m.outOfReads)}`,
  );
});

test('the disruption budget across Rollouts: a drain of zone-d waits, naming zone-b and zone-e that another Rollout holds out, and drains once they are back', async () => {
  const holder = 'holder';
  const other = 'other';
  // The holder walks wave 2 only, paused after its drain; the other Rollout walks zone-d alone, allowing 2 zones out.
  const otherSpec = (value: string | undefined) => spec(value, { disruptionBudget: { maxZonesOut: 2 } });
  await firstRevision(holder, spec('6s'));
  await firstRevision(other, otherSpec('6s'));
  const finish = await probes();
  const holderDoc = spec('8s');
  const wave2 = waves[1] as string[];
  const holderWalk = walkSteps(holderDoc, wave2);
  await sandbox.kubectl.apply([
    rolloutObject(holder, holderDoc, [holderWalk[0] as CanaryStep, { pause: {} }, ...holderWalk.slice(1)]),
  ]);
  await eventually(
    'the holder to drain zone-b and zone-e and pause',
    async () => {
      const s = await rolloutState(hub, holder);
      if (s.status.phase === 'Paused' && s.status.currentStepIndex === 1) return true;
      throw new Error(rolloutStanding(s));
    },
    { timeoutMs: 3 * 60_000, unless: rolloutCanProgress(hub, holder) },
  );
  const otherDoc = otherSpec('8s');
  await sandbox.kubectl.apply([rolloutObject(other, otherDoc, walkSteps(otherDoc, ['zone-d']))]);
  const refused = await eventually(
    'the other Rollout’s drain of zone-d to wait on the budget',
    async () => {
      const s = await rolloutState(hub, other);
      const message = runStatus(s, 0)?.message ?? '';
      if (/disruption budget/.test(message)) return message;
      throw new Error(rolloutStanding(s));
    },
    { timeoutMs: 90_000, unless: rolloutCanProgress(hub, other) },
  );
  figures['budget refusal message'] = refused.slice(0, 400);
  assert.match(refused, /zone-b \(drainReads by Rollout vm\/holder/, 'names zone-b and who holds it out');
  assert.match(refused, /zone-e \(drainReads by Rollout vm\/holder/, 'names zone-e and who holds it out');
  assert.match(refused, /allows 2 zones out at once/);
  // Still waiting some rounds later: the budget holds while the holder does.
  await new Promise((resolve) => setTimeout(resolve, 10_000));
  const waiting = await rolloutState(hub, other);
  assert.equal(runStatus(waiting, 0)?.phase, 'Running', runStatus(waiting, 0)?.message);
  assert.equal((await values())['zone-d'], '6s');
  const releasedAt = Date.now();
  await sandbox.rollouts(['promote', holder, '-n', ns]);
  await healthy(holder, 'the holder’s walk of wave 2 to be Healthy', undefined, 4 * 60_000);
  await healthy(other, 'the other Rollout’s walk of zone-d to be Healthy', undefined, 4 * 60_000);
  figures['budget: holder released to both Healthy (s)'] = seconds(Date.now() - releasedAt);
  const m = await finish();
  figures['budget reads failed/total'] = `${m.read.failed}/${m.read.sent}`;
  figures['budget samples lost'] = m.samples.lost;
  figures['budget out of reads'] = describeOut(m.outOfReads);
  const v = await values();
  assert.deepEqual(
    [v['zone-b'], v['zone-e'], v['zone-d']],
    ['8s', '8s', '8s'],
    'both walks applied their change',
  );
  assert.ok(outTogether(m.outOfReads, wave2), `zone-b and zone-e out together: ${describeOut(m.outOfReads)}`);
  assert.ok(outTogether(m.outOfReads, ['zone-d']), `zone-d drained in the end: ${describeOut(m.outOfReads)}`);
  // zone-d may leave as soon as one of them is back (2 out is within the budget), never beside both.
  assert.ok(
    mostOut(m.outOfReads) <= 2,
    `never more than the budget's 2 zones out: ${describeOut(m.outOfReads)}`,
  );
  assert.equal(m.read.failed, 0, `reads failed: ${m.read.failures.join('; ')}`);
  assert.deepEqual(m.violations, [], 'no zone routed while not ready');
  assert.equal(m.samples.lost, 0, m.samples.detail);
  assert.deepEqual(await leftovers(), []);
});

test('a drain while zone-c’s vmagent queue is backed up waits, naming zone-c and its queue, then goes on once it drains', async () => {
  const rollout = 'behind';
  await firstRevision(rollout, spec('6s'));
  // zone-c stops answering (its process is stopped): vmagent's sends to it hang and its queue toward zone-c backs
  // up, while its VMCluster stays operational (nothing watches the process) and it keeps its place in reads.
  const zoneC = sandbox.endpoint('VMCluster', 'vm-zone-c');
  // When zone-a leaves reads, as the routing watcher sees it (no read prober: reads routed to zone-c hang too).
  const watcher = startRoutingWatcher(hub, zones, 300, spec(undefined), kubeOf);
  running.add(watcher.stop);
  process.kill(zoneC.pid, 'SIGSTOP');
  let resumedAt = 0;
  try {
    const doc = spec('9s');
    await sandbox.kubectl.apply([rolloutObject(rollout, doc, walkSteps(doc, ['zone-a']))]);
    const waitedAt = Date.now();
    const waiting = await eventually(
      'the drain of zone-a to wait on zone-c',
      async () => {
        const s = await rolloutState(hub, rollout);
        const run = runStatus(s, 0);
        if (run?.status?.state === 'waitingForServingZones') return run;
        throw new Error(rolloutStanding(s));
      },
      {
        timeoutMs: 90_000,
        // A drain that went ahead beside zone-c can no longer wait on it: fail at once.
        unless: async () => {
          const drained = runStatus(await rolloutState(hub, rollout), 0);
          if (drained?.phase === 'Successful')
            return `zone-a was drained beside zone-c: ${drained.message ?? ''}`;
          return rolloutCanProgress(hub, rollout)();
        },
      },
    );
    figures['serving: drain waited on zone-c after (s)'] = seconds(Date.now() - waitedAt);
    figures['serving: wait message'] = (waiting.message ?? '').slice(0, 400);
    assert.equal(waiting.phase, 'Running');
    assert.match(
      waiting.message ?? '',
      /zone zone-a: not drained yet: draining zone zone-a would move its reads to zone zone-c, which is behind: the remote-write queue of VMAgent vmagent toward it is not drained: /,
    );
    // Independent evidence that the queue is backed up: vmagent's sends to zone-c (its third queue) get no answer,
    // while those to zone-b (the second) do. (Its pending bytes need not grow: the senders hold the blocks.)
    const agentUrl = sandbox.endpoint('VMAgent', 'vmagent').url;
    const before = await answeredSends(agentUrl);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const later = await answeredSends(agentUrl);
    figures['serving: sends answered in 3 s while zone-c stopped (zone-b, zone-c)'] =
      `${(later[2] ?? 0) - (before[2] ?? 0)}, ${(later[3] ?? 0) - (before[3] ?? 0)}`;
    assert.equal(later[3], before[3], "no send to zone-c's queue was answered");
    assert.ok((later[2] ?? 0) > (before[2] ?? 0), "zone-b's queue kept delivering");
    // Still waiting a controller round later, zone-a still serving and unchanged.
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    const still = runStatus(await rolloutState(hub, rollout), 0);
    assert.equal(still?.phase, 'Running', still?.message);
    assert.equal(still?.status?.state, 'waitingForServingZones', still?.message);
    assert.ok(
      (await routedZones(hub, spec(undefined))).includes('zone-a'),
      'zone-a keeps serving reads while it waits',
    );
    assert.equal((await values())['zone-a'], '6s');
  } finally {
    process.kill(zoneC.pid, 'SIGCONT');
    resumedAt = Date.now();
  }
  await healthy(rollout, 'the walk of zone-a to be Healthy once zone-c drained', undefined, 4 * 60_000);
  running.delete(watcher.stop);
  const { outOfReads, violations } = await watcher.stop();
  const drainedAt = outOfReads.find((o) => o.zones.includes('zone-a'))?.at;
  assert.ok(drainedAt !== undefined, `zone-a was drained: ${describeOut(outOfReads)}`);
  figures['serving: zone-c resumed to zone-a drained (s)'] = seconds(drainedAt - resumedAt);
  assert.ok(
    drainedAt >= resumedAt,
    `zone-a left reads only after zone-c resumed: ${describeOut(outOfReads)}`,
  );
  assert.deepEqual(violations, [], 'no zone routed while not ready');
  assert.equal((await values())['zone-a'], '9s');
  assert.deepEqual(await leftovers(), []);
});

/** vmagent's answered remote-write requests per queue (1-based, as its `url="N:…"` label numbers them). */
async function answeredSends(agentUrl: string): Promise<Record<number, number>> {
  const text = await (await fetch(`${agentUrl}/metrics`, { signal: AbortSignal.timeout(3_000) })).text();
  const sends: Record<number, number> = {};
  for (const line of text.split('\n')) {
    const match = /^vmagent_remotewrite_requests_total\{.*url="(\d+):/.exec(line);
    if (match === null) continue;
    const queue = Number(match[1]);
    sends[queue] = (sends[queue] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sends;
}
