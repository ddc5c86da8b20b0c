// Issue 21 item 6: secret values stay out of messages. An apply that changes a license key, an extraArgs auth flag
// and a long value shows their paths but not their values in the step message, the step status and the Events;
// Abort's message and `vmzones diff` do the same; the rollback annotation still holds the real values (it is on
// the VMCluster itself, readable by whoever can read the spec, and the rollback needs them).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { diffZones, formatZoneDiffs } from '../../../plugin/cli/diff.ts';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { clusterClients } from '../../../plugin/kube/cluster-registry.ts';
import { toKubeError } from '../../../plugin/kube/objects.ts';
import type { RolloutView, StepResult } from '../../../plugin/rollouts/types.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { FakeClock } from '../fake-clock.ts';
import { ns, rolloutObject, specDocument, threeZones, useVmauthFixture } from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

const licenseKey = 'LICENSE-VALUE-0f3a9c';
const authKey = 'AUTHKEY-VALUE-77b1e2';
const bearer = 'BEARER-VALUE-5d20aa';
const longValue = `prefix-${'y'.repeat(120)}`;
const overrides = {
  clusterVersion: 'v1.152.0-cluster',
  license: { key: licenseKey },
  vmselect: {
    extraArgs: { metricsAuthKey: authKey, 'search.maxQueryDuration': '5m', 'remoteRead.bearerToken': bearer },
  },
  vmstorage: { extraArgs: { 'storage.someLongFlag': longValue } },
};
const secrets = [licenseKey, 'OLD-LICENSE-VALUE', authKey, bearer, longValue.slice(0, 40)];

function assertNoSecret(text: string, where: string): void {
  for (const secret of secrets) assert.ok(!text.includes(secret), `${where} shows ${secret}: ${text}`);
}

function setup() {
  const kube = threeZones(vmauth.port);
  // The fields exist already, so that apply changes leaves (license.key, extraArgs.<flag>), not whole objects.
  for (const zone of ['zone-a', 'zone-b', 'zone-c']) {
    const cluster = kube.getStored('VMCluster', `vm-${zone}`);
    kube.put({
      ...cluster,
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMCluster',
      spec: {
        ...cluster.spec,
        license: { key: 'OLD-LICENSE-VALUE' },
        vmselect: { extraArgs: {} },
        vmstorage: { replicaCount: 1, extraArgs: {} },
      },
    });
  }
  kube.put(
    rolloutObject(
      'walk',
      { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 },
      specDocument(overrides),
    ),
  );
  const plugin = createZoneStepPlugin({
    clock,
    kube,
    reconciler: false,
    logger: silentLogger,
    inCallWaitMs: 1_000,
  });
  const step = (zone: string, action: string, operation: 'run' | 'abort' = 'run'): Promise<StepResult> =>
    plugin[operation](kube.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as RolloutView, {
      pluginName: 'vmzones/step',
      config: { zone, action },
      status: undefined,
    });
  return { kube, step };
}

