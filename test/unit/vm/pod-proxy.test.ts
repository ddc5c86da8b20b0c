import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClusterRegistration } from '../../../plugin/kube/cluster-registry.ts';
import { podProxyRefusal, podProxyTarget } from '../../../plugin/vm/pod-proxy.ts';

const cluster: ClusterRegistration = {
  name: 'eu-west-1b',
  secret: 'argo-rollouts/cluster-eu-west-1b',
  resourceVersion: '1',
  server: 'https://eu-west-1b.k8s.example:6443',
  namespaces: undefined,
  podAccess: 'proxy',
  config: {
    bearerToken: 'token-value',
    tlsClientConfig: { caData: Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64') },
  } as ClusterRegistration['config'],
};

test('the pod proxy URL names the scheme, pod and port; the request carries the cluster credential and CA', () => {
  const target = podProxyTarget(
    cluster,
    { namespace: 'vm', name: 'vmagent-x-1', address: '10.0.0.7:8429' },
    'http',
    '/metrics',
  );
  assert.equal(
    target.url,
    'https://eu-west-1b.k8s.example:6443/api/v1/namespaces/vm/pods/http:vmagent-x-1:8429/proxy/metrics',
  );
  assert.deepEqual(target.auth, { kind: 'bearer', token: 'token-value' });
  assert.equal(target.tls?.ca, '-----BEGIN CERTIFICATE-----\n');
});

test("the API server's 403 names the missing pods/proxy permission, never the token", () => {
  const status =
    'scraping https://x/api/v1/namespaces/vm/pods/http:p:8429/proxy/metrics: HTTP 403: {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \\"p\\" is forbidden"';
  const refused = podProxyRefusal(cluster, 'vm', 403, status) ?? '';
  assert.match(refused, /HTTP 403/);
  assert.match(refused, /get on pods\/proxy in namespace vm/);
  assert.match(refused, /argo-rollouts\/cluster-eu-west-1b/);
  assert.doesNotMatch(refused, /token-value/);
  assert.match(podProxyRefusal(cluster, 'vm', 401, status) ?? '', /did not accept the credential/);
  // kube-apiserver indents the Status of a proxied request's refusal.
  const indented = 'scraping x: HTTP 403: {\n  "kind": "Status",\n  "apiVersion": "v1"';
  assert.match(podProxyRefusal(cluster, 'vm', 403, indented) ?? '', /pods\/proxy/);
});

test("a 401/403 of the pod itself (passed through, not a Kubernetes Status) and other statuses are not the API server's refusal", () => {
  assert.equal(podProxyRefusal(cluster, 'vm', 403, 'scraping x: HTTP 403: forbidden'), undefined);
  assert.equal(podProxyRefusal(cluster, 'vm', 401, 'scraping x: HTTP 401: Unauthorized'), undefined);
  assert.equal(podProxyRefusal(cluster, 'vm', 503, 'scraping x: HTTP 503: {"kind":"Status"}'), undefined);
});
