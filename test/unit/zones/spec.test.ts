import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zoneKinds } from '../../../plugin/vm/zone-kinds.ts';
import {
  drainGracePeriodOf,
  parseSpecDocument,
  resolveZone,
  SpecError,
  specFromAnnotations,
  vmauthSources,
  zoneWriters,
} from '../../../plugin/zones/spec.ts';

const valid = `
overrideSpec:                 # merged into every zone's VMCluster spec
  clusterVersion: v1.118.0-cluster
vmauth: {vmuser: vmauth-read}
vmagent: {vmagent: vmagent}
zones:
  zone-a: {vmcluster: vm-zone-a}
  zone-b: {vmcluster: vm-zone-b, overrideSpec: {vmstorage: {replicaCount: 4}, clusterVersion: null}}
`;

function problemsOf(text: string): readonly string[] {
  try {
    parseSpecDocument(text);
  } catch (err) {
    assert.ok(err instanceof SpecError, `expected SpecError, got ${err}`);
    return err.problems;
  }
  assert.fail('expected the document to be rejected');
}

test('a valid document parses with defaults filled in', () => {
  const spec = parseSpecDocument(valid);
  assert.equal(spec.version, 'v1');
  assert.equal(spec.readyTimeout, '15m');
  assert.equal(vmauthSources(spec)[0]?.drainGracePeriod, '30s');
  assert.deepEqual(Object.keys(spec.zones), ['zone-a', 'zone-b']);
});

test('a zone resolves to the global overrideSpec with its own merged over it, nulls kept', () => {
  const spec = parseSpecDocument(valid);
  assert.deepEqual(resolveZone(spec, 'zone-a', 'monitoring'), {
    name: 'zone-a',
    namespace: 'monitoring',
    kind: zoneKinds.vmcluster,
    vmcluster: 'vm-zone-a',
    patch: { clusterVersion: 'v1.118.0-cluster' },
  });
  assert.deepEqual(resolveZone(spec, 'zone-b', 'monitoring').patch, {
    clusterVersion: null,
    vmstorage: { replicaCount: 4 },
  });
});

test('an unknown zone names the known ones', () => {
  const spec = parseSpecDocument(valid);
  assert.throws(
    () => resolveZone(spec, 'zone-x', 'ns'),
    /zone "zone-x" is not in zones \(known: zone-a, zone-b\)/,
  );
});

test('every problem is reported with its field path', () => {
  const problems = problemsOf(`
overideSpec: {}
readyTimeout: 5 minutes
vmauth: {vmuser: Bad_Name, secret: {name: s, key: k}}
vmagent: {}
zones:
  Zone_A: {vmcluster: a}
  zone-b: {vmcluster: b, overrideSpec: [1]}
`);
  const text = problems.join('\n');
  assert.match(text, /\(document\): Unrecognized key: "overideSpec"/);
  assert.match(text, /readyTimeout: invalid duration "5 minutes"/);
  assert.match(text, /vmauth\.vmuser: must be a Kubernetes object name/);
  assert.match(text, /vmauth: exactly one of vmuser, secret, configMap must be set \(found vmuser, secret\)/);
  assert.match(text, /vmagent: exactly one of vmagent \(one name\) or vmagents \(a list\) must be set/);
  assert.match(text, /zones\.Zone_A: zone names must be DNS labels/);
  assert.match(text, /zones\.zone-b\.overrideSpec: must be a mapping/);
});

test('YAML syntax errors and duplicate keys are rejected with a line number', () => {
  assert.match(problemsOf('zones: {a: 1\n').join(), /YAML .* at line \d+/);
  assert.match(problemsOf('zones: {}\nzones: {}\n').join(), /YAML DUPLICATE_KEY at line 2/);
});

test('missing pieces are named', () => {
  const text = problemsOf('zones: {}\n').join('\n');
  assert.match(text, /vmauth: .*expected object/i);
  assert.match(text, /zones: at least one zone is required/);
});

