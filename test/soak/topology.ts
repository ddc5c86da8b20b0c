// What the soak walks: four zones behind one read balancer (the sandbox's VMUser vmauth-read) and two Rollouts whose
// zones overlap on zone-c, so their leases and the reconciler's handoffs contend there. The spec documents are the
// step harness's (test/e2e/step/harness.ts zoneSpec), with the zone list and a short readyTimeout of the soak's own.

import { latencyOffset, type SpecDocument, zoneSpec } from '../e2e/step/harness.ts';

export const soakZones = ['zone-a', 'zone-b', 'zone-c', 'zone-d'] as const;

/** The Rollouts and the zones each walks, in order. */
export const soakRollouts = {
  'soak-a': ['zone-a', 'zone-b', 'zone-c'],
  'soak-b': ['zone-c', 'zone-d'],
} as const satisfies Record<string, readonly (typeof soakZones)[number][]>;
export type SoakRollout = keyof typeof soakRollouts;
export const soakRolloutNames = Object.keys(soakRollouts) as SoakRollout[];

/**
 * readyTimeout bounds every wait of a step (restoreReads for the operator, drainReads for vmauth's evidence): the
 * longest deadline of a walk. Short here so that a stuck walk ends within the soak's settle bound.
 */
export const readyTimeoutMs = 120_000;

function zonesOf(zones: readonly string[]): Record<string, { vmcluster: string }> {
  return Object.fromEntries(zones.map((z) => [z, { vmcluster: `vm-${z}` }]));
}

/** The spec document of a revision of `rollout` that sets the walked field to `value` (undefined: no change). */
export function soakSpec(rollout: SoakRollout, value: string | undefined): SpecDocument {
  return zoneSpec(value === undefined ? {} : latencyOffset(value), {
    zones: zonesOf(soakRollouts[rollout]),
    readyTimeout: `${readyTimeoutMs / 1000}s`,
  });
}

/** The observer's document: every zone, to read the VMUser's routing of all four (harness.ts routedZones). */
export const observerSpec: SpecDocument = zoneSpec({}, { zones: zonesOf(soakZones) });
