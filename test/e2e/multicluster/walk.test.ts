// The three-cluster walk with data planes (docs/multicluster.md): one sandbox whose hub runs Argo Rollouts with
// the vmzones plugins, vmagent, vmauth and zone-a, and two zone clusters (own control plane, VM operator, kubelet
// and data plane) holding zone-b and zone-c, registered as Argo CD cluster Secrets with the least RBAC of
// manifests/multicluster/zone-cluster-rbac.yaml. The hub's vmagent writes and its vmauth reads the remote zones at
// the addresses their clusters publish (the spec names them in vminsertHosts / vmselectHosts).
//
// 1. A commit of an overrideSpec change walks zone-a, zone-b, zone-c (drainReads, apply, the zone-healthy gates,
//    restoreReads, each in the zone's cluster) to Healthy, while reads go through vmauth all along, no zone is
//    routed while not ready, and every sample reaches every zone.
// 2. A second revision aborted while zone-b's gates run (zone-b changed, drained, in maintenance): zone-a and
//    zone-b are rolled back on their own clusters, zone-c never changes, every zone ends released, out of
//    maintenance and serving reads.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { type KubeObjects, kubeObjects } from '../../../plugin/kube/objects.ts';
import { vmclusterReadiness } from '../../../plugin/vm/vmcluster.ts';
import { defaultHealthTemplate } from '../../../plugin/zones/render.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { loadgenStatus } from '../../sandbox/loadgen-client.ts';
import { readUser, vmauthName } from '../../sandbox/manifests.ts';
import { repoRoot } from '../../sandbox/sandbox.ts';
import { leftoversIn, samplesLost, specValue, zones } from '../reliability/support.ts';
import {
  cluster,
  eventually,
  ns,
  type RolloutState,
  rolloutObject,
  rolloutState,
  type SpecDocument,
  sandboxKube,
  startReadProber,
  startRoutingWatcher,
  stepsFor,
  zoneSpec,
} from '../step/harness.ts';

const name = 'zones';
const figures: Record<string, number | string> = {};
let sandbox: Sandbox;
let hub: KubeObjects;
/** Each zone's VMCluster is read in its own cluster, with that cluster's admin kubeconfig. */
const kubeOf: Record<string, KubeObjects> = {};
let spec: (value: string | undefined) => SpecDocument;

before(async () => {
  const started = Date.now();
  sandbox = await startSandbox({ zoneClusters: 2, podRestartSeconds: 2, plugin: true });
  figures['sandbox start (s)'] = Math.round((Date.now() - started) / 100) / 10;
  hub = sandboxKube(sandbox);
  await sandbox.kubectl.applyFiles([join(repoRoot, 'analysis-templates')]);
  const remote = Object.fromEntries((sandbox.state.zoneClusters ?? []).map((c) => [c.zone, c]));
  for (const z of zones) {
    const zc = remote[z.zone];
    if (zc === undefined) {
      kubeOf[z.zone] = hub;
      continue;
    }
    const kc = new KubeConfig();
    kc.loadFromFile(zc.kubeconfig);
    kubeOf[z.zone] = kubeObjects(kc);
  }
  assert.deepEqual(Object.keys(remote), ['zone-b', 'zone-c'], 'zone-b and zone-c live in zone clusters');
  spec = (value) =>
    zoneSpec(value === undefined ? {} : { vmstorage: { extraArgs: { 'search.latencyOffset': value } } }, {
      zones: Object.fromEntries(
        zones.map((z) => {
          const zc = remote[z.zone];
          return [
            z.zone,
            zc === undefined
              ? { vmcluster: z.vmcluster }
              : {
                  cluster: zc.name,
                  vmcluster: z.vmcluster,
                  vmselectHosts: [zc.address],
                  vminsertHosts: [zc.address],
                },
          ];
        }),
      ),
    });
});

after(async () => {
  const report = await sandbox?.stop();
  console.log(`multicluster walk figures: ${JSON.stringify(figures)}`);
  assert.deepEqual(report?.portsStillBound ?? [], [], 'every daemon of the three clusters is gone');
});

/** The zone-healthy gates, with rounds close together (the sandbox's load is steady; the gate logic is the same). */
function walkSteps(doc: SpecDocument): object[] {
  return stepsFor(doc, 'none', defaultHealthTemplate).map((step) =>
    'analysis' in step
      ? {
          analysis: {
            ...step.analysis,
            args: [...step.analysis.args, { name: 'roundSpacing', value: '2s' }],
          },
        }
      : step,
  );
}

function values(): Promise<unknown[]> {
  return Promise.all(zones.map((z) => specValue(kubeOf[z.zone] as KubeObjects, z.vmcluster)));
}

/** Reads through the hub's vmauth, routing checked against each zone's readiness in its own cluster, samples. */
async function probes() {
  const loadgen = await loadgenStatus(sandbox);
  const reads = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const watcher = startRoutingWatcher(hub, zones, 300, spec(undefined), kubeOf);
  return async () => {
    const read = await reads.stop();
    const { violations, checks } = await watcher.stop();
    const to = (await loadgenStatus(sandbox)).lastSeq - 3;
    const samples = await samplesLost(sandbox, loadgen.lastSeq + 1, to, loadgen.failed);
    return { read, violations, checks, samples };
  };
}

