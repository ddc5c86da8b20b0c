// Reliability under faults (issue 8, docs/reliability.md): the real Argo Rollouts controller walks a three-zone
// change while the plugin's Kubernetes requests go through the fault proxy, reads run through vmauth and the
// load generator writes through vmagent. Each scenario gets its own sandbox (a stuck zone must not spoil the
// next scenario), records a row of the table and then asserts the required zeros, so a scenario the zone
// logic does not survive yet fails here, with its row still in the table.
// Run `npm run build` first. Wall time ≈ 30 min on 2 cores (printed at the end; bounds in docs/reliability.md).

import assert from 'node:assert/strict';
import type { FaultConfig } from '../../sandbox/fault-proxy.ts';
import {
  eventually,
  pluginStatuses,
  rolloutObject,
  rolloutState,
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
  scenarioFilter,
  settledLeftovers,
  waitOrDescribe,
  walk,
  withSandbox,
  zoneValues,
} from './scenario.ts';
import {
  controllerRequests,
  faultControl,
  faultSummary,
  killStepPlugin,
  latencyOffset,
  leftovers,
  ns,
  zones,
} from './support.ts';

const { record } = reliabilityTable();

/** 10% of the plugin's requests, any fault kind, half of them after the API server applied the request. */
const tenPercent: FaultConfig = {
  seed: 8,
  hangMs: 20_000,
  rules: [
    {
      faults: ['status500', 'status503', 'status429', 'status409', 'hang', 'reset'],
      rate: 0.1,
      when: 'either',
    },
  ],
};

// npm test runs the abort and the kill points; the whole walk under faults (about 5-12 min more) runs with
// `npm run test:reliability`.
const scenario = scenarioFilter('reliability.test.ts', ['walk', 'abort', 'kill'], ['abort', 'kill']);

scenario('walk', 'API faults at 10% of the plugin’s requests for a whole three-zone walk', async () => {
  const row = await withSandbox(async (scene) => {
    await firstRevision(scene);
    const control = faultControl(scene.sandbox);
    await control.reset();
    const probes = await measure(scene);
    await control.set(tenPercent);
    let outcome = await walk(scene, 20 * 60_000);
    await control.clear();
    const stats = await control.stats();
    const left = await settledLeftovers(scene.kube);
    if (left.length > 0) outcome += `; left behind: ${left.join('; ')}`;
    const m = await probes.finish();
    const state = await rolloutState(scene.kube, name);
    assert.equal(controllerRequests(stats), 0, 'the controller’s own client must not use the proxy');
    assert.ok(stats.requestsTotal > 0, 'the plugin’s requests go through the proxy');
    const measured = measuredRow(m, stats, state);
    return record({
      scenario: '10% API faults, whole walk',
      faults: faultSummary(stats),
      outcome,
      ...measured,
      notes: [
        `faults by request: ${JSON.stringify(stats.faults)}`,
        `requests: ${JSON.stringify(stats.requests)}; user agents ${JSON.stringify(stats.userAgents)}`,
        ...measured.notes,
      ],
    });
  });
  assertZeros(row, 'completed');
});

