// The Kubernetes access on @kubernetes/client-node (plugin/kube/kube-client.ts, kube-config.ts, objects.ts kubeObjects,
// watch-cache.ts) against an HTTPS API server on loopback (api-server-fixture.ts): TLS verified with the test's CA,
// bearer tokens (a rotating token file, an exec plugin), client certificates, basic auth, one connection pool per cluster,
// discovery, merge patches with field manager and dry run, errors mapped to KubeErrors without credentials, and
// watches with bookmarks and 410 Gone.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeClient, WatchInactiveError } from '../../../plugin/kube/kube-client.ts';
import {
  connectionOfFields,
  inClusterConnection,
  type KubeConnection,
  kubeconfigConnection,
} from '../../../plugin/kube/kube-config.ts';
import { KubeError, type KubeObject, kubeObjects } from '../../../plugin/kube/objects.ts';
import { WatchCache } from '../../../plugin/kube/watch-cache.ts';
import { makeTlsFixture, type TlsFixture } from '../vm/tls-fixture.ts';
import { ApiServerFixture } from './api-server-fixture.ts';
import { assertTokenFileFollowed } from './token-rotation.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const vmcluster = { apiVersion: 'operator.victoriametrics.com/v1beta1', kind: 'VMCluster' };
const clusters = '/apis/operator.victoriametrics.com/v1beta1/namespaces/vm/vmclusters';

let tls: TlsFixture;
let api: ApiServerFixture;
let server: string;
let dir: string;

before(async () => {
  tls = makeTlsFixture();
  api = new ApiServerFixture(tls);
  server = await api.start();
  dir = mkdtempSync(join(tmpdir(), 'vmzones-kube-client-'));
});
after(async () => {
  await api.stop();
  rmSync(dir, { recursive: true, force: true });
});

type Fields = Parameters<typeof connectionOfFields>[0];
const withToken = (extra: Partial<Fields> = {}): KubeConnection =>
  connectionOfFields(
    { server, caData: b64(tls.ca), token: 't0ken-one', skipTLSVerify: false, ...extra },
    'test',
  );

const zone = (name: string, labels: Record<string, string> = {}): KubeObject => ({
  ...vmcluster,
  metadata: { name, namespace: 'vm', labels },
  spec: { replicas: 1 },
});

test('get, list with a label selector, create and merge patch reach the right paths through discovery', async () => {
  api.put(clusters, zone('a', { tier: 'x' }));
  api.put(clusters, zone('b', { tier: 'y' }));
  const kube = kubeObjects(withToken());
  const ref = { ...vmcluster, namespace: 'vm', name: 'a' };
  const read = await kube.get(ref);
  assert.equal(read.metadata.name, 'a');
  const listed = await kube.list(vmcluster.apiVersion, 'VMCluster', 'vm', 'tier=y');
  assert.deepEqual(
    listed.map((o) => [o.metadata.name, o.kind, o.apiVersion]),
    [['b', 'VMCluster', vmcluster.apiVersion]],
  );
  assert.equal(api.requests.at(-1)?.query.get('labelSelector'), 'tier=y');

  const patched = await kube.mergePatch(ref, { spec: { replicas: 3 } }, read.metadata.resourceVersion);
  assert.deepEqual(patched.spec, { replicas: 3 });
  const patch = api.requests.at(-1);
  assert.equal(patch?.method, 'PATCH');
  assert.equal(patch?.path, `${clusters}/a`);
  assert.equal(patch?.contentType, 'application/merge-patch+json');
  assert.equal(patch?.query.get('fieldManager'), 'vmzones');
  assert.equal(patch?.query.get('dryRun'), null);
  assert.equal(
    (patch?.body as KubeObject | undefined)?.metadata.resourceVersion,
    read.metadata.resourceVersion,
  );

  // The resourceVersion read before the patch is stale now: 409, a conflict to retry.
  await assert.rejects(
    kube.mergePatch(ref, { spec: { replicas: 4 } }, read.metadata.resourceVersion),
    (e) =>
      e instanceof KubeError &&
      e.kind === 'conflict' &&
      /^patching VMCluster vm\/a: HTTP 409/.test(e.message),
  );
  const dry = await kube.mergePatch(ref, { spec: { replicas: 9 } }, undefined, { dryRun: true });
  assert.deepEqual(dry.spec, { replicas: 9 });
  assert.equal(api.requests.at(-1)?.query.get('dryRun'), 'All');
  assert.deepEqual((await kube.get(ref)).spec, { replicas: 3 }, 'a dry run stores nothing');

  const created = await kube.create({ ...zone('c'), apiVersion: vmcluster.apiVersion, kind: 'VMCluster' });
  assert.equal(created.metadata.name, 'c');
  assert.equal(api.requests.at(-1)?.path, clusters);
  assert.equal(api.requests.at(-1)?.query.get('fieldManager'), 'vmzones');
  await assert.rejects(
    kube.create({ ...zone('c'), apiVersion: vmcluster.apiVersion, kind: 'VMCluster' }),
    (e) => e instanceof KubeError && e.kind === 'conflict',
  );
  const discoveries = api.requests.filter((r) => r.path === '/apis/operator.victoriametrics.com/v1beta1');
  assert.equal(discoveries.length, 1, 'discovery is asked once per group/version');
});

