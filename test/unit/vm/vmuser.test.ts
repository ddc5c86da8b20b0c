// A VMUser's targetRefs as read routes: a zone leaves and comes back exactly as it was.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReadRoutingError, type ZoneReadBackend } from '../../../plugin/vm/read-backends.ts';
import {
  removeZoneFromTargetRefs,
  restoreZoneToTargetRefs,
  vmuserTakenUp,
  zonesRoutedByVMUser,
} from '../../../plugin/vm/vmuser.ts';

const zone = (name: string): ZoneReadBackend => ({
  zone: name,
  namespace: 'vm',
  vmcluster: `vm-${name}`,
  hosts: [`vmselect-vm-${name}.vm.svc`],
});
const zones = ['zone-a', 'zone-b', 'zone-c'].map(zone);

const objectsForm = [
  {
    crd: {
      kind: 'VMCluster/vmselect',
      name: '',
      namespace: '',
      objects: [
        { name: 'vm-zone-a', namespace: 'vm' },
        { name: 'vm-zone-b', namespace: 'vm' },
        { name: 'vm-zone-c', namespace: 'vm' },
      ],
    },
    paths: ['/select/.*'],
  },
  { crd: { kind: 'VMCluster/vminsert', name: 'vm-zone-a', namespace: 'vm' }, paths: ['/insert/.*'] },
];

const perZoneForm = [
  { crd: { kind: 'VMCluster/vmselect', name: 'vm-zone-a', namespace: 'vm' }, paths: ['/select/.*'] },
  { crd: { kind: 'VMCluster/vmselect', name: 'vm-zone-b', namespace: '' }, paths: ['/select/.*'] },
  {
    static: { urls: ['http://vmselect-vm-zone-c.vm.svc:8481/', 'http://other:8481/'] },
    paths: ['/select/.*'],
  },
];

test('zones are found through crd.objects, crd name/namespace (empty namespace = the VMUser) and static URLs', () => {
  assert.deepEqual(zonesRoutedByVMUser(objectsForm, 'vm', zones), ['zone-a', 'zone-b', 'zone-c']);
  assert.deepEqual(zonesRoutedByVMUser(perZoneForm, 'vm', zones), ['zone-a', 'zone-b', 'zone-c']);
  assert.deepEqual(zonesRoutedByVMUser(perZoneForm, 'other', zones), ['zone-a', 'zone-c']);
  assert.deepEqual(zonesRoutedByVMUser(undefined, 'vm', zones), []);
});

test('a vminsert reference is not a read route', () => {
  const onlyInsert = [objectsForm[1]];
  assert.deepEqual(zonesRoutedByVMUser(onlyInsert, 'vm', zones), []);
  const { removed } = removeZoneFromTargetRefs(onlyInsert, 'vm', zone('zone-a'));
  assert.deepEqual(removed, []);
});

test('removing a zone from crd.objects keeps the others, and restoring puts it back at its place', () => {
  for (const name of ['zone-a', 'zone-b', 'zone-c']) {
    const { targetRefs, removed } = removeZoneFromTargetRefs(objectsForm, 'vm', zone(name));
    assert.deepEqual(
      zonesRoutedByVMUser(targetRefs, 'vm', zones),
      zones.map((z) => z.zone).filter((z) => z !== name),
    );
    assert.equal(removed.length, 1);
    assert.equal(removed[0]?.op, 'object');
    assert.deepEqual(restoreZoneToTargetRefs(targetRefs, removed), objectsForm, name);
  }
});

test('a targetRef left without backends goes as a whole and comes back at its index', () => {
  const { targetRefs, removed } = removeZoneFromTargetRefs(perZoneForm, 'vm', zone('zone-b'));
  assert.equal(targetRefs.length, 2);
  assert.deepEqual(removed, [{ op: 'targetRef', index: 1, targetRef: perZoneForm[1] }]);
  assert.deepEqual(restoreZoneToTargetRefs(targetRefs, removed), perZoneForm);
});

test('a static URL of the zone leaves its list; the others stay', () => {
  const { targetRefs, removed } = removeZoneFromTargetRefs(perZoneForm, 'vm', zone('zone-c'));
  assert.deepEqual((targetRefs[2] as { static: { urls: string[] } }).static.urls, ['http://other:8481/']);
  assert.deepEqual(restoreZoneToTargetRefs(targetRefs, removed), perZoneForm);
});

test('a name reference next to objects is blanked (the CRD requires the fields) and restored', () => {
  const mixed = [
    {
      crd: {
        kind: 'VMCluster/vmselect',
        name: 'vm-zone-a',
        namespace: 'vm',
        objects: [{ name: 'vm-zone-b' }],
      },
    },
  ];
  const { targetRefs, removed } = removeZoneFromTargetRefs(mixed, 'vm', zone('zone-a'));
  assert.deepEqual(targetRefs, [
    { crd: { kind: 'VMCluster/vmselect', name: '', namespace: '', objects: [{ name: 'vm-zone-b' }] } },
  ]);
  assert.deepEqual(restoreZoneToTargetRefs(targetRefs, removed), mixed);
});

