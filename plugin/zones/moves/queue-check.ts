// "Is the zone complete again?" after a rollback: operational is not enough — its vmagent queues must have
// delivered what piled up while it was down (the evidence of the vmagentQueueDrained gate), or reads would come
// back to a zone that is missing data. The check itself lives in the gates layer, above this one; main.ts hands
// it in (plugin/gates/zone-queue-check.ts). One call is one reading; `state` carries the rounds between readings
// and is kept in the handoff annotation, so a plugin restart loses nothing.

import type { ClusterRegistration } from '../../kube/cluster-registry.ts';
import type { KubeObjects } from '../../kube/objects.ts';
import type { ZoneKindName } from '../../vm/zone-kinds.ts';

export interface ZoneQueueRequest {
  namespace: string;
  /** The zone's object, of `kind` (VMCluster when absent). */
  vmcluster: string;
  kind?: ZoneKindName;
  /** The VMAgents that write to the zone (the spec document's vmagent / vmagents). */
  vmagents: string[];
  /** The zone's vminsertHosts (a zone in another cluster): how those VMAgents' URLs name it. */
  vminsertHosts?: string[];
}

export interface ZoneQueueReading {
  /** pass: drained; fail: data was lost (never drains); wait: not yet. */
  verdict: 'pass' | 'fail' | 'wait';
  message: string;
  state?: unknown;
  /** When the check would look again (the gate's poll: sooner while the zone is not ready or a send retries). */
  nextReadingInMs?: number;
  /** While every latest round is good but fewer than the rule needs: how soon the rounds still missing are due. */
  evidenceDueInMs?: number;
}

/** Where the check reads: the zone's VMCluster in its cluster, the VMAgents (and their pods) in theirs. */
export interface ZoneQueueClients {
  zone: KubeObjects;
  vmagents: KubeObjects;
  /** The VMAgents' registered cluster (undefined = the controller's own): its pod access says whether their pods
   *  are scraped at their IPs or through that cluster's API server (docs/multicluster.md). */
  vmagentsCluster: ClusterRegistration | undefined;
}

export type ZoneQueueCheck = (
  clients: ZoneQueueClients,
  request: ZoneQueueRequest,
  previous: unknown,
  now: number,
) => Promise<ZoneQueueReading>;
