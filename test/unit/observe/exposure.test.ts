// Issue 21 item 8: least exposure by default. The observe endpoint binds loopback unless told otherwise and its
// cache TTL has a floor; manifests/observe ships a NetworkPolicy that lets only the scraper in; `kubectl apply -k
// manifests/kustomize` installs the namespace-scoped RBAC (cluster-wide is the named overlay cluster-wide/) with the
// same rules; the zone-cluster role grants no verb vmzones does not use (no core/v1 events).

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import {
  isLoopbackHost,
  minObserveCacheTtlMs,
  ObserveFlagError,
  parseObserveFlags,
} from '../../../plugin/observe/flags.ts';
import { FakeClock } from '../fake-clock.ts';
import { rolloutObject, stepPluginOf, threeZones, useVmauthFixture } from '../zones/memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}
interface ManifestObject {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  rules?: Rule[];
  resources?: string[];
  namespace?: string;
  patches?: { path?: string }[];
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
}

function manifest(path: string): ManifestObject[] {
  const text = readFileSync(new URL(`../../../manifests/${path}`, import.meta.url), 'utf8');
  return parseAllDocuments(text).map((d) => d.toJS() as ManifestObject);
}

/** `group/resource` → sorted verbs, over every rule of the given objects. */
function grants(objects: readonly ManifestObject[]): Map<string, string[]> {
  const byResource = new Map<string, Set<string>>();
  for (const rule of objects.flatMap((o) => o.rules ?? [])) {
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        const key = `${group}/${resource}`;
        const verbs = byResource.get(key) ?? new Set<string>();
        for (const verb of rule.verbs) verbs.add(verb);
        byResource.set(key, verbs);
      }
    }
  }
  return new Map([...byResource].map(([key, verbs]) => [key, [...verbs].sort()]));
}

test('the observe endpoint binds loopback unless a host is given', () => {
  assert.equal(parseObserveFlags(['--observe-address', ':9464']).address?.host, '127.0.0.1');
  assert.equal(parseObserveFlags(['--observe-address=9464']).address?.host, '127.0.0.1');
  assert.equal(parseObserveFlags([]).address, undefined, 'off unless asked for');
  assert.ok(isLoopbackHost('127.0.0.1') && isLoopbackHost('::1'));
  assert.ok(!isLoopbackHost('0.0.0.0') && !isLoopbackHost('10.1.2.3') && !isLoopbackHost('::'));
});

test('--observe-cache-ttl below 1s is refused with a message naming the floor', () => {
  assert.equal(minObserveCacheTtlMs, 1_000);
  for (const value of ['0s', '999ms', '100ms']) {
    assert.throws(
      () => parseObserveFlags(['--observe-cache-ttl', value]),
      (err: Error) =>
        err instanceof ObserveFlagError &&
        err.message.startsWith(`--observe-cache-ttl "${value}": must be at least 1s`),
      value,
    );
  }
  assert.equal(parseObserveFlags(['--observe-cache-ttl=1s']).cacheTtlMs, 1_000);
});

test('manifests/observe/networkpolicy.yaml admits only the scraper, only to the metrics ports', () => {
  const [policy, ...rest] = manifest('observe/networkpolicy.yaml');
  assert.equal(rest.length, 0);
  assert.equal(policy?.kind, 'NetworkPolicy');
  assert.equal(policy?.metadata?.namespace, 'argo-rollouts');
  const spec = policy?.spec as {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: { from?: Record<string, unknown>[]; ports?: { port: number; protocol: string }[] }[];
  };
  // The controller pod as the upstream install labels it (manifests/kustomize/controller).
  assert.deepEqual(spec.podSelector.matchLabels, { 'app.kubernetes.io/name': 'argo-rollouts' });
  assert.deepEqual(spec.policyTypes, ['Ingress']);
  assert.ok(spec.ingress.length > 0);
  for (const rule of spec.ingress) {
    assert.ok(
      (rule.from ?? []).length > 0,
      'every rule names who may connect (an empty from admits everyone)',
    );
    for (const peer of rule.from ?? []) {
      assert.ok(
        'podSelector' in peer && 'namespaceSelector' in peer,
        'pods of one namespace, not a namespace',
      );
    }
    const ports = (rule.ports ?? []).map((p) => p.port).sort();
    assert.deepEqual(ports, [8090, 9464, 9465], 'the observe ports and the controller metrics, nothing else');
  }
});