test('vmauth may be a list of balancers; each keeps its own fields, problems name their index', () => {
  const writers =
    'vmagent: {vmagent: m}\nzones: {zone-a: {vmcluster: a}, zone-b: {vmcluster: b, cluster: eu-b}}\n';
  const spec = parseSpecDocument(
    `vmauth:\n- {vmuser: reads, drainGracePeriod: 10s}\n- {cluster: eu-b, vmuser: reads, drainGracePeriod: 1m}\n${writers}`,
  );
  assert.deepEqual(
    vmauthSources(spec).map((s) => [s.cluster, s.vmuser, s.drainGracePeriod]),
    [
      [undefined, 'reads', '10s'],
      ['eu-b', 'reads', '1m'],
    ],
  );
  assert.equal(drainGracePeriodOf(spec), '1m', 'queries in flight in the slowest balancer');
  assert.equal(drainGracePeriodOf(parseSpecDocument(valid)), '30s');
  assert.deepEqual(
    problemsOf(`vmauth:\n- {vmuser: reads}\n- {vmuser: other, drainGracePeriod: soon}\n${writers}`),
    [
      'vmauth.[1].drainGracePeriod: invalid duration "soon": expected a number followed by a unit (ns, us, ms, s, m, h)',
    ],
  );
  assert.deepEqual(problemsOf(`vmauth:\n- {vmuser: reads}\n- {vmuser: reads}\n${writers}`), [
    'vmauth.[1]: names the same balancer as vmauth[0]',
  ]);
  assert.deepEqual(problemsOf(`vmauth: []\n${writers}`), [
    'vmauth: Too small: expected array to have >=1 items',
  ]);
  // The same VMUser name in another cluster is another balancer.
  assert.equal(
    vmauthSources(parseSpecDocument(`vmauth: [{vmuser: r}, {vmuser: r, cluster: eu-b}]\n${writers}`)).length,
    2,
  );
});

test("each zone kind's writers must be named, and writers no zone needs are refused", () => {
  const vmauth = 'vmauth: {vmuser: u}\n';
  assert.deepEqual(problemsOf(`${vmauth}zones: {zone-a: {vmcluster: a}, zone-b: {vmsingle: b}}\n`), [
    'vmagent: required: the VMAgents that write to zone-a, zone-b (VMCluster and VMSingle zones are written by VMAgents)',
  ]);
  assert.deepEqual(problemsOf(`${vmauth}vmagent: {vmagent: m}\nzones: {zone-a: {vlcluster: a}}\n`), [
    'vmagent: no zone is written by VMAgents: vmagent names the writers of VMCluster and VMSingle zones',
    'vlagent: required: the VLAgents that write to zone-a (VLCluster zones are written by VLAgents)',
  ]);
  assert.match(
    problemsOf(`${vmauth}vlagent: {vlagent: l, vlagents: [l]}\nzones: {zone-a: {vlcluster: a}}\n`).join(),
    /vlagent: exactly one of vlagent \(one name\) or vlagents \(a list\) must be set/,
  );
  const logs = parseSpecDocument(
    `${vmauth}vlagent: {vlagents: [l1, l2], cluster: eu}\nzones: {zone-a: {vlcluster: a}}\n`,
  );
  const writers = zoneWriters(logs, resolveZone(logs, 'zone-a', 'vm').kind);
  assert.deepEqual([writers.writer.kind, writers.names, writers.cluster], ['VLAgent', ['l1', 'l2'], 'eu']);
});

test('the annotation must be present', () => {
  assert.throws(() => specFromAnnotations({}), { code: 'SpecInvalid', message: /vmzones\.io\/spec/ });
  assert.equal(specFromAnnotations({ 'vmzones.io/spec': valid }).vmagent?.vmagent, 'vmagent');
});

test('zones, vmauth and vmagent may name a registered cluster; a bad name is refused at its path', () => {
  const doc = parseSpecDocument(`
vmauth: {vmuser: read, cluster: hub-eu}
vmagent: {vmagent: agent, cluster: hub-eu}
zones:
  zone-a: {vmcluster: vm}
  zone-b: {cluster: eu-west-1b, vmcluster: vm}
  zone-c: {cluster: eu-west-1c, vmsingle: single}
`);
  assert.equal(doc.zones['zone-b']?.cluster, 'eu-west-1b');
  const single = resolveZone(doc, 'zone-c', 'vm');
  assert.deepEqual(
    [single.cluster, single.kind.kind, single.vmcluster],
    ['eu-west-1c', 'VMSingle', 'single'],
  );
  assert.equal(vmauthSources(doc)[0]?.cluster, 'hub-eu');
  assert.equal(doc.vmagent?.cluster, 'hub-eu');
  assert.equal(resolveZone(doc, 'zone-b', 'vm').cluster, 'eu-west-1b');
  assert.equal('cluster' in resolveZone(doc, 'zone-a', 'vm'), false, 'absent: the controller cluster');
  assert.throws(
    () =>
      parseSpecDocument(
        'vmauth: {vmuser: r}\nvmagent: {vmagent: a}\nzones: {z: {cluster: "no spaces", vmcluster: vm}}',
      ),
    /zones\.z\.cluster: must be the name of a registered cluster/,
  );
});

