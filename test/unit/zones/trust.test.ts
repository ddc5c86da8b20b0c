// Records on a zone object are data, never authority (plugin/zones/reconciler/record-trust.ts, docs/reliability.md "Trust
// boundary"): a person who may only patch a VMCluster in their own namespace forges a handoff or a lease on it,
// naming another namespace's VMUser, a Secret of kube-system as a scrape credential, and a pod and port of their
// choosing. The reconciler must change nothing outside that namespace, read no such Secret, send nothing to that
// pod, and say why with a Warning event.

import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createLogger } from '../../../plugin/goplugin/index.ts';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { FakeClock } from '../fake-clock.ts';
import { MemoryKube, readyPod, secret } from '../kube/memory-kube.ts';
import { ns, rolloutObject, threeZones, untilSettled, useVmauthFixture } from './memory-cluster.ts';

const vmApi = 'operator.victoriametrics.com/v1beta1';
const team = 'team-a';
const other = 'vm-other';
const secretValue = 'kube-system-admin-token-value';

/** A pod address of the forger's choosing: records every request it gets (it must get none). */
const trap: { port: number; requests: IncomingHttpHeaders[] } = { port: 0, requests: [] };
const trapServer = createServer((request, response) => {
  trap.requests.push(request.headers);
  response.end('vmauth_config_last_reload_successful 1\n');
});
before(async () => {
  await new Promise<void>((resolve) => trapServer.listen(0, '127.0.0.1', resolve));
  trap.port = (trapServer.address() as AddressInfo).port;
});
after(() => new Promise<void>((resolve) => trapServer.close(() => resolve())));

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

function operational(namespace: string, name: string, kind = 'VMCluster') {
  return {
    apiVersion: vmApi,
    kind,
    metadata: { name, namespace, generation: 1 },
    spec: { clusterVersion: 'v1.151.0-cluster' },
    status: { updateStatus: 'operational', observedGeneration: 1 },
  };
}

/** team-a's VMCluster, another namespace's VMUser over two VMClusters there, a Secret and a pod in kube-system. */
function cluster(): MemoryKube {
  const kube = new MemoryKube({ operator: true });
  kube.put(operational(team, 'vm-a'));
  kube.put(operational(other, 'victim-1'));
  kube.put(operational(other, 'victim-2'));
  kube.put({
    ...operational(other, 'reads', 'VMUser'),
    metadata: {
      name: 'reads',
      namespace: other,
      generation: 1,
      // vmzones changed it once, so a reload proof is due: the reconciler would scrape its "pods" for one.
      annotations: { 'vmzones.io/reads-changed-at': '2026-01-01T00:00:00Z' },
    },
    spec: {
      targetRefs: ['victim-1', 'victim-2'].map((name) => ({
        crd: { kind: 'VMCluster/vmselect', name, namespace: other },
      })),
    },
  });
  kube.put(secret('kube-system', 'admin-token', { token: secretValue }));
  kube.put(readyPod('kube-system', 'node-agent', { app: 'node-agent' }, { metrics: trap.port }));
  return kube;
}

/** The `reads` a forger writes: the other namespace's VMUser, their zone as its first backend, kube-system pods. */
function forgedReads() {
  return {
    ref: { kind: 'VMUser', namespace: other, name: 'reads' },
    pods: [
      {
        namespace: 'kube-system',
        labelSelector: 'app=node-agent',
        port: trap.port,
        auth: { bearerToken: { name: 'admin-token', key: 'token' } },
      },
    ],
    zones: [
      { zone: 'z', namespace: other, vmcluster: 'victim-1', hosts: [] },
      { zone: 'y', namespace: other, vmcluster: 'victim-2', hosts: [] },
    ],
    reloadEvidence: 'required',
  };
}

const ghost = { rollout: `${team}/ghost`, uid: 'uid-ghost', revision: 'r1' };

function annotate(kube: MemoryKube, namespace: string, name: string, annotations: Record<string, string>) {
  const object = kube.objects.get(`${vmApi}|VMCluster|${namespace}|${name}`);
  assert.ok(object, `${namespace}/${name}`);
  object.metadata.annotations = { ...(object.metadata.annotations ?? {}), ...annotations };
}

