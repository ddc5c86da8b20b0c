// Raw vmauth config edits: a zone's URLs leave and come back byte for byte, comments and layout untouched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReadRoutingError, type ZoneReadBackend } from '../../../plugin/vm/read-backends.ts';
import {
  removeZoneFromConfig,
  restoreZoneToConfig,
  zonesRoutedByConfig,
} from '../../../plugin/vm/vmauth-config.ts';

const zone = (name: string): ZoneReadBackend => ({
  zone: name,
  namespace: 'vm',
  vmcluster: `vm-${name}`,
  hosts: [`vmselect-vm-${name}.vm.svc`, `vmselect-vm-${name}.vm.svc.cluster.local`],
});
const zones = ['zone-a', 'zone-b', 'zone-c'].map(zone);
const where = 'Secret vm/vmauth key auth.yml';

const helmConfig = `# Rendered by the victoria-metrics-auth chart; edited by hand since.
users:
  # Grafana reads from every zone
  - username: "grafana"
    password: 'secret'   # rotated monthly
    url_map:
    - src_paths: ["/select/.*"]
      url_prefix:
      # zone a is the primary
      - http://vmselect-vm-zone-a.vm.svc:8481/   # primary
      - "http://vmselect-vm-zone-b.vm.svc.cluster.local:8481/"
      - http://vmselect-vm-zone-c.vm.svc:8481/
      load_balancing_policy: first_available
    - src_paths: ["/insert/.*"]
      url_prefix: http://vminsert-vm-zone-a.vm.svc:8480/
unauthorized_user:
  url_prefix: [http://vmselect-vm-zone-a.vm.svc:8481/, "http://vmselect-vm-zone-b.vm.svc:8481/" ,http://vmselect-vm-zone-c.vm.svc:8481/]
`;

test('routed zones are found in block and flow lists, by host', () => {
  assert.deepEqual(zonesRoutedByConfig(helmConfig, zones, where), ['zone-a', 'zone-b', 'zone-c']);
  const onlyB = helmConfig.replaceAll('zone-a', 'zone-x').replaceAll('zone-c', 'zone-y');
  assert.deepEqual(zonesRoutedByConfig(onlyB, zones, where), ['zone-b']);
});

test('draining removes exactly the zone URLs, keeping every comment and the layout', () => {
  const { text, removed } = removeZoneFromConfig(helmConfig, zone('zone-a'), where);
  assert.equal(removed.length, 2);
  assert.equal(
    text,
    helmConfig
      .replace('      - http://vmselect-vm-zone-a.vm.svc:8481/   # primary\n', '')
      .replace('[http://vmselect-vm-zone-a.vm.svc:8481/, "http', '["http'),
  );
  for (const comment of [
    '# Rendered by',
    '# Grafana reads',
    '# rotated monthly',
    '# zone a is the primary',
  ]) {
    assert.ok(text.includes(comment), `keeps ${comment}`);
  }
  assert.deepEqual(zonesRoutedByConfig(text, zones, where), ['zone-b', 'zone-c']);
  assert.ok(text.includes('vminsert-vm-zone-a'), 'write routes are not read routes');
});

test('restoring gives back the original text byte for byte, for each zone and in any order', () => {
  for (const name of ['zone-a', 'zone-b', 'zone-c']) {
    const { text, removed } = removeZoneFromConfig(helmConfig, zone(name), where);
    assert.notEqual(text, helmConfig);
    assert.equal(restoreZoneToConfig(text, removed, where), helmConfig, name);
  }
  const a = removeZoneFromConfig(helmConfig, zone('zone-a'), where);
  const b = removeZoneFromConfig(a.text, zone('zone-b'), where);
  const lifo = restoreZoneToConfig(restoreZoneToConfig(b.text, b.removed, where), a.removed, where);
  assert.equal(lifo, helmConfig, 'a and b out, b then a back');
  const fifo = restoreZoneToConfig(restoreZoneToConfig(b.text, a.removed, where), b.removed, where);
  assert.equal(
    fifo,
    helmConfig,
    'a and b out, a then b back: each goes back before the URL that followed it',
  );
});

test('restoring twice adds nothing twice', () => {
  const { text, removed } = removeZoneFromConfig(helmConfig, zone('zone-c'), where);
  const once = restoreZoneToConfig(text, removed, where);
  assert.equal(restoreZoneToConfig(once, removed, where), helmConfig);
});

test('a config that ends without a newline keeps that', () => {
  const source =
    'users:\n- username: u\n  url_prefix:\n  - http://vmselect-vm-zone-a.vm.svc:8481/\n  - http://vmselect-vm-zone-b.vm.svc:8481/';
  const { text, removed } = removeZoneFromConfig(source, zone('zone-b'), where);
  assert.equal(text, 'users:\n- username: u\n  url_prefix:\n  - http://vmselect-vm-zone-a.vm.svc:8481/\n');
  assert.equal(restoreZoneToConfig(text, removed, where), source);
});

test('a single-URL url_prefix of the zone, or a list left empty, is refused and nothing changes', () => {
  const single = 'users:\n- username: u\n  url_prefix: http://vmselect-vm-zone-a.vm.svc:8481/\n';
  assert.throws(
    () => removeZoneFromConfig(single, zone('zone-a'), where),
    (err: unknown) =>
      err instanceof ReadRoutingError && /users\[0\]\.url_prefix is the single URL/.test(err.message),
  );
  const lonely = 'users:\n- username: u\n  url_prefix:\n  - http://vmselect-vm-zone-a.vm.svc:8481/\n';
  assert.throws(
    () => removeZoneFromConfig(lonely, zone('zone-a'), where),
    /would leave users\[0\]\.url_prefix without any URL/,
  );
});

test('invalid YAML is a ReadRoutingError naming the object', () => {
  assert.throws(
    () => zonesRoutedByConfig('users: [', zones, where),
    (err: unknown) => err instanceof ReadRoutingError && err.message.startsWith(`${where} is not valid YAML`),
  );
});
