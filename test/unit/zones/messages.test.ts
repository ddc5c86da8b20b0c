import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zoneKinds, zoneObjectRef } from '../../../plugin/vm/zone-kinds.ts';
import { describeCluster } from '../../../plugin/zones/state/messages.ts';

test("step messages name a zone's object by its own kind", () => {
  assert.equal(describeCluster(zoneObjectRef(zoneKinds.vmcluster, 'vm', 'vm-a')), 'VMCluster vm/vm-a');
  assert.equal(describeCluster(zoneObjectRef(zoneKinds.vmsingle, 'vm', 'vm-b')), 'VMSingle vm/vm-b');
  assert.equal(describeCluster(zoneObjectRef(zoneKinds.vlcluster, 'vm', 'logs-c')), 'VLCluster vm/logs-c');
});
