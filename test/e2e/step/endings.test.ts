// Every ending of a walk that no step finishes, under the real Argo Rollouts controller on the sandbox: promote
// --full during a pause, a new revision (a new commit) during a pause and during a zone's health analysis, the
// template reverted to the stable one, the Rollout deleted mid-walk. Each must end with every zone serving reads
// from a healthy, known spec, released and out of maintenance — finished by the plugin's background reconciler
// (plugin/zones/reconciler/walk-ending.ts). Reads go through vmauth all along; a routed zone must never be unhealthy.
// One sandbox (3 zones) for the file.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import type { CanaryStep } from '../../../plugin/zones/render.ts';
import { applyAnalysisTemplates } from '../../sandbox/analysis-templates.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { readUser, vmauthName } from '../../sandbox/manifests.ts';
import {
  cluster,
  eventually,
  latencyOffset,
  ns,
  rolloutCanProgress,
  rolloutObject,
  rolloutState,
  routedZones,
  runStatus,
  sandboxKube,
  startReadProber,
  startRoutingWatcher,
  stepsFor,
  vmzonesAnnotations,
  zoneSpec,
  sandboxZones as zones,
} from './harness.ts';

let sandbox: Sandbox;
let kube: KubeObjects;
const report: string[] = [];

before(async () => {
  sandbox = await startSandbox({ zones: 3, podRestartSeconds: 2, plugin: true });
  kube = sandboxKube(sandbox);
  await applyAnalysisTemplates(sandbox.kubectl);
});

after(async () => {
  console.log(`\n---- vmzones endings e2e ----\n${report.join('\n')}\n`);
  if (sandbox) await sandbox.stop();
});

async function offsets(): Promise<Record<string, unknown>> {
  const result: Record<string, unknown> = {};
  for (const z of zones) {
    const spec = (await cluster(kube, z.vmcluster)).spec as {
      vmstorage?: { extraArgs?: Record<string, string> };
    };
    result[z.zone] = spec.vmstorage?.extraArgs?.['search.latencyOffset'] ?? '(unset)';
  }
  return result;
}

/** The walk's steps with a manual pause right after `zone`'s apply (where the zone is drained and changed). */
function stepsPausingAfterApply(spec: ReturnType<typeof zoneSpec>, zone: string): CanaryStep[] {
  const steps = stepsFor(spec, 'none');
  const applyIndex = steps.findIndex(
    (s) => 'plugin' in s && s.plugin.config.zone === zone && s.plugin.config.action === 'apply',
  );
  return [...steps.slice(0, applyIndex + 1), { pause: {} }, ...steps.slice(applyIndex + 1)];
}

async function pausedAfterApply(name: string, index: number): Promise<void> {
  await eventually(
    `${name}: paused after apply (step ${index + 1})`,
    async () => {
      const s = await rolloutState(kube, name);
      return runStatus(s, index)?.phase === 'Successful' && s.status.currentStepIndex === index + 1
        ? true
        : undefined;
    },
    240_000,
    1000,
  );
}

/**
 * How long an ending may take to leave every zone serving. A revert rolls back two zones one after the other (the
 * second may not leave reads while the first is out): 113 s on an idle machine, and about twice that beside two
 * other sandbox lanes, which is where a 240 s limit failed a CI run. Timeouts here say "stuck", not "slow"
 * (speed is measured by npm run bench).
 */
const servingTimeoutMs = 600_000;
/** The controller's own part of an ending (a Rollout turning Healthy) under the same load. */
const controllerTimeoutMs = 300_000;

/** Every zone routed, operational, without lease, maintenance or handoff (what every ending must leave). */
async function everyZoneServing(what: string): Promise<number> {
  const started = Date.now();
  await eventually(
    `${what}: every zone serving reads, released and out of maintenance`,
    async () => {
      const routed = await routedZones(kube);
      if (routed.length !== zones.length) return undefined;
      for (const z of zones) {
        const annotations = vmzonesAnnotations(await cluster(kube, z.vmcluster));
        if (
          ['vmzones.io/lease', 'vmzones.io/maintenance', 'vmzones.io/handoff'].some((a) => a in annotations)
        )
          return undefined;
      }
      return true;
    },
    servingTimeoutMs,
    1000,
  );
  return (Date.now() - started) / 1000;
}

async function withProbes<T>(work: () => Promise<T>): Promise<T> {
  const prober = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const watcher = startRoutingWatcher(kube, zones);
  try {
    return await work();
  } finally {
    const reads = await prober.stop();
    const routing = await watcher.stop();
    report.push(
      `  reads ${reads.sent} sent / ${reads.failed} failed; routing checks ${routing.checks} / ${routing.violations.length} violations`,
    );
    assert.equal(reads.failed, 0, `failed reads through vmauth: ${reads.failures.join('; ')}`);
    assert.deepEqual(routing.violations, [], 'a routed zone was not operational');
  }
}