test('errors keep their kind and lose the credentials the API server quotes back', async () => {
  const kube = kubeObjects(withToken());
  await assert.rejects(
    kube.get({ ...vmcluster, namespace: 'vm', name: 'nope' }),
    (e) => e instanceof KubeError && e.kind === 'notFound' && e.status === 404,
  );
  await assert.rejects(
    kube.list('unknown.example/v1', 'Thing', 'vm'),
    (e) =>
      e instanceof KubeError &&
      e.kind === 'notFound' &&
      /^listing Thing in vm: the API server serves no such kind/.test(e.message),
  );
  await assert.rejects(
    kube.list('v1', 'NoSuchKind', 'vm'),
    (e) => e instanceof KubeError && e.kind === 'notFound',
  );
  api.failNext = {
    status: 422,
    body: {
      kind: 'Status',
      code: 422,
      message: 'spec.url: Invalid value: "http://reader:s3cret@vmselect:8481/?authKey=k3y": bad',
    },
  };
  await assert.rejects(kube.get({ ...vmcluster, namespace: 'vm', name: 'a' }), (e) => {
    assert.ok(e instanceof KubeError);
    assert.equal(e.kind, 'invalid');
    for (const secret of ['s3cret', 'k3y', 't0ken-one']) assert.ok(!e.message.includes(secret), e.message);
    return true;
  });
  api.failNext = { status: 403, body: { kind: 'Status', code: 403, message: 'forbidden' } };
  await assert.rejects(
    kube.get({ ...vmcluster, namespace: 'vm', name: 'a' }),
    (e) => e instanceof KubeError && e.kind === 'forbidden',
  );
  await assert.rejects(
    kubeObjects(withToken({ token: 'wrong-t0ken' })).get({ ...vmcluster, namespace: 'vm', name: 'a' }),
    (e) => e instanceof KubeError && e.kind === 'forbidden' && !e.message.includes('wrong-t0ken'),
  );
});

test('a server that accepts and never answers: the call ends at its deadline, saying so', async (t) => {
  // Discovery done first under the default deadline: on a loaded machine (a cold npm test beside four sandboxes) a
  // real answer once took longer than 0.3 s, and that list is not what this test is about.
  const client = new KubeClient(withToken());
  await kubeObjects(client).list('v1', 'Pod', 'vm');
  const kube = kubeObjects(client, 300);
  api.silent = true;
  t.after(() => {
    api.silent = false;
  });
  await assert.rejects(
    kube.get({ apiVersion: 'v1', kind: 'Pod', namespace: 'vm', name: 'p' }),
    (e) =>
      e instanceof KubeError &&
      e.kind === 'unavailable' &&
      /^reading Pod vm\/p: no answer from the API server within 0.3 s$/.test(e.message),
  );
});

