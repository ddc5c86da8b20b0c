// VictoriaLogs zones (docs/zone-kinds.md) on the sandbox: the real operator v0.74.1 reconciles three VLClusters
// (vlinsert/vlselect Deployments, a vlstorage StatefulSet each) and a VLAgent; the data plane runs one real
// victoria-logs process per VLCluster and a real vlagent writing to each zone's vlinsert Service, fed numbered log
// lines by the load generator; vmauth routes LogsQL reads through a VMUser targetRef of kind VLCluster/vlselect. The
// real Argo Rollouts controller walks a vlstorage flag change through them with the project's gates
// (analysis-templates/; the queue drain reads vlagent's queues), then an abort rolls two zones back. Run
// `npm run build` first. One sandbox for the file; the tests run in order.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { stringify } from 'yaml';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { logLinesLost } from '../../bench/rollout-sandbox.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { loadgenStatus } from '../../sandbox/loadgen-client.ts';
import { readUser, vlagentName, vmauthName } from '../../sandbox/manifests.ts';
import { repoRoot } from '../../sandbox/sandbox.ts';
import {
  cluster,
  eventually,
  ns,
  pluginStatuses,
  rolloutObject,
  rolloutState,
  routedZones,
  type SpecDocument,
  sandboxKube,
  startReadProber,
  startRoutingWatcher,
  stepsFor,
  vmzonesAnnotations,
} from '../step/harness.ts';

const zones = ['zone-a', 'zone-b', 'zone-c'].map((zone) => ({
  zone,
  vmcluster: `vm-${zone}`,
  kind: 'VLCluster' as const,
}));

let sandbox: Sandbox;
let kube: KubeObjects;
const report: string[] = [];
const started = Date.now();

before(async () => {
  const starting = Date.now();
  sandbox = await startSandbox({ zones: 3, zoneKind: 'VLCluster', podRestartSeconds: 2, plugin: true });
  report.push(
    `sandbox start (three VLClusters, VLAgent, vmauth operational): ${((Date.now() - starting) / 1000).toFixed(0)} s`,
  );
  kube = sandboxKube(sandbox);
  await sandbox.kubectl.applyFiles([join(repoRoot, 'analysis-templates')]);
});

after(async () => {
  report.push(`e2e wall time (sandbox start included): ${((Date.now() - started) / 1000).toFixed(0)} s`);
  console.log(`\n---- VLCluster zones e2e figures ----\n${report.join('\n')}\n`);
  if (sandbox) await sandbox.stop();
});

const vmauthUrl = () => sandbox.endpoint('VMAuth', vmauthName).url;
/** A LogsQL query of the last lines through vmauth (the sandbox VMUser routes /select/.* to each zone's vlselect). */
const readPath = '/select/logsql/query?query=_time:5m&limit=1';

/**
 * A change that restarts a VLCluster zone: a vlstorage flag, so the operator rewrites the vlstorage StatefulSet and
 * its Pod is replaced (the zone's victoria-logs process restarts with the flag).
 */
const maxQueryDuration = (value: string) => ({
  vlstorage: { extraArgs: { 'search.maxQueryDuration': value } },
});

function logsSpec(overrideSpec: object): SpecDocument {
  return {
    overrideSpec,
    vmauth: { vmuser: 'vmauth-read', drainGracePeriod: '3s' },
    vlagent: { vlagent: vlagentName },
    zones: Object.fromEntries(zones.map((z) => [z.zone, { vlcluster: z.vmcluster }])),
  };
}

async function specValue(name: string): Promise<unknown> {
  const spec = (await cluster(kube, name, 'VLCluster')).spec as {
    vlstorage?: { extraArgs?: Record<string, string> };
  };
  return spec.vlstorage?.extraArgs?.['search.maxQueryDuration'];
}

