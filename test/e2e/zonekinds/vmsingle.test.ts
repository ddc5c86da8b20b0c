// VMSingle zones (docs/zone-kinds.md) on the sandbox: the real operator v0.74.1 reconciles three VMSingles (a
// Recreate Deployment each), the data plane runs one real victoria-metrics process per VMSingle, vmagent writes to
// each VMSingle's Service URL and vmauth routes reads through a VMUser targetRef of kind VMSingle. The real Argo
// Rollouts controller walks a change through them with the project's gates (analysis-templates/), then an abort
// rolls two zones back (kind-walk.ts). Run `npm run build` first. One sandbox for the file; the tests run in order.

import { samplesLost } from '../../bench/rollout-sandbox.ts';
import { kindWalkTests } from './kind-walk.ts';

kindWalkTests({
  kind: 'VMSingle',
  data: 'samples',
  // A VMSingle serves the Prometheus API under /prometheus (the sandbox VMUser routes /prometheus/.* to it).
  readPath: '/prometheus/api/v1/query',
  zoneField: 'vmsingle',
  writer: { vmagent: { vmagent: 'vmagent' } },
  // A flag, so the operator rewrites the VMSingle's Deployment and the Pod is replaced.
  change: (value) => ({ extraArgs: { 'search.latencyOffset': value } }),
  specValue: (zone) =>
    (zone.spec as { extraArgs?: Record<string, string> }).extraArgs?.['search.latencyOffset'],
  values: ['6s', '8s'],
  lost: async (sandbox, fromSeq, toSeq) => ({
    lost: await samplesLost(
      sandbox,
      ['zone-a', 'zone-b', 'zone-c'].map((zone) => ({
        zone,
        vmcluster: `vm-${zone}`,
        kind: 'VMSingle' as const,
      })),
      fromSeq,
      toSeq,
    ),
  }),
  // One sample a second (the sandbox's load generator, --interval-ms=1000).
  writtenPerSecond: 1,
  writerPod: 'vmagent-vmagent-',
  inFlight: 3,
});