test('a kind discovery does not list is notFound, and asked for again only after a minute (a CRD installed later)', async () => {
  let now = 5_000_000;
  const kube = kubeObjects(new KubeClient(withToken(), { now: () => now }));
  const discoveries = () => api.requests.filter((r) => r.path === '/apis/later.example/v1').length;
  for (let i = 0; i < 3; i++)
    await assert.rejects(
      kube.list('later.example/v1', 'Widget', 'vm'),
      (e) => e instanceof KubeError && e.kind === 'notFound',
    );
  assert.equal(discoveries(), 1, 'one discovery for three lists of a kind not served');
  api.serve('/apis/later.example/v1', [{ name: 'widgets', kind: 'Widget', namespaced: true }]);
  now += 61_000;
  await assert.rejects(kube.list('later.example/v1', 'Widget', 'vm'), (e) => e instanceof KubeError);
  // The first call after the minute still answers from the old discovery and drops it; the next asks again.
  assert.deepEqual(await kube.list('later.example/v1', 'Widget', 'vm'), []);
  assert.equal(discoveries(), 2);
});

test('TLS is verified: a server certificate from another CA is refused unless the config skips verification', async () => {
  const kube = kubeObjects(withToken({ caData: b64(tls.otherCa) }));
  await assert.rejects(
    kube.list('v1', 'Pod', 'vm'),
    (e) => e instanceof KubeError && e.kind === 'unavailable' && !e.message.includes('t0ken-one'),
  );
  const noCa = connectionOfFields({ server, token: 't0ken-one', skipTLSVerify: false }, 'test');
  await assert.rejects(kubeObjects(noCa).list('v1', 'Pod', 'vm'), (e) => e instanceof KubeError);
  const skipping = kubeObjects(withToken({ caData: b64(tls.otherCa), skipTLSVerify: true }));
  assert.deepEqual(await skipping.list('v1', 'Pod', 'vm'), []);
});

test('one connection per cluster: ten reads after the first open no new TLS connection', async () => {
  const client = new KubeClient(withToken());
  const kube = kubeObjects(client);
  await kube.list('v1', 'Pod', 'vm');
  const opened = api.connections;
  await Promise.all(Array.from({ length: 3 }, () => kube.list('v1', 'Pod', 'vm')));
  const afterBurst = api.connections;
  for (let i = 0; i < 10; i++) await kube.list('v1', 'Pod', 'vm');
  assert.equal(api.connections, afterBurst, 'sequential reads reuse the pooled connections');
  assert.ok(afterBurst - opened <= 2, `a burst of 3 opened ${afterBurst - opened} connections`);
  client.close();
});

test('a client certificate authenticates, read from the files a kubeconfig names relative to itself', async () => {
  writeFileSync(join(dir, 'ca.crt'), tls.ca);
  writeFileSync(join(dir, 'client.crt'), tls.clientCert);
  writeFileSync(join(dir, 'client.key'), tls.clientKey);
  const kubeconfig = join(dir, 'config');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: cert',
      'clusters:',
      `- name: fixture\n  cluster:\n    server: ${server}\n    certificate-authority: ca.crt`,
      'users:',
      '- name: cert\n  user:\n    client-certificate: client.crt\n    client-key: client.key',
      'contexts:',
      '- name: cert\n  context: {cluster: fixture, user: cert, namespace: vm}',
    ].join('\n'),
  );
  const connection = kubeconfigConnection([kubeconfig]);
  assert.equal(connection.namespace, 'vm');
  assert.equal(connection.config.getCurrentCluster()?.skipTLSVerify, false);
  assert.deepEqual(await kubeObjects(connection).list('v1', 'Pod', 'vm'), []);
  assert.equal(api.requests.at(-1)?.auth, 'cert');
});

