import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import { vmauthReloadEvidence, vmauthReloadStamps } from '../../../plugin/vm/vmauth-reload.ts';
import { MemoryKube, readyPod, secret } from '../kube/memory-kube.ts';
import { pageServers, servePage } from './page-server.ts';
import { zoneCluster } from './zone-cluster.ts';

const since = new Date('2026-05-01T12:00:00.400Z');
const sinceSeconds = Math.floor(since.getTime() / 1000);

function vmauthPage(version: string, reload?: { successful: number; at: number; start?: number }): string {
  const lines = [
    `vm_app_version{version="vmauth-${version}",short_version="${version}"} 1`,
    'vmauth_http_requests_total{path="/"} 9',
  ];
  if (reload !== undefined) {
    lines.push(`vmauth_config_last_reload_successful ${reload.successful}`);
    lines.push(`vmauth_config_last_reload_success_timestamp_seconds ${reload.at}`);
    lines.push('vmauth_config_last_reload_errors_total 0');
    lines.push(`process_start_time_seconds ${reload.start ?? 1000}`);
  }
  return `${lines.join('\n')}\n`;
}

const labels = { app: 'vmauth' };
const selection = { namespace: 'vm', labelSelector: 'app=vmauth', port: 'http' };

async function kubeWith(pages: string[], extra: (kube: MemoryKube) => void = () => {}): Promise<MemoryKube> {
  const kube = new MemoryKube();
  let index = 0;
  for (const page of pages) {
    kube.put(readyPod('vm', `vmauth-${index++}`, labels, { http: await servePage(page) }));
  }
  extra(kube);
  return kube;
}

test('reloaded: a stamp at or after `since` proves a load after the write', async () => {
  const kube = await kubeWith([
    vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds + 1 }),
    vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds + 5 }),
  ]);
  const evidence = await vmauthReloadEvidence(kube, selection, since);
  assert.equal(evidence.state, 'reloaded', evidence.message);
  assert.deepEqual(
    evidence.pods.map((pod) => [pod.pod, pod.reloadedAt, pod.evidence, pod.version]),
    [
      ['vm/vmauth-0', '2026-05-01T12:00:01.000Z', 'reloadTimestamp', 'v1.151.0'],
      ['vm/vmauth-1', '2026-05-01T12:00:05.000Z', 'reloadTimestamp', 'v1.151.0'],
    ],
  );
});

test('a load up to 3 s before the write is not evidence (the 1 s slack was applied twice)', async () => {
  // since 12:00:00.400: stamps 11:59:58 (floor(since) - 2) and 12:00:00 (the same second, before the write)
  // passed before; neither proves a load after the write.
  for (const at of [sinceSeconds - 2, sinceSeconds - 1, sinceSeconds]) {
    const kube = await kubeWith([vmauthPage('v1.151.0', { successful: 1, at })]);
    const evidence = await vmauthReloadEvidence(kube, selection, since);
    assert.equal(
      evidence.state,
      'waiting',
      `stamp ${at - sinceSeconds} s from floor(since): ${evidence.message}`,
    );
    assert.match(evidence.message, /which does not prove a load after 2026-05-01T12:00:00.400Z/);
  }
});

test('a stamp above the one seen just before the write proves a load after it, even within the stamp lag', async () => {
  // The load came right after the write but fasttime stamped it with the second before.
  const kube = await kubeWith([vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds - 1, start: 1000 })]);
  const seen = (stamp: number, start = 1000) => ({
    v: 1 as const,
    at: since.toISOString(),
    pods: { 'vm/vmauth-0': { stamp, start } },
  });
  const after = await vmauthReloadEvidence(kube, selection, since, seen(sinceSeconds - 5));
  assert.equal(after.state, 'reloaded', after.message);
  assert.equal(after.pods[0]?.evidence, 'reloadAfterBaseline');
  // Above the baseline and at or after `since`: named by the plainer proof, the stamp (gates.test.ts relies on it).
  const later = await vmauthReloadEvidence(
    await kubeWith([vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds + 1, start: 1000 })]),
    selection,
    since,
    seen(sinceSeconds - 5),
  );
  assert.equal(later.state, 'reloaded', later.message);
  assert.equal(later.pods[0]?.evidence, 'reloadTimestamp');
  const same = await vmauthReloadEvidence(kube, selection, since, seen(sinceSeconds - 1));
  assert.equal(same.state, 'waiting', 'the stamp seen before the write is the old load');
  const otherProcess = await vmauthReloadEvidence(kube, selection, since, seen(sinceSeconds - 5, 999));
  assert.equal(otherProcess.state, 'waiting', 'a stamp of another process proves nothing');
  const otherChange = await vmauthReloadEvidence(kube, selection, since, {
    ...seen(sinceSeconds - 5),
    at: '2026-05-01T11:00:00.000Z',
  });
  assert.equal(otherChange.state, 'waiting', 'a baseline of another write does not count');
});