async function startRollout(
  name: string,
  value: string,
  stepsOf: (spec: ReturnType<typeof zoneSpec>) => CanaryStep[],
) {
  const spec = zoneSpec(latencyOffset(value));
  const object = rolloutObject(name, spec, stepsOf(spec));
  await sandbox.kubectl.apply([object]);
  return object;
}

async function healthyFirstRevision(name: string): Promise<object> {
  const first = await startRollout(name, '0s', () => [{ pause: {} }]);
  await eventually(
    `${name}: the first revision to be Healthy`,
    async () => ((await rolloutState(kube, name)).status.phase === 'Healthy' ? true : undefined),
    { timeoutMs: controllerTimeoutMs, unless: rolloutCanProgress(kube, name) },
  );
  return first;
}

test('promote --full during a pause after zone-a was changed: zone-a comes back with the change, zones not reached keep their spec', async () => {
  const name = 'promoted';
  await healthyFirstRevision(name);
  const before = await offsets();
  await withProbes(async () => {
    await startRollout(name, '7s', (spec) => stepsPausingAfterApply(spec, 'zone-a'));
    await pausedAfterApply(name, 1);
    await sandbox.rollouts(['promote', name, '-n', ns, '--full']);
    await eventually(
      `${name}: Healthy after the full promotion`,
      async () => {
        const s = await rolloutState(kube, name);
        return s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash
          ? true
          : undefined;
      },
      { timeoutMs: controllerTimeoutMs, unless: rolloutCanProgress(kube, name) },
    );
    report.push(
      `promote --full: every zone serving ${(await everyZoneServing(name)).toFixed(0)} s after Healthy`,
    );
  });
  const after = await offsets();
  assert.deepEqual(
    after,
    { ...before, 'zone-a': '7s' },
    'zone-a keeps the change; zone-b and zone-c keep their spec',
  );
  // The ending is told in events, on the real API server: on the Rollout and on zone-a's VMCluster.
  const events = (await kube.list('events.k8s.io/v1', 'Event', ns)) as unknown as {
    reason?: string;
    note?: string;
    regarding?: { kind?: string; name?: string };
  }[];
  const about = (kind: string, objectName: string) =>
    events.filter((e) => e.regarding?.kind === kind && e.regarding.name === objectName).map((e) => e.reason);
  for (const reason of ['ZoneDrained', 'ZoneChanged', 'ZoneWalkEnded', 'ZoneFinished']) {
    assert.ok(
      about('Rollout', name).includes(reason),
      `event ${reason} on the Rollout: ${about('Rollout', name).join(', ')}`,
    );
  }
  assert.ok(about('VMCluster', 'vm-zone-a').includes('ZoneWalkEnded'), 'and on the VMCluster');
  const ended = events.find((e) => e.reason === 'ZoneWalkEnded' && e.regarding?.kind === 'Rollout');
  // `promote --full` moves the step index past the last step and then makes the revision stable, in two writes of
  // the controller: a reconciler pass between them sees "moved past the steps", one after them "promoted to stable".
  // Both are true of this ending and both finish the zone with its change (plugin/zones/reconciler/walk-ending.ts), which is asserted.
  assert.match(
    ended?.note ?? '',
    /(promoted to stable before zone zone-a was finished|moved past the steps of zone zone-a \(now at step \d+\) while it held the zone); vmzones finishes it with the change it has/,
  );
  report.push(`promote --full events on the Rollout: ${about('Rollout', name).join(', ')}`);
  await sandbox.kubectl.run(['delete', 'rollout', name, '-n', ns]);
});

test('a new revision (a new commit) during the pause at zone-b: the walk starts again and every zone ends on the newest spec', async () => {
  const name = 'superseded';
  await healthyFirstRevision(name);
  await withProbes(async () => {
    await startRollout(name, '8s', (spec) => stepsPausingAfterApply(spec, 'zone-b'));
    await pausedAfterApply(name, 4);
    await startRollout(name, '9s', (spec) => stepsFor(spec, 'none'));
    await eventually(
      `${name}: the newest revision Healthy`,
      async () => {
        const s = await rolloutState(kube, name);
        return s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash
          ? true
          : undefined;
      },
      420_000,
      1000,
    );
    report.push(
      `new revision mid-walk: every zone serving ${(await everyZoneServing(name)).toFixed(0)} s after Healthy`,
    );
  });
  assert.deepEqual(await offsets(), { 'zone-a': '9s', 'zone-b': '9s', 'zone-c': '9s' });
  await sandbox.kubectl.run(['delete', 'rollout', name, '-n', ns]);
});

