// The kubeconfig forms @kubernetes/client-node reads for vmzones (plugin/kube/kube-config.ts) that kube-client.test.ts
// does not cover, each against the loopback API server (api-server-fixture.ts): `proxy-url` through a loopback
// CONNECT proxy (connect-proxy-fixture.ts), an OIDC auth-provider's id-token and its refresh at a loopback IdP
// (oidc-idp-fixture.ts), an exec plugin whose token changes, kubectl's rotating `tokenFile`, and a plain-HTTP server:
// `kubectl proxy` on loopback (kubectl-proxy-fixture.ts) is used, a remote one refused. Token expiry runs on a fake
// Date (the library and openid-client read the time from it).

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeClient } from '../../../plugin/kube/kube-client.ts';
import { KubeConfigError, kubeconfigConnection } from '../../../plugin/kube/kube-config.ts';
import { kubeObjects } from '../../../plugin/kube/objects.ts';
import { fakeClockStart } from '../fake-clock.ts';
import { makeTlsFixture, type TlsFixture } from '../vm/tls-fixture.ts';
import { ApiServerFixture } from './api-server-fixture.ts';
import { ConnectProxyFixture } from './connect-proxy-fixture.ts';
import { KubectlProxyFixture } from './kubectl-proxy-fixture.ts';
import { idToken, OidcIdpFixture } from './oidc-idp-fixture.ts';
import { assertTokenFileFollowed } from './token-rotation.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');

let tls: TlsFixture;
let api: ApiServerFixture;
let proxy: ConnectProxyFixture;
let server: string;
let proxyUrl: string;
let dir: string;