test('a zone is a VMCluster, a VMSingle or a VLCluster, named by its field', () => {
  const spec = parseSpecDocument(`
vmauth: {vmuser: vmauth-read}
vmagent: {vmagent: vmagent}
vlagent: {vlagent: vlagent}
zones:
  zone-a: {vmcluster: vm-a}
  zone-b: {vmsingle: vm-b}
  zone-c: {vlcluster: logs-c}
`);
  const resolved = ['zone-a', 'zone-b', 'zone-c'].map((z) => resolveZone(spec, z, 'vm'));
  assert.deepEqual(
    resolved.map((r) => [r.kind.kind, r.kind.apiVersion, r.vmcluster]),
    [
      ['VMCluster', 'operator.victoriametrics.com/v1beta1', 'vm-a'],
      ['VMSingle', 'operator.victoriametrics.com/v1beta1', 'vm-b'],
      ['VLCluster', 'operator.victoriametrics.com/v1', 'logs-c'],
    ],
  );
});

test('a zone with two kinds, none, or an unknown kind is refused naming the zone', () => {
  const head = 'vmauth: {vmuser: u}\nvmagent: {vmagent: a}\nzones:\n';
  assert.deepEqual(problemsOf(`${head}  zone-a: {vmcluster: a, vmsingle: b}\n`), [
    'zones.zone-a: exactly one of vmcluster, vmsingle, vlcluster must be set (found vmcluster, vmsingle)',
  ]);
  assert.deepEqual(problemsOf(`${head}  zone-a: {overrideSpec: {}}\n`), [
    'zones.zone-a: exactly one of vmcluster, vmsingle, vlcluster must be set (found none)',
  ]);
  const unknown = problemsOf(`${head}  zone-a: {vtcluster: t}\n`).join('\n');
  assert.match(unknown, /zones\.zone-a: Unrecognized key: "vtcluster"/);
});

test('vminsertHosts names the hosts of a zone in another cluster; a URL or an empty list is refused', () => {
  const spec = parseSpecDocument(
    `${valid}  zone-c: {cluster: eu-c, vmcluster: vm-zone-c, vminsertHosts: [127.0.0.3, vminsert.eu-c.example]}\n`,
  );
  assert.deepEqual(spec.zones['zone-c']?.vminsertHosts, ['127.0.0.3', 'vminsert.eu-c.example']);
  const problems = problemsOf(
    `${valid}  zone-c: {vmcluster: vm-zone-c, vminsertHosts: ["http://vminsert.example:8480"]}\n  zone-d: {vmcluster: d, vminsertHosts: []}\n`,
  );
  assert.ok(
    problems.some((p) => p.startsWith('zones.zone-c.vminsertHosts.[0]: must be a host name')),
    problems.join('; '),
  );
  assert.ok(
    problems.some((p) => p.startsWith('zones.zone-d.vminsertHosts')),
    problems.join('; '),
  );
});

test('a spec document names at most 16 read balancers, the limit named in the error', () => {
  const balancers = (n: number) =>
    `vmauth:\n${Array.from({ length: n }, (_, i) => `  - {vmuser: vmauth-${i}}`).join('\n')}\nvmagent: {vmagent: vmagent}\nzones:\n  zone-a: {vmcluster: vm-zone-a}\n  zone-b: {vmcluster: vm-zone-b}\n`;
  assert.equal(vmauthSources(parseSpecDocument(balancers(16))).length, 16);
  assert.match(problemsOf(balancers(17)).join('\n'), /at most 16 read balancers/);
});
