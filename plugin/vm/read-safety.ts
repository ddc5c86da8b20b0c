// When taking a zone out of reads is safe, and when the reads it stopped serving have settled: shared by drainReads
// and the reconciler's rollbacks, so both drain by the same rules and wait for the same evidence.

import type { ClusterClients } from '../kube/cluster-registry.ts';
import type { KubeObjects } from '../kube/objects.ts';
import type { ReadBalancerConfig } from './read-backends.ts';
import type { ReadEvidence } from './read-evidence.ts';
import { type DisruptionBudget, drainKeyOf, type ReadRouting } from './read-routing.ts';
import { vmclusterReadiness } from './vmcluster.ts';
import { zoneKindOrDefault, zoneObjectRef } from './zone-kinds.ts';

/** maxZonesOut: at most this many zones out of reads at once through one balancer, whoever took them out;
 *  minZonesServing: at least this many zones serving reads through each balancer. */
export type { DisruptionBudget };

/**
 * Where the budget reads the other zones' objects: `zoneObjects` when given — the step process's watched copies
 * (plugin/kube/watched-objects.ts: a moment behind the API server, and the API server itself where no watch
 * follows it), so that a drain does not GET every other zone (n − 1 gets per drain, about n² per walk:
 * docs/scale.md) — else each zone's cluster client. The balancer's routing the budget counts is the drain's own
 * read, and its write is guarded by that read's resourceVersion: that stays the check another walk's drain meets.
 */
export interface BudgetReads extends Pick<ClusterClients, 'client'> {
  zoneObjects?(cluster: string | undefined): Promise<Pick<KubeObjects, 'get'>>;
}

/** One zone out per balancer and never the last serving zone: the budget of a walk without waves, and the
 *  reconciler's for its rollbacks (it has no spec document to read another from). */
export const defaultDisruptionBudget: DisruptionBudget = { maxZonesOut: 1, minZonesServing: 1 };

function zoneCount(n: number): string {
  return `${n} zone${n === 1 ? '' : 's'}`;
}

/**
 * Why `zone` must not leave the balancer now, or undefined. The zone disruption budget, on the balancer's real
 * routing: at most `maxZonesOut` zones out of reads at once — whoever took them out, a step of any Rollout or the
 * reconciler's rollback (two Rollouts whose zones share a vmauth must not together take more away: found by the
 * soak, docs/reliability.md) — and at least `minZonesServing` zones left serving. Every other zone that serves
 * reads must be operational (draining beside a broken zone would leave only broken ones serving). The last
 * serving zone is refused by drainZone itself. The message names the zones that hold the budget.
 *
 * A wave is admitted whole: `wave` is every zone of the step's wave (`[zone]` for a step of one zone and for the
 * reconciler's rollbacks), and each of its zones is checked as if the whole wave left together. So a wave that
 * does not fit drains none of its zones, and one whose first zone was admitted is not refused for the next by its
 * own zones: two Rollouts can never each hold part of a wave and wait on each other (docs/step-plugin.md "Waves
 * and the zone disruption budget").
 */
export async function drainBlocker(
  clusters: BudgetReads,
  reads: ReadBalancerConfig,
  routing: ReadRouting,
  zone: string,
  budget: DisruptionBudget = defaultDisruptionBudget,
  wave: readonly string[] = [zone],
): Promise<string | undefined> {
  const inWave = (z: string) => z === zone || wave.includes(z);
  // Records are keyed by the zone's object (read-routing.ts): the wave's own are those of the objects it names.
  const waveKeys = new Set(wave.concat(zone).flatMap((z) => drainKeyOf(reads, z) ?? []));
  // The zones of the wave this balancer routes or has taken out (a zone it never routed does not leave it).
  const waveHere = wave.filter(
    (z) =>
      z === zone || routing.routed.includes(z) || routing.drained[drainKeyOf(reads, z) ?? ''] !== undefined,
  );
  const needed = Math.max(1, waveHere.length);
  const whole = wave.length > 1;
  const what = whole ? `the wave ${wave.join(', ')}` : `zone ${zone}`;
  const outRecords = Object.entries(routing.drained).filter(([key]) => !waveKeys.has(key));
  const out = outRecords.map(([, record]) => record);
  const holders = out.map((r) => `${r.zone ?? r.vmcluster} (${r.by})`).join(', ');
  // The budget belongs to the balancer: the strictest of this drain's and of every drain out through it (a record
  // without one was made under the default), so a Rollout with a wider budget cannot take more zones out of a
  // balancer another Rollout shares than that one allows.
  const effective = strictestBudget(
    budget,
    out.map((r) => r.budget ?? defaultDisruptionBudget),
  );
  const stricter =
    effective.maxZonesOut < budget.maxZonesOut || effective.minZonesServing > budget.minZonesServing
      ? ` (the strictest budget of the walks with a zone out through it)`
      : '';
  if (out.length + needed > effective.maxZonesOut) {
    const allows = `the disruption budget${stricter} allows ${zoneCount(effective.maxZonesOut)} out at once`;
    if (out.length === 0)
      return `${what} needs ${zoneCount(needed)} out of reads through ${routing.describe}; ${allows}`;
    return `zone ${holders} ${out.length === 1 ? 'is' : 'are'} already out of reads through ${routing.describe}; ${allows}${whole ? ` and ${what} needs ${needed}` : ''}`;
  }
  const servingAfter = routing.routed.filter((z) => !inWave(z)).length;
  if (servingAfter < effective.minZonesServing) {
    return `draining ${what} would leave ${zoneCount(servingAfter)} serving reads through ${routing.describe}; the disruption budget${stricter} keeps at least ${zoneCount(effective.minZonesServing)} serving${out.length === 0 ? '' : `, so it waits for zone ${holders}`}`;
  }
  for (const backend of reads.zones) {
    if (inWave(backend.zone) || !routing.routed.includes(backend.zone)) continue;
    // Each zone's object is read in its own cluster (the names may repeat across clusters).
    const kube =
      clusters.zoneObjects === undefined
        ? await clusters.client(backend.cluster)
        : await clusters.zoneObjects(backend.cluster);
    const readiness = vmclusterReadiness(
      await kube.get(zoneObjectRef(zoneKindOrDefault(backend.kind), backend.namespace, backend.vmcluster)),
    );
    if (readiness.state !== 'ready') {
      return `zone ${backend.zone} serves reads through ${routing.describe} but is not healthy (${readiness.message}); draining ${what} now would leave reads to it`;
    }
  }
  return undefined;
}

/** The strictest of budgets: the fewest zones out, the most serving. */
export function strictestBudget(
  own: DisruptionBudget,
  others: readonly DisruptionBudget[],
): DisruptionBudget {
  return {
    maxZonesOut: Math.min(own.maxZonesOut, ...others.map((b) => b.maxZonesOut)),
    minZonesServing: Math.max(own.minZonesServing, ...others.map((b) => b.minZonesServing)),
  };
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
