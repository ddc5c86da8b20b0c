// A zone's query pods in a registered cluster with pod access `proxy` are reached through that cluster's API server,
// at the pod proxy path, with the registration's credential: the query gate's instant queries (zone-query.ts) and
// the drain's reading of queries in flight (queries-in-flight.ts) alike. The pod's own address answers nothing here.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import type { ClusterRegistration } from '../../../plugin/kube/cluster-registry.ts';
import {
  readQueriesInFlight,
  zoneComponentSelector,
  zoneQueryPods,
} from '../../../plugin/vm/queries-in-flight.ts';
import { askZone, zoneQueryApi } from '../../../plugin/vm/zone-query.ts';
import { MemoryKube, readyPod } from '../kube/memory-kube.ts';
import { zoneCluster } from './zone-cluster.ts';

const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A zone cluster's API server stand-in: the pod proxy of vmselect-vm-zone-b-0 for one token; 403 otherwise. */
async function apiServer(): Promise<{ server: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://api');
    seen.push(`${request.headers.authorization} ${url.pathname}`);
    const prefix = '/api/v1/namespaces/vm/pods/http:vmselect-vm-zone-b-0:8481/proxy';
    if (request.headers.authorization !== 'Bearer zone-token' || !url.pathname.startsWith(prefix)) {
      response.writeHead(403, { 'content-type': 'application/json' });
      response.end('{"kind":"Status","apiVersion":"v1","status":"Failure","code":403}');
      return;
    }
    const path = url.pathname.slice(prefix.length);
    if (path === '/metrics') {
      response.end('vm_concurrent_select_current 0\n');
      return;
    }
    if (path === '/select/0/prometheus/api/v1/query') {
      response.end(
        JSON.stringify({
          status: 'success',
          data: { resultType: 'vector', result: [{ metric: {}, value: [1, '42'] }] },
        }),
      );
      return;
    }
    response.writeHead(404);
    response.end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const labels = Object.fromEntries(
  zoneComponentSelector('vmselect', 'vm-zone-b')
    .split(',')
    .map((pair) => pair.split('=')),
);

test("a zone in a registered cluster is asked its queries, and read for queries in flight, through that cluster's pod proxy", async () => {
  const api = await apiServer();
  const kube = Object.assign(new MemoryKube(), { registration: zoneCluster(api.server) });
  // A pod network address nothing here answers at: only the pod proxy path can give an answer.
  kube.put(readyPod('vm', 'vmselect-vm-zone-b-0', labels, { http: 8481 }, { ip: '192.0.2.10' }));

  let now = 0;
  const answers = await askZone(
    { kube, kind: 'VMCluster', namespace: 'vm', name: 'vm-zone-b', api: zoneQueryApi('VMCluster', '0') },
    [{ name: 'samples', query: 'sum(count_over_time(up[5m]))' }],
    1_800_000_000_000,
    { clock: () => now++, timeoutMs: 2_000 },
  );
  assert.deepEqual(answers, [
    { pod: 'vm/vmselect-vm-zone-b-0', answers: { samples: { '{}': 42 } }, latencyMs: 1 },
  ]);

  const inFlight = await readQueriesInFlight(kube, zoneQueryPods('VMCluster', 'vm', 'vm-zone-b'));
  assert.equal(inFlight.state, 'idle', inFlight.message);
  assert.deepEqual(api.seen, [
    'Bearer zone-token /api/v1/namespaces/vm/pods/http:vmselect-vm-zone-b-0:8481/proxy/select/0/prometheus/api/v1/query',
    'Bearer zone-token /api/v1/namespaces/vm/pods/http:vmselect-vm-zone-b-0:8481/proxy/metrics',
  ]);
});

test('a refused pod proxy is no answer, naming the missing grant and never the token', async () => {
  const api = await apiServer();
  const kube = Object.assign(new MemoryKube(), {
    registration: { ...zoneCluster(api.server), config: { bearerToken: 'wrong-token', tlsClientConfig: {} } },
  } as { registration: ClusterRegistration });
  kube.put(readyPod('vm', 'vmselect-vm-zone-b-0', labels, { http: 8481 }, { ip: '192.0.2.10' }));
  const [answer] = await askZone(
    { kube, kind: 'VMCluster', namespace: 'vm', name: 'vm-zone-b', api: zoneQueryApi('VMCluster', '0') },
    [{ name: 'samples', query: 'up' }],
    1_800_000_000_000,
    { clock: () => 0, timeoutMs: 2_000 },
  );
  assert.equal(answer?.answers, undefined);
  assert.match(answer?.problem ?? '', /cluster cluster-b's API server refused the pod proxy \(HTTP 403\)/);
  assert.doesNotMatch(answer?.problem ?? '', /wrong-token|zone-token/);
});