test('three VLCluster zones walk under the real controller with the gates to Healthy: no read fails, no log line is lost', async (t) => {
  const name = 'logs';
  const steps = (spec: SpecDocument) =>
    renderSteps(parseSpecDocument(stringify(spec)), { pauseBetweenZones: 'none' });
  const first = logsSpec({});
  await sandbox.kubectl.apply([rolloutObject(name, first, steps(first))]);
  const initial = await eventually('the first revision (no steps run) to be Healthy', async () => {
    const s = await rolloutState(kube, name);
    return s.status.phase === 'Healthy' ? s : undefined;
  });
  assert.deepEqual(
    await routedZones(kube, first),
    ['zone-a', 'zone-b', 'zone-c'],
    'the VMUser routes to each VLCluster',
  );
  const generations = await Promise.all(
    zones.map(async (z) => (await cluster(kube, z.vmcluster, 'VLCluster')).metadata.generation),
  );

  const seqBefore = (await loadgenStatus(sandbox)).lastSeq;
  const prober = startReadProber(vmauthUrl(), readUser, readPath);
  const watcher = startRoutingWatcher(kube, zones, 300, first);
  t.after(() => Promise.all([prober.stop(), watcher.stop()]));
  const walkStarted = Date.now();
  const spec = logsSpec(maxQueryDuration('40s'));
  await sandbox.kubectl.apply([rolloutObject(name, spec, steps(spec))]);
  await eventually(
    'the three-zone VLCluster rollout to be Healthy',
    async () => {
      const s = await rolloutState(kube, name);
      if (s.status.currentPodHash === initial.status.currentPodHash) return undefined;
      if (s.status.phase === 'Degraded') throw new Error(`rollout Degraded: ${JSON.stringify(s.status)}`);
      return s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash ? s : undefined;
    },
    600_000,
    1000,
  );
  const walkSeconds = (Date.now() - walkStarted) / 1000;
  const reads = await prober.stop();
  const routing = await watcher.stop();
  // The last lines may still be in vlagent's buffers: check up to three seconds' worth before the last accepted.
  const loadgen = await loadgenStatus(sandbox);
  const seqAfter = loadgen.lastSeq - 150;
  const { lost, duplicates } = await logLinesLost(sandbox, zones, seqBefore + 1, seqAfter);

  for (const [i, z] of zones.entries()) {
    const logs = await cluster(kube, z.vmcluster, 'VLCluster');
    assert.equal(await specValue(z.vmcluster), '40s', `${z.zone} has the change`);
    assert.equal(logs.metadata.generation, (generations[i] ?? 0) + 1, `${z.zone} was changed exactly once`);
    assert.deepEqual(Object.keys(vmzonesAnnotations(logs)), ['vmzones.io/rollback'], `${z.zone} released`);
    assert.ok(
      sandbox.endpoint('VLCluster', z.vmcluster).args.includes('-search.maxQueryDuration=40s'),
      `${z.zone}'s victoria-logs restarted with the flag`,
    );
  }
  assert.deepEqual(
    await routedZones(kube, spec),
    ['zone-a', 'zone-b', 'zone-c'],
    'every zone serves reads again',
  );
  const runs = (
    await sandbox.kubectl.getJson<{ items: { status?: { phase?: string } }[] }>(['analysisruns', '-n', ns])
  ).items;
  report.push(
    `VLCluster walk with gates: ${walkSeconds.toFixed(0)} s; LogsQL queries through vmauth sent ${reads.sent}, failed ${reads.failed}, vmauth backend errors ${reads.backendErrors}; routing checks ${routing.checks}, violations ${routing.violations.length}; log lines checked ${seqAfter - seqBefore}, lost per zone ${JSON.stringify(lost)}, stored twice per zone ${JSON.stringify(duplicates)}; load generator batches refused ${loadgen.failed}; AnalysisRuns ${runs.map((r) => r.status?.phase).join(', ')}`,
  );
  assert.ok(
    runs.length >= 2 && runs.every((r) => r.status?.phase === 'Successful'),
    'the gates between zones ran and passed',
  );
  assert.deepEqual(reads.failures, [], 'no query through vmauth failed');
  assert.equal(reads.backendErrors, 0, 'vmauth never sent a query to a zone that was down');
  assert.deepEqual(routing.violations, [], 'a routed zone was always operational');
  assert.ok(reads.sent > 100, `the prober ran throughout (${reads.sent} queries)`);
  assert.ok(
    seqAfter - seqBefore > 30 * 50,
    `the load generator wrote throughout (${seqAfter - seqBefore} lines)`,
  );
  assert.equal(loadgen.failed, 0, `vlagent accepted every batch (last error: ${loadgen.lastError})`);
  assert.deepEqual(lost, { 'zone-a': 0, 'zone-b': 0, 'zone-c': 0 }, 'no log line lost in any zone');
});