async function leftovers(): Promise<string[]> {
  return leftoversIn(kubeOf, hub, spec(undefined));
}

test('a commit walks zone-a (hub), zone-b and zone-c (zone clusters) to Healthy: reads never fail, no sample lost', async () => {
  const first = spec(undefined);
  await sandbox.kubectl.apply([rolloutObject(name, first, walkSteps(first))]);
  await eventually('the first revision to be Healthy', async () =>
    (await rolloutState(hub, name)).status.phase === 'Healthy' ? true : undefined,
  );
  const finish = await probes();
  const doc = spec('6s');
  const started = Date.now();
  const before = await rolloutState(hub, name);
  await sandbox.kubectl.apply([rolloutObject(name, doc, walkSteps(doc))]);
  // Each zone has 4 steps (drainReads, apply, analysis, restoreReads): zone i starts at step 4i.
  const zoneStarted: number[] = [];
  let last: RolloutState = before;
  await eventually(
    'the three-cluster walk to be Healthy',
    async () => {
      last = await rolloutState(hub, name);
      if (last.status.currentPodHash === before.status.currentPodHash) return undefined;
      const at = last.status.currentStepIndex ?? 0;
      for (let i = 0; i < zones.length; i++) if (at >= 4 * i) zoneStarted[i] ??= Date.now();
      assert.notEqual(last.status.phase, 'Degraded', `the walk degraded: ${last.status.message}`);
      return last.status.phase === 'Healthy' && last.status.stableRS === last.status.currentPodHash
        ? true
        : undefined;
    },
    8 * 60_000,
    500,
  );
  const ended = Date.now();
  figures['walk (s)'] = Math.round((ended - started) / 100) / 10;
  zones.forEach((z, i) => {
    const next = zoneStarted[i + 1] ?? ended;
    figures[`${z.zone} (s)`] = Math.round((next - (zoneStarted[i] ?? started)) / 100) / 10;
  });
  const m = await finish();
  figures['walk reads failed/total'] = `${m.read.failed}/${m.read.sent}`;
  figures['walk samples lost'] = m.samples.lost;
  assert.deepEqual(await values(), ['6s', '6s', '6s'], 'every zone has the change, in its own cluster');
  assert.equal(m.read.failed, 0, `reads failed: ${m.read.failures.join('; ')}`);
  assert.deepEqual(m.violations, [], 'no zone routed while not ready');
  assert.ok(m.checks > 10, `the routing watcher looked ${m.checks} times`);
  assert.equal(m.samples.lost, 0, m.samples.detail);
  assert.deepEqual(await leftovers(), []);
});

test('a second revision aborted while zone-b’s gates run: zone-a and zone-b roll back on their clusters, every zone released and serving', async () => {
  const finish = await probes();
  const doc = spec('7s');
  await sandbox.kubectl.apply([rolloutObject(name, doc, walkSteps(doc))]);
  // Zone-b's analysis is step 6 (after its drainReads 4 and apply 5).
  await eventually(
    'zone-b changed in cluster-b and its gates running',
    async () => {
      const s = await rolloutState(hub, name);
      return (s.status.currentStepIndex ?? 0) === 6 && (await values())[1] === '7s' ? true : undefined;
    },
    6 * 60_000,
    300,
  );
  const abortedAt = Date.now();
  await sandbox.rollouts(['abort', name, '-n', ns]);
  let settled: unknown[] = [];
  let left: string[] = [];
  await eventually(
    'zones a and b rolled back, every zone released and routed',
    async () => {
      settled = await values();
      left = await leftovers();
      return settled.every((v) => v === '6s') && left.length === 0 ? true : undefined;
    },
    5 * 60_000,
    1000,
  ).catch(() => undefined);
  figures['abort to settled (s)'] = Math.round((Date.now() - abortedAt) / 100) / 10;
  const m = await finish();
  figures['abort reads failed/total'] = `${m.read.failed}/${m.read.sent}`;
  figures['abort samples lost'] = m.samples.lost;
  assert.deepEqual(settled, ['6s', '6s', '6s'], 'zone-a and zone-b rolled back, zone-c never changed');
  assert.deepEqual(left, [], 'every zone released, out of maintenance, routed');
  for (const z of zones) {
    const readiness = vmclusterReadiness(await cluster(kubeOf[z.zone] as KubeObjects, z.vmcluster));
    assert.equal(readiness.state, 'ready', `${z.zone}: ${readiness.message}`);
  }
  assert.equal(m.read.failed, 0, `reads failed: ${m.read.failures.join('; ')}`);
  assert.deepEqual(m.violations, [], 'no zone routed while not ready');
  assert.equal(m.samples.lost, 0, m.samples.detail);
});