function forgeHandoff(kube: MemoryKube, holder = ghost, reads: unknown = forgedReads()) {
  annotate(kube, team, 'vm-a', {
    'vmzones.io/handoff': JSON.stringify({
      v: 1,
      zone: 'z',
      holder,
      requestedAt: '2026-01-01T00:00:00Z',
      by: 'a forger',
      rollback: true,
      reads,
      drainGracePeriod: '0s',
      // A record that turned the queue check off is refused for that alone (issue 35 item 7).
      vmagents: ['vmagent'],
    }),
    'vmzones.io/rollback': JSON.stringify({
      v: 1,
      ...holder,
      zone: 'z',
      phase: 'requested',
      appliedAt: '2026-01-01T00:00:00Z',
      generation: 1,
      changes: [{ path: ['clusterVersion'], before: 'v1.150.0-cluster', after: 'v1.151.0-cluster' }],
    }),
  });
}

function forgeLease(kube: MemoryKube) {
  annotate(kube, team, 'vm-a', {
    'vmzones.io/lease': JSON.stringify({
      v: 1,
      ...ghost,
      zone: 'z',
      since: '2026-01-01T00:00:00Z',
      reads: forgedReads(),
      drainGracePeriod: '0s',
    }),
  });
}

function teamCluster(kube: MemoryKube): KubeObject {
  const object = kube.objects.get(`${vmApi}|VMCluster|${team}|vm-a`);
  assert.ok(object, 'team-a VMCluster vm-a');
  return object;
}

/** Every stored object outside `namespace`, for a before/after comparison. */
function outside(kube: MemoryKube, namespace: string): [string, KubeObject][] {
  return [...kube.objects.entries()].filter(([, o]) => o.metadata.namespace !== namespace);
}

function recordingLogger() {
  const lines: string[] = [];
  return { lines, logger: createLogger('test', { sink: (line) => lines.push(line), level: 'debug' }) };
}

function refusalEvents(kube: MemoryKube) {
  return kube.created.filter((o) => o.kind === 'Event' && o.reason === 'ZoneRecordRefused');
}

/** What a refused forgery must leave: nothing outside team-a touched, no Secret read, nothing sent, said once. */
function assertRefused(kube: MemoryKube, before: [string, KubeObject][], lines: string[]) {
  assert.deepEqual(outside(kube, team), before, 'nothing outside team-a changed');
  assert.deepEqual(
    kube.patches.filter((p) => !p.ref.includes(` ${team}/`)),
    [],
    'nothing outside team-a was patched',
  );
  assert.deepEqual(
    kube.reads.filter((r) => r.includes('Secret')),
    [],
    'no Secret was read',
  );
  assert.deepEqual(trap.requests, [], 'nothing was sent to the pod the record names');
  assert.deepEqual(
    kube.created.filter((o) => o.metadata.namespace !== team),
    [],
    'nothing was created outside team-a',
  );
  const events = refusalEvents(kube);
  assert.equal(events.length, 1, 'one Warning event, not one per pass');
  assert.equal(events[0]?.type, 'Warning');
  assert.deepEqual(events[0]?.regarding, {
    apiVersion: vmApi,
    kind: 'VMCluster',
    namespace: team,
    name: 'vm-a',
  });
  assert.match(String(events[0]?.note), /refused/);
  const warned = lines.filter((l) => l.includes('refused a zone record'));
  assert.equal(warned.length, 1, 'one log line');
  for (const text of [...lines, ...kube.created.map((o) => JSON.stringify(o))]) {
    assert.ok(!text.includes(secretValue), 'no secret value in a log line or event');
  }
}

test('a forged handoff naming another namespace’s VMUser, a kube-system Secret and a pod of the forger’s choosing achieves nothing outside its namespace', async () => {
  trap.requests.length = 0;
  const kube = cluster();
  forgeHandoff(kube);
  const before = outside(kube, team);
  const { lines, logger } = recordingLogger();
  const reconciler = new ZoneReconciler({ clock, kube, logger });
  for (let pass = 0; pass < 3; pass++) await reconciler.tick();
  assertRefused(kube, before, lines);
  const state = zoneState(teamCluster(kube));
  assert.equal(state.lease, undefined, 'the zone is left untouched: no lease taken');
  assert.equal(state.maintenance, undefined, 'no maintenance mark');
  assert.equal(state.rollback?.phase, 'requested', 'its record is left as it was');
  assert.equal(teamCluster(kube).spec?.clusterVersion, 'v1.151.0-cluster');
});

test('a forged lease whose holder does not exist grants nothing: no handoff, nothing read or sent outside', async () => {
  trap.requests.length = 0;
  const kube = cluster();
  forgeLease(kube);
  const before = outside(kube, team);
  const { lines, logger } = recordingLogger();
  const reconciler = new ZoneReconciler({ clock, kube, logger });
  for (let pass = 0; pass < 3; pass++) await reconciler.tick();
  assertRefused(kube, before, lines);
  assert.equal(zoneState(teamCluster(kube)).handoff, undefined, 'not handed over');
});

