// Fixed objects for the `vmzones status` tests: a Rollout walking zone-a, zone-b, zone-c (zone-d is in the spec
// document but in no step), stopped at zone-b's gate, with the VMClusters, AnalysisRuns and VMUser that go with
// it, as the API server would return them. Times are fixed: `now` is two minutes after zone-b's change.

import { stringify } from 'yaml';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';

export const now = new Date('2026-12-01T10:10:00Z');
const uid = 'uid-walk';

export const specDocument = {
  namespace: 'vm',
  overrideSpec: { retentionPeriod: '2' },
  vmauth: { vmuser: 'vmauth-read' },
  vmagent: { vmagent: 'vmagent' },
  zones: {
    'zone-a': { vmcluster: 'vm-zone-a' },
    'zone-b': { vmcluster: 'vm-zone-b' },
    'zone-c': { vmcluster: 'vm-zone-c' },
    'zone-d': { vmcluster: 'vm-zone-d' },
  },
};

/** zone-a 0..3, zone-b 4..7 (its gate is 6), zone-c 8..11; zone-d is never walked. */
export const steps = renderSteps(parseSpecDocument(stringify(specDocument)), {
  only: ['zone-a', 'zone-b', 'zone-c'],
  pauseBetweenZones: 'none',
});

export interface RolloutFixture {
  currentStepIndex?: number;
  phase?: string;
  currentPodHash?: string;
  stableRS?: string;
  abort?: boolean;
}

export function rollout(options: RolloutFixture = {}): KubeObject & { apiVersion: string; kind: string } {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'walk', namespace: 'vm', uid, generation: 4 },
    spec: {
      template: { metadata: { annotations: { 'vmzones.io/spec': stringify(specDocument) } } },
      strategy: { canary: { steps } },
    },
    status: {
      observedGeneration: '4',
      currentStepIndex: options.currentStepIndex ?? 6,
      currentPodHash: options.currentPodHash ?? 'rev2',
      stableRS: options.stableRS ?? 'rev1',
      phase: options.phase ?? 'Progressing',
      ...(options.abort === undefined ? {} : { abort: options.abort }),
      canary: {
        stepPluginStatuses: [
          {
            index: 0,
            name: 'vmzones/step',
            operation: 'Run',
            phase: 'Successful',
            message: 'zone zone-a: reads drained',
            updatedAt: '2026-12-01T10:01:00Z',
          },
          {
            index: 1,
            name: 'vmzones/step',
            operation: 'Run',
            phase: 'Successful',
            message: 'zone zone-a: applied 1 field(s)',
            updatedAt: '2026-12-01T10:02:00Z',
          },
          {
            index: 3,
            name: 'vmzones/step',
            operation: 'Run',
            phase: 'Successful',
            message: 'zone zone-a: reads restored',
            updatedAt: '2026-12-01T10:05:00Z',
          },
          {
            index: 4,
            name: 'vmzones/step',
            operation: 'Run',
            phase: 'Successful',
            message: 'zone zone-b: reads drained',
            updatedAt: '2026-12-01T10:07:00Z',
          },
          {
            index: 5,
            name: 'vmzones/step',
            operation: 'Run',
            phase: 'Successful',
            message: 'zone zone-b: applied 1 field(s), generation 5',
            updatedAt: '2026-12-01T10:08:00Z',
          },
        ],
      },
    },
  };
}

const identity = (revision: string) => ({ rollout: 'vm/walk', uid, revision });

const rollbackRecord = (zone: string, revision: string, generation: number, appliedAt: string) =>
  JSON.stringify({
    v: 1,
    ...identity(revision),
    zone,
    phase: 'applied',
    appliedAt,
    generation,
    changes: [{ path: ['retentionPeriod'], before: '1', after: '2' }],
  });

export function vmcluster(
  name: string,
  generation: number,
  annotations: Record<string, string> = {},
  updateStatus = 'operational',
  observedGeneration = generation,
): KubeObject & { apiVersion: string; kind: string } {
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMCluster',
    metadata: { name, namespace: 'vm', generation, annotations },
    spec: { retentionPeriod: '2' },
    status: { updateStatus, observedGeneration },
  };
}

