// Snapshots for the invariant checker (invariants.ts), read from the API server and the data plane only: the
// VMClusters (generation, operator status, the walked field, vmzones' annotations as written), the VMUser's routing
// (test/e2e/step/harness.ts routedZones), the Rollouts, and the read prober's counts. Every call is bounded by the
// Kubernetes client's own timeout (plugin/kube/objects.ts kubeCallTimeoutMs).

import type { KubeObject, KubeObjects } from '../../plugin/kube/objects.ts';
import { vmApiVersion } from '../../plugin/vm/vmcluster.ts';
import { ns, type ReadFigures, routedZones } from '../e2e/step/harness.ts';
import type { RolloutObservation, Snapshot, ZoneObservation } from './invariants.ts';
import { observerSpec, soakZones } from './topology.ts';

const balancerName = 'VMUser vm/vmauth-read';

/** The lease annotation's holder as written; a value that is not the JSON vmzones writes reads as holder ''. */
function leaseHolder(object: KubeObject): ZoneObservation['lease'] {
  const raw = object.metadata.annotations?.['vmzones.io/lease'];
  if (raw === undefined) return undefined;
  try {
    const parsed = JSON.parse(raw) as { rollout?: unknown; uid?: unknown };
    return {
      rollout: typeof parsed.rollout === 'string' ? parsed.rollout : '',
      uid: typeof parsed.uid === 'string' ? parsed.uid : '',
    };
  } catch {
    return { rollout: '', uid: '' };
  }
}

export function zoneObservation(zone: string, object: KubeObject): ZoneObservation {
  const annotations = object.metadata.annotations ?? {};
  const labels = object.metadata.labels ?? {};
  const status = object.status ?? {};
  const spec = object.spec as { vmstorage?: { extraArgs?: Record<string, string> } } | undefined;
  return {
    zone,
    generation: object.metadata.generation ?? 0,
    observedGeneration: typeof status.observedGeneration === 'number' ? status.observedGeneration : undefined,
    updateStatus: typeof status.updateStatus === 'string' ? status.updateStatus : undefined,
    value: spec?.vmstorage?.extraArgs?.['search.latencyOffset'],
    lease: leaseHolder(object),
    maintenance:
      annotations['vmzones.io/maintenance'] !== undefined || labels['vmzones.io/maintenance'] !== undefined,
    handoff: annotations['vmzones.io/handoff'] !== undefined || labels['vmzones.io/pending'] !== undefined,
  };
}

function rolloutObservation(object: KubeObject): RolloutObservation {
  const status = (object.status ?? {}) as {
    phase?: string;
    currentStepIndex?: number;
    currentPodHash?: string;
    abort?: boolean;
  };
  return {
    rollout: `${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`,
    uid: object.metadata.uid ?? '',
    phase: status.phase,
    stepIndex: status.currentStepIndex,
    podHash: status.currentPodHash,
    abort: status.abort === true,
  };
}

export interface ObserverInputs {
  kube: KubeObjects;
  reads: ReadFigures;
  /** Whether an injected vmauth restart overlapped [since, now]. */
  vmauthRestartingSince(since: number): boolean;
  foreignGenerations(): Record<string, number[]>;
}

/** One snapshot; throws when the API server does not answer (the caller counts that, it is no violation). */
export async function takeSnapshot(inputs: ObserverInputs, previousAt: number): Promise<Snapshot> {
  const at = Date.now();
  const clusters = await inputs.kube.list(vmApiVersion, 'VMCluster', ns);
  const zones = soakZones.map((zone) => {
    const object = clusters.find((c) => c.metadata.name === `vm-${zone}`);
    if (object === undefined) throw new Error(`VMCluster vm-${zone} is missing`);
    return zoneObservation(zone, object);
  });
  const routed = await routedZones(inputs.kube, observerSpec);
  const rollouts = (await inputs.kube.list('argoproj.io/v1alpha1', 'Rollout', ns)).map(rolloutObservation);
  return {
    at,
    zones,
    balancers: [{ name: balancerName, routed }],
    rollouts,
    reads: { sent: inputs.reads.sent, failed: inputs.reads.failed, lastFailures: [...inputs.reads.failures] },
    vmauthRestarting: inputs.vmauthRestartingSince(previousAt),
    foreignGenerations: inputs.foreignGenerations(),
  };
}