before(async () => {
  tls = makeTlsFixture();
  api = new ApiServerFixture(tls);
  server = await api.start();
  proxy = new ConnectProxyFixture();
  proxyUrl = await proxy.start();
  dir = mkdtempSync(join(tmpdir(), 'vmzones-kubeconfig-forms-'));
});
after(async () => {
  await proxy.stop();
  await api.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A kubeconfig file of one cluster (the fixture, with its CA) and one user; returns its path. */
function kubeconfig(
  file: string,
  user: Record<string, unknown>,
  cluster: Record<string, unknown> = {},
): string {
  const path = join(dir, file);
  writeFileSync(
    path,
    JSON.stringify({
      'current-context': 'x',
      clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': b64(tls.ca), ...cluster } }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'vm' } }],
    }),
  );
  return path;
}

test('proxy-url: every request goes through the CONNECT proxy, on tunnels kept for the next ones', async () => {
  const connection = kubeconfigConnection([
    kubeconfig('proxied', { token: 't0ken-one' }, { 'proxy-url': proxyUrl }),
  ]);
  const client = new KubeClient(connection);
  let opened = 0;
  const kube = kubeObjects(client);
  const from = api.requests.length;
  assert.deepEqual(await kube.list('v1', 'Pod', 'vm'), []);
  opened = proxy.tunnels.length;
  for (let i = 0; i < 10; i++) await kube.list('v1', 'Pod', 'vm');
  assert.equal(api.requests.length - from, 12, 'discovery and eleven lists reached the API server');
  assert.ok(opened >= 1, 'the first calls went through the proxy');
  assert.ok(
    proxy.tunnels.every((t) => t === new URL(server).host),
    `tunnels to the API server only: ${proxy.tunnels}`,
  );
  assert.equal(proxy.tunnels.length, opened, 'ten more reads open no new tunnel');
  client.close();

  // Without the proxy-url the same kubeconfig does not go through the proxy.
  const direct = kubeObjects(kubeconfigConnection([kubeconfig('direct', { token: 't0ken-one' })]));
  await direct.list('v1', 'Pod', 'vm');
  assert.equal(proxy.tunnels.length, opened);
});

test('a proxy-url nothing listens at: the call fails naming what it tried, not the credential', async () => {
  const kube = kubeObjects(
    kubeconfigConnection([
      kubeconfig('dead-proxy', { token: 't0ken-one' }, { 'proxy-url': 'http://127.0.0.1:1' }),
    ]),
    2_000,
  );
  await assert.rejects(kube.list('v1', 'Pod', 'vm'), (e: Error) => {
    assert.match(e.message, /^listing Pod in vm: /);
    assert.ok(!e.message.includes('t0ken-one'), e.message);
    return true;
  });
});

/** An unsigned JWT with `exp` (the API server's OIDC check is the fixture's token list). */
function jwt(exp: number, subject: string): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ sub: subject, exp })}.c2lnbmF0dXJl`;
}

/** Objects read with a kubeconfig `file` whose user is the OIDC auth-provider of client `vmzones` and `fields`. */
const oidcObjects = (file: string, fields: Record<string, string>) =>
  kubeObjects(
    kubeconfigConnection([
      kubeconfig(file, { 'auth-provider': { name: 'oidc', config: { 'client-id': 'vmzones', ...fields } } }),
    ]),
  );

test('OIDC auth-provider: its id-token is the bearer token while it is valid', async () => {
  const idToken = jwt(Math.floor(Date.now() / 1000) + 3600, 'oidc-user');
  api.tokens.add(idToken);
  const kube = oidcObjects('oidc', {
    'id-token': idToken,
    'idp-issuer-url': 'https://127.0.0.1:1',
    'refresh-token': 'r3fresh',
  });
  assert.deepEqual(await kube.list('v1', 'Pod', 'vm'), []);
  assert.equal(api.requests.at(-1)?.token, idToken);
});

test("kubectl's tokenFile in a kubeconfig is read again once a minute, relative to the kubeconfig", async (t) => {
  writeFileSync(join(dir, 'token'), 't0ken-one');
  const connection = kubeconfigConnection([kubeconfig('token-file', { tokenFile: 'token' })]);
  await assertTokenFileFollowed(t, api, () => kubeObjects(connection), join(dir, 'token'), {
    first: 't0ken-one',
    next: 't0ken-next',
  });
});

test('a plain-HTTP server on loopback (kubectl proxy) is used without credentials of its own, watches included', async () => {
  const kubectlProxy = new KubectlProxyFixture(server, tls.ca, 't0ken-one');
  const proxied = await kubectlProxy.start();
  try {
    const connection = kubeconfigConnection([kubeconfig('kubectl-proxy', {}, { server: proxied })]);
    assert.equal(connection.server, proxied);
    const client = new KubeClient(connection);
    const from = api.requests.length;
    assert.deepEqual(await kubeObjects(client).list('v1', 'Pod', 'vm'), []);
    const events: string[] = [];
    const watched = api.watches.length;
    let ended: unknown = 'open';
    const handle = await client.watch(
      '/api/v1/namespaces/vm/pods',
      {},
      (type) => events.push(type),
      (err) => {
        ended = err;
      },
    );
    const open = await api.watchOpened(watched + 1);
    open.send('ADDED', { kind: 'Pod', metadata: { name: 'p', namespace: 'vm', resourceVersion: '7' } });
    open.end();
    while (ended === 'open') await new Promise((resolve) => setImmediate(resolve));
    handle.abort();
    client.close();
    assert.deepEqual(events, ['ADDED'], 'the watch event came through the plain-HTTP proxy');
    assert.equal(ended, null, 'the watch ended as the server ended it');
    assert.equal(kubectlProxy.forwarded, api.requests.length - from, 'every request went through the proxy');
    assert.ok(
      api.requests.slice(from).every((r) => r.token === 't0ken-one'),
      "the proxy's credential reached the API server",
    );
    // `localhost` and ::1 are loopback too (kubectl proxy --address).
    for (const host of ['localhost', '[::1]'])
      kubeconfigConnection([kubeconfig(`kubectl-proxy-${host}`, {}, { server: `http://${host}:8001` })]);
  } finally {
    await kubectlProxy.stop();
  }
});

test('a plain-HTTP server elsewhere is refused by name unless the kubeconfig sets insecure-skip-tls-verify', () => {
  for (const remote of ['http://10.0.0.1:8080', 'http://kube.example:8001', 'HTTP://128.0.0.1'])
    assert.throws(
      () => kubeconfigConnection([kubeconfig('remote-http', { token: 't0ken-one' }, { server: remote })]),
      (e: Error) => {
        assert.ok(e instanceof KubeConfigError);
        assert.match(e.message, /server .* is plain HTTP and not on loopback .*insecure-skip-tls-verify/);
        assert.ok(e.message.includes(remote), e.message);
        assert.ok(!e.message.includes('t0ken-one'), e.message);
        return true;
      },
    );
  // The kubeconfig's explicit word: accepted (no request is sent here: tests reach loopback only).
  const optedIn = kubeconfigConnection([
    kubeconfig(
      'remote-http-insecure',
      { token: 't0ken-one' },
      { server: 'http://10.0.0.1:8080', 'insecure-skip-tls-verify': true },
    ),
  ]);
  assert.equal(optedIn.server, 'http://10.0.0.1:8080');
});