test('kubectl apply -k manifests/kustomize is namespace-scoped; the cluster-wide overlay has the same rules', () => {
  const [root] = manifest('kustomize/kustomization.yaml');
  assert.deepEqual(root?.resources, ['controller', 'namespaced']);
  const [namespaced] = manifest('kustomize/namespaced/kustomization.yaml');
  const zoneNamespace = namespaced?.namespace;
  assert.ok(zoneNamespace, 'namespaced/ names the namespace of the Rollouts and zones');
  const namespacedRbac = manifest('kustomize/namespaced/rbac-namespaced.yaml');
  assert.deepEqual(namespacedRbac.map((o) => o.kind).sort(), ['Role', 'RoleBinding']);
  // Nothing cluster-wide in the default: its folders hold no ClusterRole.
  for (const file of [
    'controller/namespace.yaml',
    'controller/controller-runtime.yaml',
    'watch-namespaces.yaml',
  ]) {
    assert.ok(!manifest(`kustomize/${file}`).some((o) => o.kind?.startsWith('Cluster')), file);
  }
  // The plugins list only that namespace: a cluster-wide list would be forbidden.
  const [watch] = manifest('kustomize/watch-namespaces.yaml');
  assert.deepEqual(root?.patches, [{ path: 'watch-namespaces.yaml' }]);
  for (const key of ['stepPlugins', 'metricProviderPlugins']) {
    const [entry] = parse(watch?.data?.[key] ?? '') as { args: string[] }[];
    assert.equal(entry?.args.at(-1), `--watch-namespaces=${zoneNamespace}`, key);
  }

  const [clusterWide] = manifest('kustomize/cluster-wide/kustomization.yaml');
  assert.deepEqual(clusterWide?.resources, ['../controller', 'rbac.yaml']);
  const clusterRoles = manifest('kustomize/cluster-wide/rbac.yaml').filter((o) => o.kind === 'ClusterRole');
  assert.deepEqual(clusterRoles.map((o) => o.metadata?.name).sort(), ['vmzones-gates', 'vmzones-step']);
  assert.deepEqual(
    Object.fromEntries(grants(namespacedRbac)),
    Object.fromEntries(grants(clusterRoles)),
    'the namespaced Role grants what the two ClusterRoles grant together',
  );
  assert.ok(!existsSync(new URL('../../../manifests/kustomize/rbac.yaml', import.meta.url)));
});

test('the zone-cluster role grants create on events.k8s.io Events only, the only Events a walk writes', async () => {
  const zoneRole = manifest('multicluster/zone-cluster-rbac.yaml').filter((o) => o.kind === 'ClusterRole');
  const granted = grants(zoneRole);
  assert.equal(granted.get('/events'), undefined, 'no core/v1 events');
  assert.deepEqual(granted.get('events.k8s.io/events'), ['create']);

  // What a walk creates: drainReads and apply of one zone on the in-memory API.
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  const { run } = stepPluginOf(kube, clock);
  const step = (action: string) => run('zone-a', action);
  assert.equal((await step('drainReads')).phase, 'Successful');
  assert.equal((await step('apply')).phase, 'Successful');
  const created = kube.created.map((o) => `${o.apiVersion}/${o.kind}`);
  assert.ok(created.length > 0);
  assert.deepEqual([...new Set(created)], ['events.k8s.io/v1/Event']);
});