test('a load right after a write made 2 s after the start proves the write even within a second of the start (its baseline is the start-up load of the same process)', async () => {
  // Seen on a loaded machine: vmauth started at :50, the writer read its start-up stamp (:50) and wrote at :52.18;
  // vmauth loaded the write at once, but fasttime stamped the load :51, within a second of the start.
  const start = sinceSeconds - 2;
  const kube = await kubeWith([vmauthPage('v1.151.0', { successful: 1, at: start + 1, start })]);
  const baseline = {
    v: 1 as const,
    at: since.toISOString(),
    pods: { 'vm/vmauth-0': { stamp: start, start } },
  };
  const evidence = await vmauthReloadEvidence(kube, selection, since, baseline);
  assert.equal(evidence.state, 'reloaded', evidence.message);
  assert.equal(evidence.pods[0]?.evidence, 'reloadAfterBaseline');
  const noBaseline = await vmauthReloadEvidence(kube, selection, since);
  assert.equal(
    noBaseline.state,
    'waiting',
    'without the baseline, a stamp by the start is still no evidence',
  );
  const restarted = await vmauthReloadEvidence(kube, selection, since, {
    ...baseline,
    pods: { 'vm/vmauth-0': { stamp: start - 10, start: start - 10 } },
  });
  assert.equal(restarted.state, 'waiting', 'a baseline of the process before a restart proves nothing');
});

test('a restarted vmauth is no evidence: its start-up load may have read the old file', async () => {
  const kube = await kubeWith([
    vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds + 20, start: sinceSeconds + 19 }),
  ]);
  const evidence = await vmauthReloadEvidence(kube, selection, since);
  assert.equal(evidence.state, 'waiting');
  assert.match(evidence.message, /has loaded no changed config since; a start-up load is no evidence/);
  const reloadedLater = await vmauthReloadEvidence(
    await kubeWith([
      vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds + 30, start: sinceSeconds + 19 }),
    ]),
    selection,
    since,
  );
  assert.equal(reloadedLater.state, 'reloaded', 'a reload after the start is evidence again');
});

test('A→B→A: a pod that loaded nothing since before the drain serves the restored content', async () => {
  const before = { stamp: sinceSeconds - 60, start: 1000 };
  const kube = await kubeWith([vmauthPage('v1.151.0', { successful: 1, at: before.stamp, start: 1000 })]);
  const baseline = {
    v: 1 as const,
    at: since.toISOString(),
    pods: { 'vm/vmauth-0': before },
    unchanged: { 'vm/vmauth-0': before },
  };
  const evidence = await vmauthReloadEvidence(kube, selection, since, baseline);
  assert.equal(evidence.state, 'reloaded', evidence.message);
  assert.equal(evidence.pods[0]?.evidence, 'unchangedSinceDrain');
  const { unchanged: _, ...withoutUnchanged } = baseline;
  const notBack = await vmauthReloadEvidence(kube, selection, since, withoutUnchanged);
  assert.equal(
    notBack.state,
    'waiting',
    'without content equal to before the drain, an old stamp proves nothing',
  );
});

test('waiting: one pod still serves config loaded before `since`', async () => {
  const kube = await kubeWith([
    vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds + 1 }),
    vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds - 2 }),
  ]);
  const evidence = await vmauthReloadEvidence(kube, selection, since);
  assert.equal(evidence.state, 'waiting');
  assert.match(
    evidence.message,
    /1 of 2 vmauth pods have not loaded the config .*vm\/vmauth-1: it last loaded changed config at 2026-05-01T11:59:58.000Z/,
  );
});

test('a failed last reload is never evidence, even with a recent success timestamp', async () => {
  const kube = await kubeWith([vmauthPage('v1.151.0', { successful: 0, at: sinceSeconds + 10 })]);
  const evidence = await vmauthReloadEvidence(kube, selection, since);
  assert.equal(evidence.state, 'waiting');
  assert.match(evidence.message, /last config reload failed/);
});

test('unsupported: vmauth before v1.94 exposes no reload metrics, and the message says so', async () => {
  const kube = await kubeWith([vmauthPage('v1.79.5')]);
  const evidence = await vmauthReloadEvidence(kube, selection, since);
  assert.equal(evidence.state, 'unsupported');
  assert.match(
    evidence.message,
    /vmauth v1.79.5 exposes no vmauth_config_last_reload_success_timestamp_seconds \(added in vmauth v1.94.0\)/,
  );
});

test('unreachable: a pod not Ready or not answering, or no pod at all, is never skipped', async () => {
  const notReady = await kubeWith(
    [vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds + 1 })],
    (kube) => {
      kube.put(readyPod('vm', 'vmauth-9', labels, { http: 1 }, { ready: false }));
    },
  );
  const first = await vmauthReloadEvidence(notReady, selection, since);
  assert.equal(first.state, 'unreachable');
  assert.match(
    first.message,
    /1 of 2 vmauth pods could not be checked: vm\/vmauth-9: pod vm\/vmauth-9 is not Ready/,
  );

  const closedPort = await servePage('');
  pageServers.pop()?.close();
  const silent = new MemoryKube().put(readyPod('vm', 'vmauth-0', labels, { http: closedPort }));
  const second = await vmauthReloadEvidence(silent, selection, since);
  assert.equal(second.state, 'unreachable');
  assert.match(second.pods[0]?.error ?? '', /ECONNREFUSED/);

  const none = await vmauthReloadEvidence(new MemoryKube(), selection, since);
  assert.equal(none.state, 'unreachable');
  assert.match(none.message, /no vmauth pod matches app=vmauth in namespace vm/);
});