test('apply names every changed field but shows no value in its message, status and Events', async () => {
  const { kube, step } = setup();
  let drained = await step('zone-a', 'drainReads');
  for (let i = 0; i < 5 && drained.phase === 'Running'; i++) drained = await step('zone-a', 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  const applied = await step('zone-a', 'apply');
  assert.equal(applied.phase, 'Successful', applied.message);

  const message = applied.message ?? '';
  assertNoSecret(message, 'the step message');
  // Field names only, never values, not even harmless-looking ones (issue 35 item 10: a secret under a neutral key
  // is not recognisable by its name).
  assert.match(message, /spec\.clusterVersion/);
  assert.ok(!message.includes('v1.152.0-cluster'), message);
  assert.match(message, /spec\.license\.key/);
  assert.match(message, /spec\.vmselect\.extraArgs\.metricsAuthKey/);

  const status = JSON.stringify(applied.status);
  assertNoSecret(status, 'the step status');
  const changed = (applied.status as { changed: Record<string, string> }).changed;
  assert.equal(changed['spec.license.key'], 'changed');
  assert.equal(changed['spec.vmstorage.extraArgs.storage.someLongFlag'], 'set');
  assert.equal(changed['spec.clusterVersion'], 'changed');
  assert.ok(!status.includes('5m'), status);

  const events = kube.created.filter((o) => o.kind === 'Event' && o.reason === 'ZoneChanged');
  assert.equal(events.length, 2);
  for (const event of events) {
    assertNoSecret(JSON.stringify(event), 'a ZoneChanged Event');
    assert.match(String(event.note), /spec\.license\.key/);
  }

  // The rollback record keeps what it needs to undo the change, on the object that holds the values anyway.
  const record = zoneState(kube.getStored('VMCluster', 'vm-zone-a')).rollback;
  const licenseChange = record?.changes.find((c) => c.path.join('.') === 'license.key');
  assert.deepEqual([licenseChange?.before, licenseChange?.after], ['OLD-LICENSE-VALUE', licenseKey]);

  const aborted = await step('zone-a', 'apply', 'abort');
  assert.equal(aborted.phase, 'Successful', aborted.message);
  assertNoSecret(`${aborted.message} ${JSON.stringify(aborted.status)}`, 'the Abort message');
});

test('a value set as a whole, and a URL in a value, are named by their field only', async () => {
  const { kube, step } = setup();
  const spec = specDocument({
    license: { key: licenseKey, note: 'x' },
    vminsert: { extraArgs: { 'httpAuth.password': 'PW-VALUE-1' } },
    vmselect: { extraArgs: { 'remoteRead.url': 'http://user:URLPASS@host/' } },
  });
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }, spec));
  let drained = await step('zone-a', 'drainReads');
  for (let i = 0; i < 5 && drained.phase === 'Running'; i++) drained = await step('zone-a', 'drainReads');
  const applied = await step('zone-a', 'apply');
  assert.equal(applied.phase, 'Successful', applied.message);
  const shown = `${applied.message} ${JSON.stringify(applied.status)}`;
  assert.ok(!shown.includes('PW-VALUE-1'), shown);
  assert.ok(!shown.includes('URLPASS'), shown);
  assert.ok(!shown.includes(licenseKey), shown);
  assert.match(shown, /spec\.vminsert\b/);
  assert.match(shown, /spec\.vmselect\.extraArgs\.remoteRead\.url/);
  assert.ok(!shown.includes('host/'), shown);
});

test('vmzones diff shows the paths of secret-looking and long fields, never their values', async () => {
  const hub = threeZones(1);
  const spec = parseSpecDocument(specDocument(overrides));
  const clusters = clusterClients({ hub, namespace: 'argo-rollouts', connect: () => hub });
  const diffs = await diffZones({ spec, namespace: ns, kube: hub, clusters });
  const text = formatZoneDiffs(diffs);
  assertNoSecret(text, 'vmzones diff');
  // The live VMClusters have no license, vmselect or vmstorage.extraArgs: those are added as a whole.
  assert.match(text, /\+ spec\.license: \*\*\*\n/);
  assert.match(
    text,
    /\+ spec\.vmselect: \{"extraArgs":\{"metricsAuthKey":"\*\*\*","search\.maxQueryDuration":"5m",/,
  );
  assert.match(text, /\+ spec\.vmstorage\.extraArgs: \{"storage\.someLongFlag":"\(127 chars\)"\}/);
  assert.match(text, /~ spec\.clusterVersion: "v1\.151\.0-cluster" → "v1\.152\.0-cluster"/);
});

test('an API server refusal that quotes a secret-looking or long value shows the field, not the value', () => {
  const message = (text: string) =>
    toKubeError(
      new ApiException(
        422,
        'Unprocessable Entity',
        JSON.stringify({ kind: 'Status', message: text, code: 422 }),
        {},
      ),
      'patching VMCluster vm/vm-zone-a (dry run)',
    ).message;
  const refusedLicense = message(
    `VMCluster.operator.victoriametrics.com "vm-zone-a" is invalid: spec.license.key: Invalid value: "${licenseKey}": spec.license.key in body should match '^[a-z]+$'`,
  );
  assert.ok(!refusedLicense.includes(licenseKey), refusedLicense);
  assert.match(
    refusedLicense,
    /spec\.license\.key: Invalid value: \*\*\*: spec\.license\.key in body should match/,
  );
  const refusedFlag = message(
    `is invalid: spec.vmselect.extraArgs.metricsAuthKey: Invalid value: "${authKey}": too short, spec.vmstorage.extraArgs.storage.someLongFlag: Invalid value: "${longValue}": too long`,
  );
  assertNoSecret(refusedFlag, 'the refusal');
  assert.match(refusedFlag, /metricsAuthKey: Invalid value: \*\*\*: too short/);
  assert.ok(
    refusedFlag.includes(`someLongFlag: Invalid value: (${longValue.length} chars): too long`),
    refusedFlag,
  );
  // A harmless value stays, so that the message still says what was wrong.
  assert.match(
    message('is invalid: spec.clusterVersion: Invalid value: "v1.x": not a version'),
    /spec\.clusterVersion: Invalid value: "v1\.x": not a version/,
  );
});
