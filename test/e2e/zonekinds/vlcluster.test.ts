// VictoriaLogs zones (docs/zone-kinds.md) on the sandbox: the real operator v0.74.1 reconciles three VLClusters
// (vlinsert/vlselect Deployments, a vlstorage StatefulSet each) and a VLAgent; the data plane runs one real
// victoria-logs process per VLCluster and a real vlagent writing to each zone's vlinsert Service, fed numbered log
// lines by the load generator; vmauth routes LogsQL reads through a VMUser targetRef of kind VLCluster/vlselect. The
// real Argo Rollouts controller walks a vlstorage flag change through them with the project's gates
// (analysis-templates/; the queue drain reads vlagent's queues), then an abort rolls two zones back (kind-walk.ts).
// Run `npm run build` first. One sandbox for the file; the tests run in order.

import assert from 'node:assert/strict';
import { logLinesLost } from '../../bench/rollout-sandbox.ts';
import { vlagentName } from '../../sandbox/manifests.ts';
import { kindWalkTests } from './kind-walk.ts';

const flag = 'search.maxQueryDuration';

kindWalkTests({
  kind: 'VLCluster',
  data: 'log lines',
  // The last lines through vmauth (the sandbox VMUser routes /select/.* to each zone's vlselect).
  readPath: '/select/logsql/query?query=_time:5m&limit=1',
  zoneField: 'vlcluster',
  writer: { vlagent: { vlagent: vlagentName } },
  // A vlstorage flag: the operator rewrites the vlstorage StatefulSet, its Pod is replaced, the zone restarts.
  change: (value) => ({ vlstorage: { extraArgs: { [flag]: value } } }),
  specValue: (zone) =>
    (zone.spec as { vlstorage?: { extraArgs?: Record<string, string> } }).vlstorage?.extraArgs?.[flag],
  values: ['40s', '50s'],
  lost: async (sandbox, fromSeq, toSeq) => {
    const zones = ['zone-a', 'zone-b', 'zone-c'].map((zone) => ({ zone, vmcluster: `vm-${zone}` }));
    const { lost, duplicates } = await logLinesLost(sandbox, zones, fromSeq + 1, toSeq);
    return { lost, note: `stored twice per zone ${JSON.stringify(duplicates)}` };
  },
  // 50 lines a second.
  writtenPerSecond: 50,
  // Up to three seconds of lines may still be in vlagent's buffers (flushed every second).
  writerPod: 'vlagent-vlagent-0',
  inFlight: 150,
  checkZone: (sandbox, z) =>
    assert.ok(
      sandbox.endpoint('VLCluster', z.vmcluster).args.includes(`-${flag}=40s`),
      `${z.zone}'s victoria-logs restarted with the flag`,
    ),
});