scenario(
  'abort',
  'API faults at 10% of the plugin’s requests for a whole abort (after zone two)',
  async () => {
    const row = await withSandbox(async (scene) => {
      const initial = await firstRevision(scene);
      const control = faultControl(scene.sandbox);
      const spec = zoneSpec(latencyOffset('8s'));
      const steps = stepsFor(spec, 'none');
      // Zone-a's steps 0..2, zone-b's 3..5, a manual pause (6), zone-c's 7..9.
      await scene.sandbox.kubectl.apply([
        rolloutObject(name, spec, [...steps.slice(0, 6), { pause: {} }, ...steps.slice(6)]),
      ]);
      await eventually(
        'the pause after zone-b',
        async () => {
          const s = await rolloutState(scene.kube, name);
          return s.status.phase === 'Paused' && s.status.currentStepIndex === 6 ? s : undefined;
        },
        300_000,
        1000,
      );
      await control.reset();
      const probes = await measure(scene);
      await control.set(tenPercent);
      await scene.sandbox.rollouts(['abort', name, '-n', ns]);
      const timeout = await waitOrDescribe(
        'zones a and b rolled back, released and routed',
        async () => {
          const values = await zoneValues(scene);
          if (zones.some((_, i) => values[i] !== initial[i])) return false;
          return (await leftovers(scene.kube)).length === 0;
        },
        8 * 60_000,
      );
      await control.clear();
      const stats = await control.stats();
      const state = await rolloutState(scene.kube, name);
      const aborts = pluginStatuses(state).filter((s) => s.operation === 'Abort');
      let outcome = 'rolled back';
      if (timeout !== undefined) {
        const values = await zoneValues(scene);
        const left = await leftovers(scene.kube);
        outcome = `not rolled back in 8 min: spec ${zones.map((z, i) => `${z.zone}=${String(values[i] ?? 'unset')}`).join(' ')}${left.length > 0 ? `; left behind: ${left.join('; ')}` : ''}`;
      }
      const m = await probes.finish();
      assert.equal(controllerRequests(stats), 0, 'the controller’s own client must not use the proxy');
      const measured = measuredRow(m, stats, state);
      return record({
        scenario: '10% API faults, whole abort',
        faults: faultSummary(stats),
        outcome,
        ...measured,
        notes: [
          `faults by request: ${JSON.stringify(stats.faults)}`,
          `abort statuses: ${aborts.length} (${aborts.map((a) => `#${a.index} ${a.phase}`).join(', ')})`,
          ...measured.notes,
        ],
      });
    });
    assertZeros(row, 'rolled back');
  },
);

scenario(
  'kill',
  'SIGKILL of the step plugin process at every step boundary of a three-zone walk',
  async () => {
    const row = await withSandbox(async (scene) => {
      await firstRevision(scene);
      const control = faultControl(scene.sandbox);
      await control.reset();
      const probes = await measure(scene);
      // Kill point i = the first time the controller is seen on step i (9: after the last step, before Healthy).
      // A point one walk misses (the step passed within one poll, or the plugin was not restarted yet) is tried
      // in the next walk (a new revision), up to three walks; each point is killed once.
      const points = [...Array(stepsFor(zoneSpec({}), 'none').length + 1).keys()];
      const killed = new Map<number, number>();
      const outcomes: string[] = [];
      for (let w = 0; w < 3 && killed.size < points.length; w++) {
        const before = await rolloutState(scene.kube, name);
        const seen = new Set<number>();
        const outcome = await walk(
          scene,
          12 * 60_000,
          (s) => {
            if (s.status.currentPodHash === before.status.currentPodHash || s.status.phase === 'Healthy')
              return;
            const at = s.status.currentStepIndex ?? 0;
            if (seen.has(at)) return;
            seen.add(at);
            if (killed.has(at)) return;
            if (killStepPlugin(scene.sandbox).length > 0) killed.set(at, w + 1);
          },
          `${6 + w}s`,
        );
        outcomes.push(outcome);
        if (outcome !== 'completed') break;
      }
      const stats = await control.stats();
      let outcome = outcomes.every((o) => o === 'completed') ? 'completed' : outcomes.join('; ');
      const left = await settledLeftovers(scene.kube);
      if (left.length > 0) outcome += `; left behind: ${left.join('; ')}`;
      const m = await probes.finish();
      const state = await rolloutState(scene.kube, name);
      const uncovered = points.filter((p) => !killed.has(p));
      const measured = measuredRow(m, stats, state);
      return record({
        scenario: 'SIGKILL of the plugin at each step boundary',
        faults: `${killed.size} SIGKILLs at ${killed.size} of ${points.length} kill points, ${outcomes.length} walks`,
        outcome,
        ...measured,
        notes: [
          `killed before step (walk): ${[...killed.entries()].map(([p, w]) => `${p} (${w})`).join(', ')}`,
          ...(uncovered.length > 0
            ? [`kill points not hit in ${outcomes.length} walks: ${uncovered.join(', ')}`]
            : []),
          ...measured.notes,
        ],
      });
    });
    assertZeros(row, 'completed');
  },
);
