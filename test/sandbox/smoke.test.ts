// Smoke test of the local real environment: the real Argo Rollouts controller drives a Rollout
// with a pause step to Healthy after a promote, and a VMCluster change restarts its zone's real
// process while vmagent's queue for that zone fills and drains without losing a sample.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually } from './eventually.ts';
import { type Sandbox, startSandbox } from './helper.ts';
import { exportedSeqs, loadgenStatus } from './loadgen-client.ts';
import { vmagentName, vmNamespace } from './manifests.ts';
import { isAlive } from './processes.ts';

let sandbox: Sandbox;

before(async () => {
  sandbox = await startSandbox({ podRestartSeconds: 15 });
});

after(async () => {
  if (!sandbox) return;
  const report = await sandbox.stop();
  assert.deepEqual(report.portsStillBound, [], 'no port may stay bound after down');
  for (const daemon of sandbox.state.daemons)
    assert.equal(isAlive(daemon.pid), false, `${daemon.name} still runs`);
});

interface RolloutStatus {
  phase?: string;
  message?: string;
  currentStepIndex?: number;
  currentPodHash?: string;
  stableRS?: string;
}

async function rolloutStatus(name: string): Promise<RolloutStatus> {
  const ro = await sandbox.kubectl.getJson<{ status?: RolloutStatus }>(['rollout', name, '-n', vmNamespace]);
  return ro.status ?? {};
}

function rollout(name: string, revision: string): object {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name, namespace: vmNamespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, annotations: { 'vmzones.io/revision': revision } },
        spec: { containers: [{ name: 'placeholder', image: 'registry.k8s.io/pause:3.10' }] },
      },
      strategy: { canary: { steps: [{ pause: {} }] } },
    },
  };
}

test('a Rollout with a pause step becomes Healthy after promote under the real controller', async () => {
  await sandbox.kubectl.apply([rollout('smoke', '1')]);
  const first = await eventually('first revision Healthy', async () => {
    const s = await rolloutStatus('smoke');
    return s.phase === 'Healthy' ? s : undefined;
  });
  const pods = await sandbox.kubectl.getJson<{ items: { status: { phase: string; podIP?: string } }[] }>([
    'pods',
    '-n',
    vmNamespace,
    '-l',
    'app=smoke',
  ]);
  assert.equal(pods.items[0]?.status.phase, 'Running', 'the placeholder pod runs on the simulated node');

  await sandbox.kubectl.apply([rollout('smoke', '2')]);
  const paused = await eventually('new revision paused at the pause step', async () => {
    const s = await rolloutStatus('smoke');
    return s.phase === 'Paused' && s.currentPodHash !== first.stableRS ? s : undefined;
  });
  assert.equal(paused.currentStepIndex ?? 0, 0);
  assert.equal(paused.stableRS, first.stableRS, 'the stable ReplicaSet is unchanged while paused');

  await sandbox.rollouts(['promote', 'smoke', '-n', vmNamespace]);
  const healthy = await eventually('promoted revision Healthy', async () => {
    const s = await rolloutStatus('smoke');
    return s.phase === 'Healthy' && s.stableRS === paused.currentPodHash ? s : undefined;
  });
  assert.equal(healthy.currentStepIndex, 1, 'the pause step was completed');
});