test('an exec credential plugin gives the token, run again once its credential expires', async () => {
  const kubeconfig = join(dir, 'exec-config');
  const counter = join(dir, 'exec-runs');
  writeFileSync(counter, '');
  // The plugin appends a line per run and prints an ExecCredential whose token expires at once after the first.
  const script = [
    "const fs = require('node:fs');",
    `fs.appendFileSync(${JSON.stringify(counter)}, 'x');`,
    `const runs = fs.readFileSync(${JSON.stringify(counter)}, 'utf8').length;`,
    'const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);',
    "if (info.kind !== 'ExecCredential' || process.env.FROM_KUBECONFIG !== 'yes') process.exit(3);",
    'const expires = runs === 1 ? new Date(Date.now() - 1000).toISOString() : new Date(Date.now() + 3600e3).toISOString();',
    "console.log(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status: { token: 't0ken-exec-' + runs, expirationTimestamp: expires } }));",
  ].join(' ');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      'current-context': 'exec',
      clusters: [{ name: 'f', cluster: { server, 'certificate-authority-data': b64(tls.ca) } }],
      users: [
        {
          name: 'e',
          user: {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: process.execPath,
              args: ['-e', script],
              env: [{ name: 'FROM_KUBECONFIG', value: 'yes' }],
            },
          },
        },
      ],
      contexts: [{ name: 'exec', context: { cluster: 'f', user: 'e' } }],
    }),
  );
  api.tokens.add('t0ken-exec-1');
  api.tokens.add('t0ken-exec-2');
  const kube = kubeObjects(kubeconfigConnection([kubeconfig]));
  const from = api.requests.length;
  // Discovery, then the list: the first credential expired after the first request.
  await kube.list('v1', 'Pod', 'vm');
  await kube.list('v1', 'Pod', 'vm');
  await kube.list('v1', 'Pod', 'vm');
  assert.deepEqual(
    api.requests.slice(from).map((r) => r.token),
    ['t0ken-exec-1', 't0ken-exec-2', 't0ken-exec-2', 't0ken-exec-2'],
    'the expired credential was asked for again, the valid one reused',
  );
  assert.equal(readFileSync(counter, 'utf8'), 'xx', 'the plugin ran twice');

  // A plugin that fails: the message names the command and its exit code, never its arguments or output.
  const failing = join(dir, 'exec-failing');
  writeFileSync(
    failing,
    JSON.stringify({
      'current-context': 'exec',
      clusters: [{ name: 'f', cluster: { server, 'certificate-authority-data': b64(tls.ca) } }],
      users: [
        {
          name: 'e',
          user: {
            exec: {
              command: process.execPath,
              args: ['-e', 'console.log("t0ken-printed"); process.exit(7)', '--', '--token=s3cret-arg'],
            },
          },
        },
      ],
      contexts: [{ name: 'exec', context: { cluster: 'f', user: 'e' } }],
    }),
  );
  await assert.rejects(kubeObjects(kubeconfigConnection([failing])).list('v1', 'Pod', 'vm'), (e) => {
    assert.ok(e instanceof KubeError);
    assert.match(e.message, /exec credential plugin .*node failed/);
    for (const secret of ['t0ken-printed', 's3cret-arg']) assert.ok(!e.message.includes(secret), e.message);
    return true;
  });
});

test('in-cluster: the service account token file is read again once it rotates', async (t) => {
  const root = mkdtempSync(join(dir, 'root-'));
  const account = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
  mkdirSync(account, { recursive: true });
  writeFileSync(join(account, 'ca.crt'), tls.ca);
  writeFileSync(join(account, 'token'), 't0ken-one\n');
  writeFileSync(join(account, 'namespace'), 'argo-rollouts');
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
  process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1';
  process.env.KUBERNETES_SERVICE_PORT = new URL(server).port;
  t.after(() => {
    for (const [name, value] of [
      ['KUBERNETES_SERVICE_HOST', saved.host],
      ['KUBERNETES_SERVICE_PORT', saved.port],
    ] as const)
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  });
  const connection = inClusterConnection(root);
  assert.equal(connection.namespace, 'argo-rollouts');
  const client = new KubeClient(connection);
  t.after(() => client.close());
  await assertTokenFileFollowed(t, api, () => kubeObjects(client), join(account, 'token'), {
    first: 't0ken-one',
    next: 't0ken-rotated',
  });
});

test('basic auth from a kubeconfig authenticates; an unknown context is refused by name', async () => {
  const kubeconfig = join(dir, 'basic');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      'current-context': 'x',
      clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': b64(tls.ca) } }],
      users: [{ name: 'u', user: { username: 'admin', password: 'pa55word' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    }),
  );
  api.basic.add('admin:pa55word');
  assert.deepEqual(await kubeObjects(kubeconfigConnection([kubeconfig])).list('v1', 'Pod', 'vm'), []);
  assert.equal(api.requests.at(-1)?.auth, 'basic');
  assert.throws(() => kubeconfigConnection([kubeconfig], 'other'), /no context named other/);
});

