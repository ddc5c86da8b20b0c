import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { redactText } from '../../../plugin/kube/redact.ts';
import {
  defaultVmselectHosts,
  type ReadBalancerConfig,
  ReadRoutingError,
} from '../../../plugin/vm/read-backends.ts';
import {
  drainedSecretKey,
  drainRecordFor,
  drainZone,
  readRouting,
  reloadBaselineAnnotation,
  restoreZone,
} from '../../../plugin/vm/read-routing.ts';
import { FakeClock } from '../fake-clock.ts';
import { MemoryKube, readyPod, secret } from '../kube/memory-kube.ts';

const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

async function vmauthPod(stamp: number): Promise<number> {
  const page = [
    'vmauth_config_last_reload_successful 1',
    `vmauth_config_last_reload_success_timestamp_seconds ${stamp}`,
    'process_start_time_seconds 1000',
  ].join('\n');
  const server = createServer((_request, response) => response.end(`${page}\n`));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

// Credentials in every place the vmauth config format allows them.
const configWithSecrets = `users:
  - username: alice
    password: s3cret-password
    url_prefix:
      - http://admin:s3cret-userinfo@vmselect-vm-zone-a.vm.svc:8481/select/0/prometheus
      - http://vmselect-vm-zone-b.vm.svc:8481/select/0/prometheus?authKey=s3cret-authkey
    headers:
      - "Authorization: Bearer s3cret-header"
  - bearer_token: s3cret-bearer
    url_prefix: ["http://vmselect-vm-zone-a.vm.svc:8481/?token=s3cret-token", "http://vmselect-vm-zone-b.vm.svc:8481/"]
  - auth_token: s3cret-auth-token
    url_map:
      - src_paths: ["/api/.*"]
        url_prefix:
          - "https://u:s3cret-map@vmselect-vm-zone-a.vm.svc/?access_token=s3cret-access"
          - https://vmselect-vm-zone-b.vm.svc/
`;

const zones = ['zone-a', 'zone-b'].map((zone) => ({
  zone,
  namespace: 'vm',
  vmcluster: `vm-${zone}`,
  hosts: defaultVmselectHosts(`vm-${zone}`, 'vm'),
}));

async function setup(): Promise<{ kube: MemoryKube; config: ReadBalancerConfig }> {
  const kube = new MemoryKube().put(secret('vm', 'vmauth-config', { 'auth.yml': configWithSecrets }));
  kube.put(readyPod('vm', 'vmauth-0', { app: 'vmauth' }, { http: await vmauthPod(1000) }));
  const config: ReadBalancerConfig = {
    ref: { kind: 'Secret', namespace: 'vm', name: 'vmauth-config', key: 'auth.yml' },
    pods: [{ namespace: 'vm', labelSelector: 'app=vmauth', port: 'http' }],
    zones,
    reloadEvidence: 'required',
  };
  return { kube, config };
}

function stored(kube: MemoryKube) {
  const object = [...kube.objects.values()].find((o) => o.kind === 'Secret');
  assert.ok(object);
  const data = object.data as Record<string, string>;
  return {
    annotations: object.metadata.annotations ?? {},
    config: Buffer.from(data['auth.yml'] ?? '', 'base64').toString('utf8'),
    record: data[drainedSecretKey],
  };
}

test('redactText leaves no credential of a vmauth config, in any place the format allows', () => {
  const shown = redactText(configWithSecrets);
  assert.doesNotMatch(shown, /s3cret/, shown);
  assert.match(shown, /http:\/\/\*\*\*@vmselect-vm-zone-a\.vm\.svc:8481\/select\/0\/prometheus/);
  assert.match(shown, /\?authKey=\*\*\*/);
  assert.match(shown, /"Authorization: \*\*\*"/);
  assert.match(shown, /vmselect-vm-zone-b\.vm\.svc:8481\/select\/0\/prometheus/, 'hosts stay readable');
});

test('a drained Secret keeps its drain record (config lines with credentials) in its data, never in an annotation', async () => {
  const { kube, config } = await setup();
  assert.equal(await drainZone(kube, config, 'zone-a', 'rollout demo/app', new FakeClock()), true);
  const after = stored(kube);
  assert.doesNotMatch(JSON.stringify(after.annotations), /s3cret/);
  assert.doesNotMatch(after.config, /zone-a/);
  assert.ok(after.record !== undefined, 'the record is in the Secret data');
  const routing = await readRouting(kube, config);
  assert.deepEqual(routing.routed, ['zone-b']);
  assert.equal(drainRecordFor(routing, config, 'zone-a')?.removed.length, 3);
  assert.deepEqual(routing.baseline?.pods, { 'vm/vmauth-0': { stamp: 1000, start: 1000 } });
  assert.equal(routing.baseline?.at, routing.changedAt?.toISOString());

  assert.equal(await restoreZone(kube, config, 'zone-a', new FakeClock()), true);
  const restored = stored(kube);
  assert.equal(restored.config, configWithSecrets, 'put back byte for byte');
  assert.equal(restored.record, undefined);
  const baseline = JSON.parse(restored.annotations[reloadBaselineAnnotation] ?? '{}');
  assert.deepEqual(
    baseline.unchanged,
    { 'vm/vmauth-0': { stamp: 1000, start: 1000 } },
    'the content is back to what was served before the drain: an unchanged stamp is evidence (A→B→A)',
  );
});

test('refusals name the URL without its credentials', async () => {
  const kube = new MemoryKube();
  const config: ReadBalancerConfig = {
    ref: { kind: 'Secret', namespace: 'vm', name: 'vmauth-config', key: 'auth.yml' },
    pods: [{ namespace: 'vm', labelSelector: 'app=vmauth', port: 'http' }],
    zones: [...zones, { ...(zones[1] as (typeof zones)[number]), zone: 'zone-c', hosts: ['elsewhere'] }],
    reloadEvidence: 'required',
  };
  kube.put(
    secret('vm', 'vmauth-config', {
      'auth.yml':
        'users:\n  - username: a\n    url_prefix: http://admin:s3cret@vmselect-vm-zone-a.vm.svc:8481/?authKey=s3cret2\n  - username: b\n    url_prefix: [http://vmselect-vm-zone-b.vm.svc:8481/]\n',
    }),
  );
  await assert.rejects(
    drainZone(kube, config, 'zone-a', 'me', new FakeClock()),
    (error: unknown) =>
      error instanceof ReadRoutingError &&
      !error.message.includes('s3cret') &&
      error.message.includes('http://***@vmselect-vm-zone-a.vm.svc:8481/?authKey=***'),
  );
});
