// The product's API clients share one connection pool per cluster (plugin/kube/kube-client.ts keeps the dispatcher
// @kubernetes/client-node builds; loadKubeConfig in plugin/kube/objects.ts: one client per process). client-node
// 2.0.1 alone builds a connection pool per request when the kubeconfig carries TLS options, so every request opened
// a connection of its own. Counted here on a loopback API server double.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { kubeObjects, loadKubeConfig } from '../../../plugin/kube/objects.ts';

async function apiServer() {
  let connections = 0;
  const server = createServer((request, response) => {
    response.setHeader('Content-Type', 'application/json');
    if (request.url === '/api/v1') {
      response.end(
        JSON.stringify({
          kind: 'APIResourceList',
          groupVersion: 'v1',
          resources: [{ name: 'configmaps', kind: 'ConfigMap', namespaced: true, verbs: ['get'] }],
        }),
      );
      return;
    }
    const name = /^\/api\/v1\/namespaces\/vm\/configmaps\/([a-z0-9-]+)$/.exec(request.url ?? '')?.[1];
    response.end(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'vm', resourceVersion: '1' },
      }),
    );
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

test('the API client of loadKubeConfig reuses its connection: ten more reads open no connection', async () => {
  const server = await apiServer();
  const dir = mkdtempSync(join(tmpdir(), 'vmzones-kubeconfig-'));
  const file = join(dir, 'config');
  // TLS options (here: skipTLSVerify) made the former library build a connection pool per request.
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: server.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 'test-token' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  const before = process.env.KUBECONFIG;
  process.env.KUBECONFIG = file;
  try {
    const kube = kubeObjects(loadKubeConfig());
    const read = async (i: number) => {
      const object = await kube.get({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'vm',
        name: `cm-${i}`,
      });
      assert.equal(object.metadata.name, `cm-${i}`);
    };
    await read(0);
    const first = server.connections();
    for (let i = 1; i <= 10; i++) await read(i);
    assert.equal(
      server.connections(),
      first,
      `connections: ${first} for the first read, ${server.connections()} after ten more`,
    );
  } finally {
    if (before === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = before;
    await server.close();
  }
});