test('OIDC auth-provider: an expired id-token is refreshed at the IdP once, and the new one used until it expires', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: fakeClockStart });
  const idp = new OidcIdpFixture(tls, 'vmzones', 'r3fresh-0', (token) => api.tokens.add(token));
  const issuer = await idp.start();
  t.after(() => idp.stop());
  const nowS = () => Math.floor(Date.now() / 1000);
  const first = idToken(issuer, 'vmzones', nowS(), 300);
  api.tokens.add(first);
  const kube = oidcObjects('oidc-refresh', {
    'id-token': first,
    'refresh-token': 'r3fresh-0',
    'idp-issuer-url': issuer,
    'idp-certificate-authority-data': b64(tls.ca),
  });
  const bearer = async () => {
    await kube.list('v1', 'Pod', 'vm');
    return api.requests.at(-1)?.token;
  };
  assert.equal(await bearer(), first);
  t.mock.timers.tick(200_000);
  assert.equal(await bearer(), first, 'still valid: no refresh');
  assert.deepEqual(idp.grants, []);
  t.mock.timers.tick(200_000);
  const second = await bearer();
  assert.notEqual(second, first, 'expired: refreshed');
  assert.deepEqual(idp.grants, ['r3fresh-0']);
  assert.equal(await bearer(), second);
  t.mock.timers.tick(300_000);
  assert.equal(await bearer(), second, 'the new id-token is kept while it is valid (600 s)');
  assert.deepEqual(idp.grants, ['r3fresh-0'], 'one refresh per expiry, not one per request');
  t.mock.timers.tick(400_000);
  const third = await bearer();
  assert.ok(third !== second && third !== first);
  assert.deepEqual(idp.grants, ['r3fresh-0', 'r3fresh-1'], 'the rotated refresh token is the one sent');

  // The IdP refuses the refresh: the call fails naming the auth-provider, never a token.
  idp.refreshToken = 'revoked';
  t.mock.timers.tick(700_000);
  await assert.rejects(kube.list('v1', 'Pod', 'vm'), (e: Error) => {
    assert.match(e.message, /auth-provider oidc gave no credential/);
    for (const secret of [first, second ?? '', third ?? '', 'r3fresh-2'])
      assert.ok(!e.message.includes(secret), e.message);
    return true;
  });
});

test('an exec plugin whose token changes: its credential is reused until it expires, then the new token is used', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: fakeClockStart });
  // The plugin prints the credential the test wrote (the token service's current answer) and counts its runs.
  const credential = join(dir, 'exec-credential.json');
  const runs = join(dir, 'exec-credential-runs');
  writeFileSync(runs, '');
  const issue = (token: string, validMs: number) => {
    api.tokens.add(token);
    writeFileSync(
      credential,
      JSON.stringify({
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        status: { token, expirationTimestamp: new Date(Date.now() + validMs).toISOString() },
      }),
    );
  };
  const script = `require('node:fs').appendFileSync(${JSON.stringify(runs)}, 'x'); process.stdout.write(require('node:fs').readFileSync(${JSON.stringify(credential)}))`;
  const kube = kubeObjects(
    kubeconfigConnection([
      kubeconfig('exec-changing', {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: ['-e', script],
        },
      }),
    ]),
  );
  const bearer = async () => {
    await kube.list('v1', 'Pod', 'vm');
    return api.requests.at(-1)?.token;
  };
  issue('t0ken-exec-a', 10 * 60_000);
  assert.equal(await bearer(), 't0ken-exec-a');
  issue('t0ken-exec-b', 60 * 60_000); // the service now hands out b
  t.mock.timers.tick(9 * 60_000);
  assert.equal(await bearer(), 't0ken-exec-a', 'a is still valid: the plugin is not run again');
  assert.equal(readFileSync(runs, 'utf8'), 'x');
  t.mock.timers.tick(2 * 60_000);
  assert.equal(await bearer(), 't0ken-exec-b', 'a expired: the plugin ran again and its new token is used');
  assert.equal(await bearer(), 't0ken-exec-b');
  assert.equal(readFileSync(runs, 'utf8'), 'xx', 'the plugin ran once per expiry');
});