test("the config-reloader's content hash: equal to the Secret's CRC32 is evidence, different means not yet", async () => {
  const config = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x01, 0x02, 0x03]); // gzip bytes, hashed raw
  const hash = crc32(config);
  const setup = async (reloaderHash: number, vmauthAt: number) => {
    const kube = new MemoryKube().put(secret('vm', 'vmauth-config-main', { 'config.yaml.gz': config }));
    kube.put(
      readyPod('vm', 'vmauth-0', labels, {
        http: await servePage(vmauthPage('v1.151.0', { successful: 1, at: vmauthAt })),
        'reloader-http': await servePage(`configreloader_reload_content_hash{key="main"} ${reloaderHash}\n`),
      }),
    );
    return kube;
  };
  const reloader = {
    port: 'reloader-http',
    configSecret: { name: 'vmauth-config-main', key: 'config.yaml.gz' },
  };
  const matching = await vmauthReloadEvidence(
    await setup(hash, sinceSeconds - 100),
    { ...selection, reloader },
    since,
  );
  assert.equal(matching.state, 'reloaded', matching.message);
  assert.equal(matching.pods[0]?.evidence, 'configHash');

  const stale = await vmauthReloadEvidence(
    await setup(hash + 1, sinceSeconds + 100),
    { ...selection, reloader },
    since,
  );
  assert.equal(stale.state, 'waiting', 'a recent timestamp does not beat a hash that shows other content');
  assert.match(
    stale.message,
    new RegExp(`confirmed content hash ${hash + 1}, the Secret's content hashes to ${hash}`),
  );
});

/** A stand-in for a zone cluster's API server: serves its pods' pages at the pod proxy path, for one token. */
async function podProxyServer(
  pages: Record<string, string>,
  refuse = false,
): Promise<{ server: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((request, response) => {
    seen.push(`${request.headers.authorization} ${request.url}`);
    const match = /^\/api\/v1\/namespaces\/vm\/pods\/http:([^:]+):\d+\/proxy\/metrics$/.exec(
      request.url ?? '',
    );
    if (refuse || request.headers.authorization !== 'Bearer zone-token' || match === null) {
      response.writeHead(403, { 'content-type': 'application/json' });
      response.end('{\n  "kind": "Status",\n  "apiVersion": "v1",\n  "status": "Failure",\n  "code": 403\n}');
      return;
    }
    response.end(pages[match[1] as string] ?? '');
  });
  pageServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

test("a vmauth in a registered cluster in pod access proxy is scraped through that cluster's API server", async () => {
  const page = vmauthPage('v1.151.0', { successful: 1, at: sinceSeconds + 1 });
  const proxy = await podProxyServer({ 'vmauth-0': page });
  // The pod's own address answers nothing: only the proxy path can give evidence.
  const kube = Object.assign(new MemoryKube(), { registration: zoneCluster(proxy.server) });
  kube.put(readyPod('vm', 'vmauth-0', labels, { http: 9 }, { ip: '192.0.2.77' }));
  const evidence = await vmauthReloadEvidence(kube, selection, since);
  assert.equal(evidence.state, 'reloaded', evidence.message);
  assert.deepEqual(proxy.seen, [
    'Bearer zone-token /api/v1/namespaces/vm/pods/http:vmauth-0:9/proxy/metrics',
  ]);
  const stamps = await vmauthReloadStamps(kube, [selection]);
  assert.deepEqual(stamps['vm/vmauth-0'], { stamp: sinceSeconds + 1, start: 1000 });

  // Pod access direct: the pod's address, not the API server.
  const direct = Object.assign(new MemoryKube(), {
    registration: { ...zoneCluster(proxy.server), podAccess: 'direct' as const },
  });
  direct.put(readyPod('vm', 'vmauth-0', labels, { http: await servePage(page) }));
  assert.equal((await vmauthReloadEvidence(direct, selection, since)).state, 'reloaded');
  assert.equal(proxy.seen.length, 2, 'the direct scrape did not go through the API server');
});

test('a refused pod proxy (403) is never evidence: the message names the missing pods/proxy grant, not the token', async () => {
  const proxy = await podProxyServer({}, true);
  const kube = Object.assign(new MemoryKube(), { registration: zoneCluster(proxy.server) });
  kube.put(readyPod('vm', 'vmauth-0', labels, { http: 9 }, { ip: '192.0.2.77' }));
  const evidence = await vmauthReloadEvidence(kube, selection, since);
  assert.equal(evidence.state, 'unreachable');
  assert.match(evidence.message, /cluster cluster-b's API server refused the pod proxy \(HTTP 403\)/);
  assert.match(evidence.message, /needs get on pods\/proxy in namespace vm/);
  assert.doesNotMatch(evidence.message, /zone-token/);
});
