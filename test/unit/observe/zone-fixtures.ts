// Rollouts and VMClusters as the API server returns them, with vmzones annotations written by the zones layer's
// own helpers (stepLeasePatch, annotationValue), for the observe tests.

import type { KubeObject } from '../../../plugin/kube/objects.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import { vmApiVersion } from '../../../plugin/vm/vmcluster.ts';
import { stepLeasePatch } from '../../../plugin/zones/moves/lease.ts';
import { specAnnotation } from '../../../plugin/zones/spec.ts';
import {
  annotationValue,
  type Handoff,
  handoffAnnotation,
  maintenanceLabel,
  type RollbackRecord,
  rollbackAnnotation,
} from '../../../plugin/zones/state/zone-annotations.ts';
import { resolveTarget } from '../../../plugin/zones/step/target.ts';

export const who = { rollout: 'vm/walk', uid: 'uid-1', revision: 'rev-1' };
export const drainedAt = new Date('2026-12-01T10:00:00Z');

type Object = KubeObject & { apiVersion: string; kind: string };

export function rollout(
  options: { currentStepIndex?: number; steps?: unknown[]; zones?: string[] } = {},
): Object {
  const zones = options.zones ?? ['zone-a', 'zone-b'];
  const spec = [
    'vmauth: {vmuser: vmauth-read}',
    'vmagent: {vmagent: vmagent}',
    'zones:',
    ...zones.map((zone) => `  ${zone}: {vmcluster: vm-${zone}}`),
  ].join('\n');
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'walk', namespace: 'vm', uid: who.uid },
    spec: {
      template: { metadata: { annotations: { [specAnnotation]: spec } } },
      strategy: { canary: { steps: options.steps ?? [] } },
    },
    status: { currentPodHash: who.revision, currentStepIndex: options.currentStepIndex ?? 0 },
  };
}

export function step(zone: string, action: string): unknown {
  return { plugin: { name: 'vmzones/step', config: { zone, action } } };
}

export interface ClusterOptions {
  drained?: boolean;
  applied?: Partial<RollbackRecord>;
  handoff?: Partial<Handoff>;
  operational?: boolean;
  generation?: number;
  observedGeneration?: number;
  annotations?: Record<string, string>;
}

export function vmcluster(zone: string, options: ClusterOptions = {}): Object {
  const annotations: Record<string, string> = { ...options.annotations };
  const labels: Record<string, string> = {};
  if (options.drained) {
    // The lease and maintenance mark exactly as drainReads writes them for this Rollout.
    const target = resolveTarget(rollout() as unknown as RolloutView, { zone, action: 'drainReads' });
    const object = { kind: 'VMCluster', namespace: 'vm', name: `vm-${zone}`, uid: `uid-vm-${zone}` };
    const patch = stepLeasePatch(target, object, drainedAt, `drainReads by Rollout ${who.rollout}`);
    for (const [key, value] of Object.entries(patch.annotations ?? {})) {
      if (typeof value === 'string') annotations[key] = value;
    }
    labels[maintenanceLabel] = 'true';
  }
  const generation = options.generation ?? 1;
  if (options.applied) {
    const record: RollbackRecord = {
      ...who,
      zone,
      phase: 'applied',
      appliedAt: '2026-12-01T10:01:00Z',
      generation,
      changes: [{ path: ['clusterVersion'], before: 'v1', after: 'v2' }],
      ...options.applied,
    };
    annotations[rollbackAnnotation] = annotationValue(record) as string;
  }
  if (options.handoff) {
    const handoff: Handoff = {
      zone,
      holder: who,
      requestedAt: '2026-12-01T10:05:00Z',
      by: `Abort of apply by Rollout ${who.rollout}`,
      rollback: true,
      reads: {
        ref: { kind: 'VMUser', namespace: 'vm', name: 'vmauth-read' },
        zones: [],
        reloadEvidence: 'required',
      },
      drainGracePeriod: '30s',
      ...options.handoff,
    } as Handoff;
    annotations[handoffAnnotation] = annotationValue(handoff) as string;
  }
  return {
    apiVersion: vmApiVersion,
    kind: 'VMCluster',
    metadata: { name: `vm-${zone}`, namespace: 'vm', generation, annotations, labels },
    spec: {},
    status: {
      updateStatus: options.operational === false ? 'expanding' : 'operational',
      observedGeneration: options.observedGeneration ?? generation,
    },
  };
}
