import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ClusterRegistryError,
  clusterClients,
  clusterClientsFromArgs,
  clusterSecretLabel,
  clusterSecretsNamespace,
  hubOnly,
  kubeConfigFor,
  parseClusterSecret,
  requireClusterNamespace,
} from '../../../plugin/kube/cluster-registry.ts';
import { KubeError, type KubeObject } from '../../../plugin/kube/objects.ts';
import { MemoryKube, secret } from './memory-kube.ts';

const token = 'very-secret-token-123';
const pem = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');

function clusterSecret(
  name: string,
  data: Record<string, string>,
  annotations: Record<string, string> = {},
): KubeObject & { apiVersion: string; kind: string } {
  const s = secret('argo-rollouts', name, data);
  return {
    ...s,
    metadata: {
      ...s.metadata,
      labels: { [clusterSecretLabel]: 'cluster' },
      annotations,
      resourceVersion: '7',
    },
  };
}

const good = (
  name = 'eu-west-1b',
  config: unknown = { bearerToken: token, tlsClientConfig: { caData: pem } },
) =>
  clusterSecret(`cluster-${name}`, {
    name,
    server: 'https://10.0.0.1:6443/',
    config: JSON.stringify(config),
  });

test('an Argo CD cluster Secret with a bearer token or a client certificate is read; the client gets server, CA and credential', () => {
  const r = parseClusterSecret(good());
  assert.equal(r.name, 'eu-west-1b');
  assert.equal(r.server, 'https://10.0.0.1:6443');
  assert.equal(r.podAccess, 'proxy');
  assert.equal(r.namespaces, undefined);
  const kc = kubeConfigFor(r);
  assert.equal(kc.server, 'https://10.0.0.1:6443');
  const cluster = kc.config.getCurrentCluster();
  const bearer = kc.config.getCurrentUser();
  assert.equal(cluster?.caData, pem);
  assert.equal(bearer?.token, token);
  assert.equal(cluster?.skipTLSVerify, false);
  assert.equal(bearer?.exec, undefined);

  const cert = parseClusterSecret(
    clusterSecret(
      'c',
      {
        name: 'c',
        server: 'https://c.example:443',
        namespaces: 'vm, monitoring',
        config: JSON.stringify({
          tlsClientConfig: { caData: pem, certData: pem, keyData: pem, serverName: 'kube' },
        }),
      },
      { 'vmzones.io/pod-access': 'direct' },
    ),
  );
  assert.deepEqual(cert.namespaces, ['vm', 'monitoring']);
  assert.equal(cert.podAccess, 'direct');
  const user = kubeConfigFor(cert).config.getCurrentUser();
  assert.equal(user?.certData, pem);
  assert.equal(user?.token, undefined);
  assert.equal(kubeConfigFor(cert).config.getCurrentCluster()?.tlsServerName, 'kube');
});

test('a Secret vmzones cannot use is refused by field, and no message carries a credential', () => {
  const cases: [unknown, RegExp][] = [
    [
      { bearerToken: token, execProviderConfig: { command: '/bin/sh' } },
      /execProviderConfig: is not supported/,
    ],
    [{ bearerToken: token, awsAuthConfig: { clusterName: 'x' } }, /awsAuthConfig: is not supported/],
    [{ username: 'admin', password: token }, /password: is not supported/],
    [{ tlsClientConfig: {} }, /exactly one of bearerToken or tlsClientConfig.certData\/keyData/],
    [{ bearerToken: token, tlsClientConfig: { certData: pem } }, /certData and keyData go together/],
    [{ bearerToken: token, tlsClientConfig: { caData: `${token}!` } }, /caData: must be base64/],
  ];
  for (const [config, message] of cases) {
    assert.throws(
      () => parseClusterSecret(good('x', config)),
      (err: unknown) =>
        err instanceof ClusterRegistryError &&
        message.test(err.message) &&
        err.message.includes('cluster Secret argo-rollouts/cluster-x') &&
        !err.message.includes(token),
    );
  }
  // Broken JSON: the parser's own message would quote the token.
  const broken = clusterSecret('b', {
    name: 'b',
    server: 'https://b:6443',
    config: `{"bearerToken": "${token}`,
  });
  assert.throws(
    () => parseClusterSecret(broken),
    (err: unknown) =>
      err instanceof Error && /data.config is not JSON/.test(err.message) && !err.message.includes(token),
  );
  const http = clusterSecret('h', { name: 'h', server: `https://user:${token}@h:6443`, config: '{}' });
  assert.throws(
    () => parseClusterSecret(http),
    (err: unknown) =>
      err instanceof Error &&
      /data.server must be an https/.test(err.message) &&
      !err.message.includes(token),
  );
});