test('abort after zone two rolls both VLClusters back and restores their reads once operational; zone-c untouched', async (t) => {
  const name = 'logs-aborted';
  const initial = logsSpec({});
  await sandbox.kubectl.apply([rolloutObject(name, initial, [{ pause: {} }])]);
  await eventually(`${name}: the first revision to be Healthy`, async () =>
    (await rolloutState(kube, name)).status.phase === 'Healthy' ? true : undefined,
  );
  const valuesBefore = await Promise.all(zones.map((z) => specValue(z.vmcluster)));
  const cBefore = await cluster(kube, 'vm-zone-c', 'VLCluster');
  const seqBefore = (await loadgenStatus(sandbox)).lastSeq;
  const prober = startReadProber(vmauthUrl(), readUser, readPath);
  const watcher = startRoutingWatcher(kube, zones, 300, initial);
  t.after(() => Promise.all([prober.stop(), watcher.stop()]));
  const spec = logsSpec(maxQueryDuration('50s'));
  // Zone-a's steps 0..2, zone-b's 3..5, a manual pause (6), zone-c's 7..9.
  const walk = stepsFor(spec, 'none');
  await sandbox.kubectl.apply([
    rolloutObject(name, spec, [...walk.slice(0, 6), { pause: {} }, ...walk.slice(6)]),
  ]);
  await eventually(
    'the pause after zone-b',
    async () => {
      const s = await rolloutState(kube, name);
      return s.status.phase === 'Paused' && s.status.currentStepIndex === 6 ? s : undefined;
    },
    300_000,
    1000,
  );
  assert.equal(await specValue('vm-zone-a'), '50s');
  assert.equal(await specValue('vm-zone-b'), '50s');
  const abortStarted = Date.now();
  await sandbox.rollouts(['abort', name, '-n', ns]);
  const aborted = await eventually('Abort of every completed step', async () => {
    const s = await rolloutState(kube, name);
    return pluginStatuses(s).filter((st) => st.operation === 'Abort').length === 6 ? s : undefined;
  });
  const aborts = pluginStatuses(aborted).filter((st) => st.operation === 'Abort');
  assert.ok(
    aborts.every((a) => a.phase === 'Successful'),
    JSON.stringify(aborts),
  );
  await eventually(
    'zones a and b rolled back, reads restored, zones released',
    async () => {
      for (const [i, z] of zones.slice(0, 2).entries()) {
        const logs = await cluster(kube, z.vmcluster, 'VLCluster');
        if ((await specValue(z.vmcluster)) !== valuesBefore[i]) return undefined;
        if (Object.keys(vmzonesAnnotations(logs)).length > 0) return undefined;
      }
      return (await routedZones(kube, spec)).length === 3 ? true : undefined;
    },
    300_000,
    1000,
  );
  const rollbackSeconds = (Date.now() - abortStarted) / 1000;
  const reads = await prober.stop();
  const routing = await watcher.stop();
  const seqAfter = (await loadgenStatus(sandbox)).lastSeq - 150;
  const { lost } = await logLinesLost(sandbox, zones, seqBefore + 1, seqAfter);
  const c = await cluster(kube, 'vm-zone-c', 'VLCluster');
  assert.equal(c.metadata.generation, cBefore.metadata.generation, 'zone-c was never touched');
  report.push(
    `VLCluster abort after zone two: rollback of two zones ${rollbackSeconds.toFixed(0)} s after the abort; queries sent ${reads.sent}, failed ${reads.failed}, vmauth backend errors ${reads.backendErrors}; routing checks ${routing.checks}, violations ${routing.violations.length}; log lines checked ${seqAfter - seqBefore}, lost per zone ${JSON.stringify(lost)}`,
  );
  assert.deepEqual(lost, { 'zone-a': 0, 'zone-b': 0, 'zone-c': 0 }, 'no log line lost in any zone');
  assert.deepEqual(reads.failures, []);
  assert.equal(reads.backendErrors, 0);
  assert.deepEqual(routing.violations, []);
});