test('a new revision (a new commit) while zone-b’s health analysis runs: the run is terminated, the new walk takes zone-b over and every zone ends on the newest spec', async () => {
  const name = 'superseded-in-analysis';
  await healthyFirstRevision(name);
  const withGates = (spec: ReturnType<typeof zoneSpec>) => stepsFor(spec, 'none', 'vmzones-zone-healthy');
  const analysisOfZoneB = withGates(zoneSpec({})).findIndex(
    (s, i, all) =>
      'analysis' in s &&
      i > 0 &&
      'plugin' in (all[i - 1] ?? {}) &&
      JSON.stringify(all[i - 1]).includes('zone-b'),
  );
  assert.ok(analysisOfZoneB > 0, 'the rendered steps have an analysis after zone-b’s apply');
  await withProbes(async () => {
    await startRollout(name, '8s', withGates);
    const run = await eventually(
      `${name}: zone-b's analysis running (step ${analysisOfZoneB})`,
      async () => {
        const s = await rolloutState(kube, name);
        if (s.status.currentStepIndex !== analysisOfZoneB) return undefined;
        const runs = await kube.list('argoproj.io/v1alpha1', 'AnalysisRun', ns);
        const running = runs.find(
          (r) =>
            r.metadata.ownerReferences?.some((o) => o.name === name) &&
            (r as { status?: { phase?: string } }).status?.phase === 'Running' &&
            JSON.stringify((r as { spec?: unknown }).spec).includes('zone-b'),
        );
        return running?.metadata.name;
      },
      420_000,
      1000,
    );
    await startRollout(name, '9s', withGates);
    await eventually(
      `${name}: the newest revision Healthy`,
      async () => {
        const s = await rolloutState(kube, name);
        return s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash
          ? true
          : undefined;
      },
      720_000,
      1000,
    );
    const abandoned = (await kube.get({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AnalysisRun',
      namespace: ns,
      name: run,
    })) as {
      status?: { phase?: string };
    };
    report.push(
      `new revision during an analysis: run ${run} ended ${abandoned.status?.phase ?? '?'}; every zone serving ${(await everyZoneServing(name)).toFixed(0)} s after Healthy`,
    );
    assert.notEqual(
      abandoned.status?.phase,
      'Running',
      'the abandoned revision’s analysis must not keep running',
    );
  });
  assert.deepEqual(await offsets(), { 'zone-a': '9s', 'zone-b': '9s', 'zone-c': '9s' });
  await sandbox.kubectl.run(['delete', 'rollout', name, '-n', ns]);
});

test('the template reverted to the stable one during the pause at zone-b: every zone the abandoned revision changed is rolled back', async () => {
  const name = 'reverted';
  const stable = await healthyFirstRevision(name);
  const before = await offsets();
  await withProbes(async () => {
    await startRollout(name, '10s', (spec) => stepsPausingAfterApply(spec, 'zone-b'));
    await pausedAfterApply(name, 4);
    assert.equal((await offsets())['zone-a'], '10s', 'zone-a carries the abandoned change before the revert');
    await sandbox.kubectl.apply([stable]);
    await eventually(
      `${name}: back on the stable revision`,
      async () => {
        const s = await rolloutState(kube, name);
        return s.status.stableRS === s.status.currentPodHash && s.status.phase === 'Healthy'
          ? true
          : undefined;
      },
      controllerTimeoutMs,
    );
    const seconds = await everyZoneServing(name);
    await eventually(
      `${name}: the abandoned changes rolled back`,
      async () => (JSON.stringify(await offsets()) === JSON.stringify(before) ? true : undefined),
      controllerTimeoutMs,
    );
    report.push(`revert to stable: every zone serving ${seconds.toFixed(0)} s after Healthy`);
  });
  for (const z of zones) {
    // Records of earlier tests' (deleted) Rollouts may stay; none of this Rollout's may.
    const record = vmzonesAnnotations(await cluster(kube, z.vmcluster))['vmzones.io/rollback'] ?? '{}';
    assert.notEqual(
      (JSON.parse(record) as { rollout?: string }).rollout,
      `${ns}/${name}`,
      `${z.zone}: the abandoned revision's record is gone`,
    );
  }
  await sandbox.kubectl.run(['delete', 'rollout', name, '-n', ns]);
});

test('the Rollout deleted during the pause at zone-a: the zone it held is finished and released with the change', async () => {
  const name = 'deleted';
  await healthyFirstRevision(name);
  const before = await offsets();
  await withProbes(async () => {
    await startRollout(name, '11s', (spec) => stepsPausingAfterApply(spec, 'zone-a'));
    await pausedAfterApply(name, 1);
    await sandbox.kubectl.run(['delete', 'rollout', name, '-n', ns]);
    report.push(
      `deleted mid-walk: every zone serving ${(await everyZoneServing(name)).toFixed(0)} s after the delete`,
    );
  });
  assert.deepEqual(await offsets(), { ...before, 'zone-a': '11s' });
});
