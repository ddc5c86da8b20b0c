// When taking a zone out of reads is safe, and when the reads it stopped serving have settled: shared by drainReads
// and the reconciler's rollbacks, so both drain by the same rules and wait for the same evidence.

import type { ClusterClients } from '../kube/cluster-registry.ts';
import type { ReadBalancerConfig } from './read-backends.ts';
import type { ReadEvidence } from './read-evidence.ts';
import type { ReadRouting } from './read-routing.ts';
import { vmclusterReadiness } from './vmcluster.ts';
import { zoneKindOrDefault, zoneObjectRef } from './zone-kinds.ts';

/**
 * Why `zone` must not leave the balancer now, or undefined. A zone disruption budget: no other zone may be out of
 * reads already — whoever took it out, a step of any Rollout or the reconciler's rollback (two Rollouts whose zones
 * share a vmauth must not take two zones away at once: found by the soak, docs/reliability.md) — and every other
 * zone that serves reads must be operational (draining beside a broken zone would leave only broken ones serving).
 * The last serving zone is refused by drainZone itself.
 */
export async function drainBlocker(
  clusters: Pick<ClusterClients, 'client'>,
  reads: ReadBalancerConfig,
  routing: ReadRouting,
  zone: string,
): Promise<string | undefined> {
  const out = Object.keys(routing.drained).filter((z) => z !== zone);
  if (out.length > 0) {
    return `zone ${out.join(', ')} is already out of reads through ${routing.describe}; one zone at a time`;
  }
  for (const backend of reads.zones) {
    if (backend.zone === zone || !routing.routed.includes(backend.zone)) continue;
    // Each zone's object is read in its own cluster (the names may repeat across clusters).
    const kube = await clusters.client(backend.cluster);
    const readiness = vmclusterReadiness(
      await kube.get(zoneObjectRef(zoneKindOrDefault(backend.kind), backend.namespace, backend.vmcluster)),
    );
    if (readiness.state !== 'ready') {
      return `zone ${backend.zone} serves reads through ${routing.describe} but is not healthy (${readiness.message}); draining zone ${zone} now would leave reads to it`;
    }
  }
  return undefined;
}

/** From when vmauth serves the routing without the zone (the reload, or the write when no later reload is known),
 *  and when the grace period for queries in flight ends. */
export function graceWindow(
  evidence: ReadEvidence,
  since: Date,
  graceMs: number,
): { servedSince: Date; graceUntil: Date } {
  const servedSince =
    evidence.reloadedAt !== undefined && evidence.reloadedAt > since ? evidence.reloadedAt : since;
  return { servedSince, graceUntil: new Date(servedSince.getTime() + graceMs) };
}