test('two zones out, back in either order, give the original list', () => {
  const a = removeZoneFromTargetRefs(objectsForm, 'vm', zone('zone-a'));
  const b = removeZoneFromTargetRefs(a.targetRefs, 'vm', zone('zone-b'));
  const aFirst = restoreZoneToTargetRefs(restoreZoneToTargetRefs(b.targetRefs, a.removed), b.removed);
  const bFirst = restoreZoneToTargetRefs(restoreZoneToTargetRefs(b.targetRefs, b.removed), a.removed);
  assert.deepEqual(aFirst, objectsForm);
  assert.deepEqual(bFirst, objectsForm);
});

test('restoring twice adds nothing twice', () => {
  const { targetRefs, removed } = removeZoneFromTargetRefs(objectsForm, 'vm', zone('zone-a'));
  const once = restoreZoneToTargetRefs(targetRefs, removed);
  assert.deepEqual(restoreZoneToTargetRefs(once, removed), objectsForm);
});

test('restoring into a targetRef that someone removed meanwhile is an error, not a silent loss', () => {
  const { removed } = removeZoneFromTargetRefs(objectsForm, 'vm', zone('zone-a'));
  assert.throws(
    () => restoreZoneToTargetRefs([objectsForm[1]], removed),
    (err: unknown) => err instanceof ReadRoutingError && /no longer in spec\.targetRefs/.test(err.message),
  );
});

test('malformed targetRefs are a ReadRoutingError', () => {
  assert.throws(() => zonesRoutedByVMUser({ not: 'a list' }, 'vm', zones), {
    code: 'ReadRoutingRefused',
    message: /spec\.targetRefs /,
  });
  assert.throws(() => zonesRoutedByVMUser(['x'], 'vm', zones), {
    code: 'ReadRoutingRefused',
    message: /spec\.targetRefs\[0\]/,
  });
});

test('a VMUser change is taken up when operational at the current generation', () => {
  assert.equal(
    vmuserTakenUp({
      metadata: { generation: 3 },
      status: { updateStatus: 'operational', observedGeneration: 3 },
    }).ready,
    true,
  );
  const stale = vmuserTakenUp({
    metadata: { generation: 4 },
    status: { updateStatus: 'operational', observedGeneration: 3 },
  });
  assert.equal(stale.ready, false);
  assert.match(stale.message, /want operational at 4/);
  assert.equal(vmuserTakenUp({ metadata: { generation: 1 } }).ready, false);
});

test('a zone that alone serves a route (its own paths) is refused, per route rather than per zone', () => {
  const tenantRoute = [
    ...perZoneForm,
    { crd: { kind: 'VMCluster/vmselect', name: 'vm-zone-a', namespace: 'vm' }, paths: ['/select/42/.*'] },
  ];
  assert.throws(
    () => removeZoneFromTargetRefs(tenantRoute, 'vm', zone('zone-a')),
    (err: unknown) =>
      err instanceof ReadRoutingError &&
      /zone zone-a .* alone serves the route .*select\/42/.test(err.message) &&
      /spec\.targetRefs\[3\]/.test(err.message),
  );
  // zone-b's route is shared with zones a and c: it may go.
  const { targetRefs } = removeZoneFromTargetRefs(tenantRoute, 'vm', zone('zone-b'));
  assert.equal(targetRefs.length, 3);
});

test('a VMSingle zone is routed by a VMSingle targetRef, never by a VMCluster/vmselect one of the same name', () => {
  const single: ZoneReadBackend = {
    ...zone('zone-a'),
    kind: 'VMSingle',
    hosts: ['vmsingle-vm-zone-a.vm.svc'],
  };
  const refs = [
    {
      crd: {
        kind: 'VMSingle',
        name: '',
        namespace: '',
        objects: [
          { name: 'vm-zone-a', namespace: 'vm' },
          { name: 'vm-zone-b', namespace: 'vm' },
        ],
      },
      paths: ['/.*'],
    },
  ];
  assert.deepEqual(zonesRoutedByVMUser(refs, 'vm', [single]), ['zone-a']);
  assert.deepEqual(zonesRoutedByVMUser(objectsForm, 'vm', [single]), []);
  assert.deepEqual(zonesRoutedByVMUser(refs, 'vm', [zone('zone-a')]), []);
  const { targetRefs, removed } = removeZoneFromTargetRefs(refs, 'vm', single);
  assert.deepEqual(targetRefs[0]?.crd, {
    kind: 'VMSingle',
    name: '',
    namespace: '',
    objects: [{ name: 'vm-zone-b', namespace: 'vm' }],
  });
  assert.deepEqual(restoreZoneToTargetRefs(targetRefs, removed), refs);
});
