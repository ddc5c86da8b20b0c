// vmzones diff with zones in registered clusters (docs/multicluster.md): each zone is dry-run in its own cluster,
// nothing is stored anywhere, and a zone whose cluster is unknown is said for that zone while the others are still
// diffed. (The dry run against a real API server: test/e2e/cli/diff.test.ts.)

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diffExitCode, diffZones, formatZoneDiffs } from '../../../plugin/cli/diff.ts';
import { clusterClients } from '../../../plugin/kube/cluster-registry.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { MemoryKube } from '../kube/memory-kube.ts';
import { clusterSecret, ns, threeZones } from '../zones/memory-cluster.ts';

const vmApi = 'operator.victoriametrics.com/v1beta1';

test('each zone is dry-run in its own cluster; an unregistered cluster is named for its zone', async () => {
  const hub = threeZones(1);
  const remote = new MemoryKube({ operator: true });
  const zoneB = hub.getStored('VMCluster', 'vm-zone-b');
  hub.objects.delete(`${vmApi}|VMCluster|${ns}|vm-zone-b`);
  remote.put({ ...zoneB, apiVersion: vmApi, kind: 'VMCluster' });
  hub.put(clusterSecret('eu-b', 'https://eu-b.example:6443', { bearerToken: 'do-not-show' }));
  const spec = parseSpecDocument(
    JSON.stringify({
      overrideSpec: { clusterVersion: 'v1.152.0-cluster' },
      vmauth: { vmuser: 'vmauth-read' },
      vmagent: { vmagent: 'vmagent' },
      zones: {
        'zone-a': { vmcluster: 'vm-zone-a' },
        'zone-b': { vmcluster: 'vm-zone-b', cluster: 'eu-b' },
        'zone-c': { vmcluster: 'vm-zone-c', cluster: 'eu-c' },
      },
    }),
  );
  const clusters = clusterClients({ hub, namespace: 'argo-rollouts', connect: () => remote });
  const diffs = await diffZones({ spec, namespace: ns, kube: hub, clusters });

  assert.deepEqual(
    diffs.map((d) => [d.zone, d.cluster, d.outcome]),
    [
      ['zone-a', undefined, 'ok'],
      ['zone-b', 'eu-b', 'ok'],
      ['zone-c', 'eu-c', 'unreachable'],
    ],
  );
  const text = formatZoneDiffs(diffs);
  assert.match(text, /zone zone-b: VMCluster vm\/vm-zone-b in cluster eu-b: 1 field\(s\) change/);
  assert.match(text, /~ spec\.clusterVersion: "v1\.151\.0-cluster" → "v1\.152\.0-cluster"/);
  assert.match(text, /zone zone-c: VMCluster vm\/vm-zone-c in cluster eu-c: UNREACHABLE: .*eu-c/);
  assert.doesNotMatch(text, /do-not-show/);
  assert.equal(diffExitCode(diffs), 1, 'a zone that cannot be diffed fails the check');
  assert.deepEqual(
    remote.patches.map((p) => [p.ref, p.dryRun]),
    [['VMCluster vm/vm-zone-b', true]],
    "zone-b's dry run went to its cluster",
  );
  assert.deepEqual(
    hub.patches.map((p) => [p.ref, p.dryRun]),
    [['VMCluster vm/vm-zone-a', true]],
    'only zone-a in the hub',
  );
  assert.equal(
    remote.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion,
    'v1.151.0-cluster',
    'nothing stored',
  );
});