test('the registry hands out one client per cluster, the hub for no cluster, and names unknown clusters', async () => {
  const hub = new MemoryKube().put(good('eu-west-1b')).put(good('eu-west-1c'));
  hub.put(clusterSecret('broken', { name: 'broken', server: 'https://o:1', config: '{}' }));
  const connected: string[] = [];
  const remote = new MemoryKube();
  const clients = clusterClients({
    hub,
    namespace: 'argo-rollouts',
    connect: (r) => {
      connected.push(r.name);
      return remote;
    },
  });
  assert.equal(await clients.client(undefined), hub);
  const b = await clients.client('eu-west-1b');
  assert.notEqual(b, hub);
  assert.equal(await clients.client('eu-west-1b'), b, 'the client is reused while the Secret is unchanged');
  assert.deepEqual(connected, ['eu-west-1b']);
  assert.deepEqual(
    await clients.names(),
    ['eu-west-1b', 'eu-west-1c'],
    'a Secret that cannot be used is left out',
  );
  await assert.rejects(
    clients.client('broken'),
    /cluster Secret argo-rollouts\/broken: data.config: exactly one of/,
  );
  await assert.rejects(
    clients.client('us-east-1a'),
    (err: unknown) =>
      err instanceof ClusterRegistryError &&
      /cluster "us-east-1a" is not registered/.test(err.message) &&
      /registered: broken, eu-west-1b, eu-west-1c/.test(err.message),
  );
  await assert.rejects(hubOnly(hub).client('eu-west-1b'), {
    code: 'ClusterUnusable',
    message: /"eu-west-1b"/,
  });
});

test("a remote client's errors name the cluster; a twice-registered name is refused", async () => {
  const hub = new MemoryKube()
    .put(good('a'))
    .put({ ...good('a'), metadata: { ...good('a').metadata, name: 'dup' } });
  const clients = clusterClients({ hub, namespace: 'argo-rollouts', connect: () => new MemoryKube() });
  await assert.rejects(clients.client('a'), { code: 'ClusterUnusable', message: /cluster a / });

  const remote = new MemoryKube();
  remote.failNext.set(
    'VMCluster',
    new KubeError('unavailable', 'reading VMCluster vm/z: connect ECONNREFUSED'),
  );
  const one = clusterClients({
    hub: new MemoryKube().put(good('b')),
    namespace: 'argo-rollouts',
    connect: () => remote,
  });
  const kube = await one.client('b');
  await assert.rejects(
    kube.get({
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMCluster',
      namespace: 'vm',
      name: 'z',
    }),
    (err: unknown) =>
      err instanceof KubeError &&
      err.kind === 'unavailable' &&
      /^cluster b: reading VMCluster/.test(err.message),
  );
});

test('a rotated Secret (new resourceVersion) gets a new client after the listing expires', async () => {
  let t = 0;
  const hub = new MemoryKube().put(good('b'));
  let built = 0;
  const clients = clusterClients({
    hub,
    namespace: 'argo-rollouts',
    now: () => t,
    ttlMs: 1000,
    connect: () => {
      built += 1;
      return new MemoryKube();
    },
  });
  await clients.client('b');
  const s = good('b');
  hub.put({ ...s, metadata: { ...s.metadata, resourceVersion: '8' } });
  await clients.client('b');
  assert.equal(built, 1, 'within the TTL the listing is reused');
  t = 2000;
  await clients.client('b');
  assert.equal(built, 2);
});

test("the registration's namespaces limit where vmzones acts; the registry is on only with its flag", () => {
  const r = parseClusterSecret(
    clusterSecret('n', {
      name: 'n',
      server: 'https://n:6443',
      namespaces: 'vm',
      config: JSON.stringify({ bearerToken: token }),
    }),
  );
  requireClusterNamespace(r, 'vm', 'VMCluster z');
  requireClusterNamespace(undefined, 'anything', 'VMCluster z');
  assert.throws(() => requireClusterNamespace(r, 'kube-system', 'VMCluster z'), /allows only vm/);
  assert.equal(
    clusterSecretsNamespace(['x.mjs', '--cluster-secrets-namespace=argo-rollouts']),
    'argo-rollouts',
  );
  assert.equal(clusterSecretsNamespace(['x.mjs']), undefined, 'no flag: no registry');
  assert.throws(() => clusterSecretsNamespace(['--cluster-secrets-namespace=Bad']), /not a namespace name/);
});

test('without --cluster-secrets-namespace no Secret is listed and a named cluster says how to register it', async () => {
  const hub = new MemoryKube().put(good('eu-west-1b'));
  const clusters = clusterClientsFromArgs(hub, ['x.mjs']);
  assert.equal(await clusters.client(undefined), hub);
  assert.deepEqual(await clusters.names(), []);
  await assert.rejects(clusters.client('eu-west-1b'), { code: 'ClusterUnusable' });
  assert.equal(hub.reads.filter((r) => r.startsWith('list Secret')).length, 0);
  const on = clusterClientsFromArgs(hub, ['x.mjs', '--cluster-secrets-namespace=argo-rollouts']);
  assert.deepEqual(await on.names(), ['eu-west-1b']);
});