function pendingBytes(metrics: string, index: number): number {
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith('vmagent_remotewrite_pending_data_bytes{') && l.includes(`url="${index}:`));
  if (!line) throw new Error(`no pending_data_bytes for remote write #${index}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

test('a VMCluster change restarts its zone; vmagent queues for it, then drains with no sample lost', async () => {
  const zone = sandbox.state.zones[0]!;
  const agentUrl = sandbox.endpoint('VMAgent', vmagentName).url;
  const before = sandbox.endpoint('VMCluster', zone.vmcluster);
  await sandbox.kubectl.run([
    'patch',
    'vmcluster',
    zone.vmcluster,
    '-n',
    vmNamespace,
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { vmstorage: { extraArgs: { 'search.latencyOffset': '5s' } } } }),
  ]);

  let sawExpanding = false;
  let sawZoneDown = false;
  /** The load generator's last accepted sample when a read first failed: a sample vmagent had to queue. */
  let seqWhileDown: number | undefined;
  let maxPending = 0;
  const done = await eventually(
    'the zone to restart and its queue to drain',
    async () => {
      const vmc = await sandbox.kubectl.getJson<{
        metadata: { generation: number };
        status?: { updateStatus?: string; observedGeneration?: number };
      }>(['vmcluster', zone.vmcluster, '-n', vmNamespace]);
      if (vmc.status?.updateStatus === 'expanding') sawExpanding = true;
      // A read routed to the zone fails while its process restarts.
      const read = await fetch(`${before.url}/api/v1/query?query=1`).catch(() => undefined);
      if (!read?.ok && !sawZoneDown) {
        sawZoneDown = true;
        seqWhileDown = (await loadgenStatus(sandbox)).lastSeq;
      }
      const pending = pendingBytes(await (await fetch(`${agentUrl}/metrics`)).text(), 1);
      maxPending = Math.max(maxPending, pending);
      const operational =
        vmc.status?.updateStatus === 'operational' &&
        (vmc.status.observedGeneration ?? 0) >= vmc.metadata.generation;
      return operational && sawZoneDown && maxPending > 0 && pending === 0 ? vmc : undefined;
    },
    120_000,
  );
  assert.ok(sawExpanding, 'status went through expanding');
  assert.ok(sawZoneDown, 'a read sent to the zone failed during the restart');
  assert.ok(maxPending > 0, "vmagent's pending bytes for the zone rose while it was down");
  assert.equal(done.status?.observedGeneration, done.metadata.generation);
  const after = sandbox.endpoint('VMCluster', zone.vmcluster);
  assert.notEqual(after.pid, before.pid, 'the zone runs a new process');
  assert.ok(after.args.includes('-search.latencyOffset=5s'), 'with the new flag');

  // Every sample the load generator pushed before the restart ended reached the zone.
  const loadgen = await loadgenStatus(sandbox);
  const upTo = loadgen.lastSeq - 3;
  // What the wait below cannot vouch for: that the range it checks is the one that matters. It must
  // reach past the outage (samples queued while the zone was down), and no batch may have been lost
  // before vmagent (a batch vmagent refused is missing from every zone, so no gap check would see it).
  assert.ok(seqWhileDown !== undefined && seqWhileDown > 0, 'the stream was flowing when the zone went down');
  assert.ok(
    upTo > seqWhileDown,
    `the checked samples 1..${upTo} include those pushed during the outage (from #${seqWhileDown})`,
  );
  assert.equal(loadgen.failed, 0, `batches vmagent did not accept: ${JSON.stringify(loadgen)}`);
  await eventually('every sample to be queryable in the zone', async () => {
    const found = await exportedSeqs(after.url);
    for (let seq = 1; seq <= upTo; seq++) if (!found.has(seq)) return undefined;
    return found.size;
  });
});

test('an invalid VMCluster spec goes failed with a reason; fixing it makes the zone operational again', async () => {
  const zone = sandbox.state.zones[1]!;
  const patch = (serviceSpec: object | null) =>
    sandbox.kubectl.run([
      'patch',
      'vmcluster',
      zone.vmcluster,
      '-n',
      vmNamespace,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { vmselect: { serviceSpec } } }),
    ]);
  type Vmc = {
    metadata: { generation: number };
    status?: { updateStatus?: string; reason?: string; observedGeneration?: number };
  };
  const get = () => sandbox.kubectl.getJson<Vmc>(['vmcluster', zone.vmcluster, '-n', vmNamespace]);
  await patch({ metadata: { name: `vmselect-${zone.vmcluster}` }, spec: {} });
  const failed = await eventually('failed status', async () => {
    const vmc = await get();
    return vmc.status?.updateStatus === 'failed' ? vmc : undefined;
  });
  assert.match(failed.status?.reason ?? '', /serviceSpec\.Name cannot be equal to prefixed name/);
  assert.equal(failed.status?.observedGeneration, failed.metadata.generation);

  await patch(null);
  const recovered = await eventually('operational again', async () => {
    const vmc = await get();
    return vmc.status?.updateStatus === 'operational' &&
      (vmc.status.observedGeneration ?? 0) >= vmc.metadata.generation
      ? vmc
      : undefined;
  });
  assert.equal(recovered.status?.reason, undefined, 'reason is cleared once operational');
});
