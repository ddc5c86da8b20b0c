// REPRODUCTION of a soak violation (issue 25), not part of `npm test`: it FAILS on today's code.
//
// Invariant `over-budget` (test/soak/invariants.ts): never more zones out of reads of one balancer than the budget,
// today one per route. Two Rollouts whose zones overlap (the soak's soak-a walks zone-a, b, c; soak-b zone-c, d)
// walk at the same time behind one VMUser: soak-b's drainReads takes zone-c out, then soak-a's drainReads takes
// zone-a out as well, so the VMUser routes reads to fewer zones than the budget allows. drainReads checks the
// disruption budget with `oneAtATime = false` (plugin/zones/drain-reads.ts → read-layer.ts layerDrainBlocker →
// read-safety.ts drainBlocker): only that every other serving zone is healthy, not that no other zone is out.
// Only the reconciler's rollbacks pass `oneAtATime = true` (plugin/zones/finish-zone.ts).
//
// Deterministic, on the in-memory API of the unit tests (no sandbox, no sleeps):
//   node --test --test-reporter=spec test/soak/regressions/two-rollouts-over-budget.test.ts
// Expected once fixed: soak-a's drainReads of zone-a waits (Running, "one zone at a time") while zone-c is out.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { readBackends } from '../../../plugin/zones/target.ts';
import {
  type MemoryCluster,
  ns,
  rolloutObject,
  specDocument,
  threeZones,
  useVmauthFixture,
} from '../../unit/zones/memory-cluster.ts';

const vmauth = useVmauthFixture();

/** The test spec document narrowed to `zones` (soak-b walks only the zones it names). */
function specOf(zones: string[]): string {
  const doc = JSON.parse(specDocument()) as { zones: Record<string, unknown> };
  doc.zones = Object.fromEntries(Object.entries(doc.zones).filter(([z]) => zones.includes(z)));
  return JSON.stringify(doc);
}

function routed(kube: MemoryCluster): string[] {
  const backends = readBackends(parseSpecDocument(specDocument()), ns);
  return zonesRoutedByVMUser(kube.getStored('VMUser', 'vmauth-read').spec?.targetRefs, ns, backends);
}

test('two Rollouts behind one VMUser: the second drainReads waits while another zone is out of reads', async () => {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('soak-a', { currentPodHash: 'a2', stableRS: 'a1', currentStepIndex: 0 }));
  kube.put(
    rolloutObject(
      'soak-b',
      { currentPodHash: 'b2', stableRS: 'b1', currentStepIndex: 0 },
      specOf(['zone-b', 'zone-c']),
    ),
  );
  const plugin = createZoneStepPlugin({ kube, reconciler: false, logger: silentLogger, inCallWaitMs: 1_000 });
  const drain = async (rollout: string, zone: string) => {
    const view = kube.getStored('Rollout', rollout, 'argoproj.io/v1alpha1') as unknown as RolloutView;
    let result = await plugin.run(view, {
      pluginName: 'vmzones/step',
      config: { zone, action: 'drainReads' },
      status: undefined,
    });
    for (
      let i = 0;
      i < 5 && result.phase === 'Running' && !/one zone at a time/.test(result.message ?? '');
      i++
    ) {
      result = await plugin.run(view, {
        pluginName: 'vmzones/step',
        config: { zone, action: 'drainReads' },
        status: undefined,
      });
    }
    return result;
  };

  const first = await drain('soak-b', 'zone-c');
  assert.equal(first.phase, 'Successful', first.message);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b']);

  const second = await drain('soak-a', 'zone-a');
  assert.deepEqual(
    routed(kube),
    ['zone-a', 'zone-b'],
    `zone-a must stay in reads while zone-c is out (budget: one zone per route); drainReads said ${second.phase}: ${second.message}`,
  );
  assert.equal(second.phase, 'Running', second.message);
});
