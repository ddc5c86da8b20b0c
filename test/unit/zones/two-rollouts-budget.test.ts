// A soak finding (issue 25, docs/reliability.md "Randomized soak"): two Rollouts whose zones overlap walk at the
// same time behind one VMUser. soak-b's drainReads took zone-c out, then soak-a's drainReads took zone-a out as well,
// because drainReads checked the disruption budget without "one zone at a time" (only the reconciler's rollbacks
// did). The budget is one zone out of reads per balancer, across Rollouts: the second drain waits, naming the zone
// that holds it. Deterministic, on the in-memory API and the fake clock.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { readBackends } from '../../../plugin/zones/step/target.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  rolloutObject,
  specDocument,
  stepPluginOf,
  threeZones,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

/** The test spec document narrowed to `zones` (soak-b walks only the zones it names). */
function specOf(zones: string[]): string {
  const doc = JSON.parse(specDocument()) as { zones: Record<string, unknown> };
  doc.zones = Object.fromEntries(Object.entries(doc.zones).filter(([z]) => zones.includes(z)));
  return JSON.stringify(doc);
}

function routed(kube: MemoryKube): string[] {
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
  // Each Rollout's drainReads, called again while Running as the controller would (stepPluginOf).
  const drain = (rollout: string, zone: string) =>
    stepPluginOf(kube, clock, { rollout }).run(zone, 'drainReads');

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