/** zone-a: walked (its change by rev2 recorded); zone-b: drained, changed, operational; c, d: untouched. */
export function vmclusters(): (KubeObject & { apiVersion: string; kind: string })[] {
  return [
    vmcluster('vm-zone-a', 3, {
      'vmzones.io/rollback': rollbackRecord('zone-a', 'rev2', 3, '2026-12-01T10:02:00Z'),
    }),
    vmcluster('vm-zone-b', 5, {
      'vmzones.io/lease': JSON.stringify({
        v: 1,
        ...identity('rev2'),
        since: '2026-12-01T10:06:30Z',
        zone: 'zone-b',
      }),
      'vmzones.io/maintenance': JSON.stringify({
        v: 1,
        zone: 'zone-b',
        since: '2026-12-01T10:07:00Z',
        reason: 'Rollout vm/walk (revision rev2) walks zone zone-b',
      }),
      'vmzones.io/rollback': rollbackRecord('zone-b', 'rev2', 5, '2026-12-01T10:08:00Z'),
    }),
    vmcluster('vm-zone-c', 2, {
      'vmzones.io/rollback': rollbackRecord('zone-c', 'rev1', 2, '2026-11-30T09:00:00Z'),
    }),
    vmcluster('vm-zone-d', 1),
  ];
}

export function analysisRun(
  name: string,
  zone: string,
  createdAt: string,
  status: Record<string, unknown>,
  owner = { kind: 'Rollout', name: 'walk', uid },
): KubeObject & { apiVersion: string; kind: string } {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AnalysisRun',
    metadata: {
      name,
      namespace: 'vm',
      creationTimestamp: createdAt,
      ownerReferences: [{ apiVersion: 'argoproj.io/v1alpha1', ...owner }],
    } as KubeObject['metadata'],
    spec: { args: [{ name: 'zone', value: zone }] },
    status,
  };
}

const drainMeasurement = (phase: string, pending: number, good: number, readings: number) => ({
  name: 'vmagent-queue-drained',
  phase,
  measurements: [
    {
      phase,
      message: `${good} of 3 good rounds; ${pending} bytes pending`,
      value: JSON.stringify({
        gate: 'vmagentQueueDrained',
        pendingDataBytes: pending,
        consecutiveGoodRounds: good,
        requiredRounds: 3,
      }),
      metadata: { 'vmzones.io/readings': String(readings) },
    },
  ],
});

export function analysisRuns(): (KubeObject & { apiVersion: string; kind: string })[] {
  return [
    analysisRun('walk-rev2-2', 'zone-a', '2026-12-01T10:03:00Z', {
      phase: 'Successful',
      metricResults: [drainMeasurement('Successful', 0, 3, 5)],
    }),
    // An earlier try for zone-b, and another Rollout's run for zone-b: neither is the newest of this Rollout.
    analysisRun('walk-rev1-6', 'zone-b', '2026-11-30T09:00:00Z', {
      phase: 'Failed',
      metricResults: [drainMeasurement('Failed', 999, 0, 9)],
    }),
    analysisRun(
      'other-rev9-6',
      'zone-b',
      '2026-12-01T10:09:30Z',
      { phase: 'Failed', metricResults: [drainMeasurement('Failed', 777, 0, 1)] },
      { kind: 'Rollout', name: 'other', uid: 'uid-other' },
    ),
    analysisRun('walk-rev2-6', 'zone-b', '2026-12-01T10:08:10Z', {
      phase: 'Running',
      metricResults: [drainMeasurement('Running', 12_800, 1, 4)],
    }),
  ];
}

/** The read balancer with zone-b taken out. */
export function vmuser(
  routed: string[] = ['zone-a', 'zone-c', 'zone-d'],
): KubeObject & { apiVersion: string; kind: string } {
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMUser',
    metadata: { name: 'vmauth-read', namespace: 'vm' },
    spec: {
      targetRefs: [
        {
          crd: {
            kind: 'VMCluster/vmselect',
            name: '',
            namespace: '',
            objects: routed.map((zone) => ({ name: `vm-${zone}`, namespace: 'vm' })),
          },
          paths: ['/select/.*'],
        },
      ],
    },
  };
}