test('a watch cache on the client: list, watch with bookmarks, resume after the server ends it, relist on 410', async (t) => {
  const pod = (name: string, resourceVersion?: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'w', ...(resourceVersion === undefined ? {} : { resourceVersion }) },
  });
  for (const name of ['w1', 'w2']) api.put('/api/v1/namespaces/w/pods', pod(name));
  const client = new KubeClient(withToken());
  const problems: string[] = [];
  const cache = new WatchCache({
    kubeConfig: client,
    kind: { apiVersion: 'v1', kind: 'Pod', plural: 'pods' },
    namespace: 'w',
    delay: async () => {},
    onProblem: (m) => problems.push(m),
  });
  t.after(async () => {
    await cache.stop();
    client.close();
  });
  const watchesBefore = api.watches.length;
  await cache.start();
  const first = await api.watchOpened(watchesBefore + 1);
  assert.equal(first.path, '/api/v1/namespaces/w/pods');
  assert.equal(first.query.get('allowWatchBookmarks'), 'true');
  assert.ok(first.query.get('resourceVersion'));
  const names = () =>
    cache
      .list('w')
      .map((o) => o.metadata.name)
      .sort();
  assert.deepEqual(names(), ['w1', 'w2']);

  const wake = cache.changeOf('w', 'w1', cache.get('w', 'w1')?.metadata.resourceVersion);
  first.send('MODIFIED', pod('w1', '500'));
  await wake.changed;
  assert.equal(cache.get('w', 'w1')?.metadata.resourceVersion, '500');
  first.send('BOOKMARK', { metadata: { resourceVersion: '600' } });
  // Sent on the same stream: the bookmark is in before the end.
  first.end();
  const resumed = await api.watchOpened(watchesBefore + 2);
  assert.equal(resumed.query.get('resourceVersion'), '600', 'resumes from the bookmark');
  assert.equal(cache.counts.lists, 1);

  // 410 Gone in the stream: list again (w2 deleted meanwhile is gone from the copy).
  api.objects.delete('/api/v1/namespaces/w/pods/w2');
  resumed.send('ERROR', { kind: 'Status', code: 410, message: 'too old resource version' });
  resumed.end();
  const third = await api.watchOpened(watchesBefore + 3);
  assert.equal(cache.counts.lists, 2);
  assert.deepEqual(names(), ['w1']);
  // 410 refusing the watch itself: list again too.
  api.refuseWatches.push(410);
  third.end();
  await api.watchOpened(watchesBefore + 4);
  assert.equal(cache.counts.lists, 3);
  assert.equal(cache.fresh, true);
  assert.deepEqual(problems, [], '410 and a server-ended watch are no failures');
});

test('a watch cache whose watch stays silent opens it again from the last resourceVersion, without a list or a problem', async (t) => {
  api.put('/api/v1/namespaces/quiet/pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'q', namespace: 'quiet' },
  });
  const client = new KubeClient(withToken());
  const problems: string[] = [];
  const cache = new WatchCache({
    kubeConfig: client,
    kind: { apiVersion: 'v1', kind: 'Pod', plural: 'pods' },
    namespace: 'quiet',
    watchInactivityMs: 200,
    onProblem: (m) => problems.push(m),
  });
  t.after(async () => {
    await cache.stop();
    client.close();
  });
  const before = api.watches.length;
  await cache.start();
  const first = await api.watchOpened(before + 1);
  first.send('BOOKMARK', { metadata: { resourceVersion: '777' } });
  const second = await api.watchOpened(before + 2);
  assert.equal(second.query.get('resourceVersion'), '777');
  assert.equal(cache.counts.lists, 1);
  assert.deepEqual(problems, []);
  assert.equal(cache.fresh, true);
});

test('a watch that goes silent ends with a failure after the inactivity timeout', async () => {
  const client = new KubeClient(withToken());
  const before = api.watches.length;
  const ended = new Promise<unknown>((resolve) => {
    void client.watch('/api/v1/namespaces/q/pods', {}, () => {}, resolve, 300);
  });
  await api.watchOpened(before + 1);
  const err = await ended;
  assert.ok(err instanceof WatchInactiveError, String(err));
  assert.match(err.message, /no data for 0.3 s/);
  client.close();
});