test('a forged handoff on a zone a Rollout really walks: everything acted on comes from the Rollout’s spec document, not the record', async () => {
  trap.requests.length = 0;
  const kube = threeZones(vmauth.port);
  for (const object of cluster().objects.values()) {
    if (object.metadata.namespace !== team)
      kube.put(object as KubeObject & { apiVersion: string; kind: string });
  }
  // The Rollout was promoted past zone-a: its walk is over, so a handoff is acted on.
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-r', currentStepIndex: 9 }));
  const holder = { rollout: `${ns}/walk`, uid: 'uid-walk', revision: 'rev-r' };
  const forged = forgedReads();
  forged.zones[0] = { zone: 'zone-a', namespace: other, vmcluster: 'victim-1', hosts: [] };
  const key = `${vmApi}|VMCluster|${ns}|vm-zone-a`;
  const object = kube.objects.get(key);
  assert.ok(object);
  object.metadata.annotations = {
    'vmzones.io/handoff': JSON.stringify({
      v: 1,
      zone: 'zone-a',
      holder,
      requestedAt: '2026-01-01T00:00:00Z',
      by: 'a forger',
      rollback: false,
      reads: forged,
      drainGracePeriod: '0s',
    }),
  };
  const before = outside(kube, ns).filter(([, o]) => o.metadata.namespace !== ns);
  const reconciler = new ZoneReconciler({ clock, kube, logger: createLogger('test', { sink: () => {} }) });
  const progress = await untilSettled(reconciler);
  assert.deepEqual(progress, { 'vm/vm-zone-a': 'done' }, 'finished as the spec document says');
  assert.deepEqual(
    outside(kube, ns).filter(([, o]) => o.metadata.namespace !== ns),
    before,
    'nothing outside the Rollout’s namespace changed',
  );
  assert.deepEqual(
    kube.reads.filter((r) => r.includes('Secret')),
    [],
    'no Secret was read',
  );
  assert.deepEqual(trap.requests, [], 'nothing was sent to the pod the record names');
  assert.equal(zoneState(kube.getStored('VMCluster', 'vm-zone-a')).handoff, undefined, 'released');
});

test('with the other namespace allowed, a forged record is used only as far as its checks go: no other backend, no pod, no credential of its own', async () => {
  trap.requests.length = 0;
  const allowance = { all: false as const, extra: [other] };
  // Naming another zone's backend as its own: refused.
  const stolen = cluster();
  forgeHandoff(stolen);
  const stolenBefore = outside(stolen, team);
  const { lines, logger } = recordingLogger();
  const refusing = new ZoneReconciler({ clock, kube: stolen, logger, allowance });
  for (let pass = 0; pass < 3; pass++) await refusing.tick();
  assertRefused(stolen, stolenBefore, lines);
  assert.match(String(refusalEvents(stolen)[0]?.note), /backend of zone z is not this zone object/);

  // Its own zone as the backend: accepted, but the pods and the Secret it names are never used, and the other
  // namespace's VMUser (which does not route to team-a's zone) is left as it is.
  const own = cluster();
  const reads = forgedReads();
  reads.zones[0] = { zone: 'z', namespace: team, vmcluster: 'vm-a', hosts: [] };
  forgeHandoff(own, ghost, reads);
  const ownBefore = outside(own, team);
  const reconciler = new ZoneReconciler({ clock, kube: own, logger: recordingLogger().logger, allowance });
  // The VMUser never routed team-a's zone: its rollback is done, but a restore that leaves the zone unrouted is a
  // failure, never "finished" (issue 35 item 4): the zone stays held and a Warning says why.
  assert.deepEqual(await untilSettled(reconciler, 3), { [`${team}/vm-a`]: 'blocked' });
  assert.deepEqual(
    own.created.filter((e) => e.reason === 'ZoneRestoreFailed').map((e) => e.metadata.namespace),
    [team],
  );
  assert.deepEqual(outside(own, team), ownBefore, 'nothing outside team-a changed');
  assert.deepEqual(
    own.reads.filter((r) => r.includes('Secret')),
    [],
    'no Secret was read',
  );
  assert.deepEqual(trap.requests, [], 'nothing was sent to the pod the record names');
  assert.deepEqual(refusalEvents(own), []);
});
