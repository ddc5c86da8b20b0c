// The fault proxy against a real TLS peer that demands the sandbox's client certificate (the PKI comes from
// `sandboxctl pki`, as for the real sandbox): forwarding, each fault kind before and after the upstream
// applied the request, seeded rates, limits, the control API and the counts the reliability suite reads.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { binaryPath, targets } from '../env/build.ts';
import {
  classify,
  duplicateSpecPatches,
  type FaultConfig,
  FaultControl,
  type FaultProxy,
  startFaultProxy,
} from './fault-proxy.ts';

const pkiDir = mkdtempSync(join(tmpdir(), 'fault-proxy-pki-'));
const sandboxctlTarget = targets.find((t) => t.name === 'sandboxctl');
const sandboxctl = sandboxctlTarget === undefined ? '' : binaryPath(sandboxctlTarget);

interface Seen {
  method: string;
  url: string;
  body: string;
  clientCn: string | undefined;
}

const seen: Seen[] = [];
let generation = 1;
let upstream: Server;

function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
  const cert = (req.socket as TLSSocket).getPeerCertificate();
  seen.push({ method: req.method ?? '', url: req.url ?? '', body, clientCn: String(cert?.subject?.CN) });
  if (req.method === 'PATCH') generation++;
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ kind: 'VMCluster', metadata: { name: 'zone-a', generation }, echo: body }));
}

interface Answer {
  status?: number;
  body?: string;
  error?: string;
}

let proxy: FaultProxy;

function call(method: string, path: string, body = '', timeoutMs = 3000): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request(
      `${proxy.url}${path}`,
      {
        method,
        ca: readFileSync(join(pkiDir, 'ca.crt')),
        cert: readFileSync(join(pkiDir, 'admin.crt')),
        key: readFileSync(join(pkiDir, 'admin.key')),
        headers: { 'content-type': 'application/merge-patch+json', 'user-agent': 'vmzones-test/1' },
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
        res.on('error', (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
      },
    );
    req.on('error', (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.name }));
    req.end(body);
  });
}

const vmclusterPath = '/apis/operator.victoriametrics.com/v1beta1/namespaces/vm/vmclusters/zone-a';
const specPatch = (version: string) =>
  JSON.stringify({ metadata: { resourceVersion: '7' }, spec: { clusterVersion: version } });

before(async () => {
  assert.ok(existsSync(sandboxctl), `sandboxctl is not built (${sandboxctl}): run npm run env:build`);
  execFileSync(sandboxctl, ['pki', '--dir', pkiDir]);
  // Like kube-apiserver --client-ca-file: a client without a certificate of this CA is refused.
  upstream = createServer(
    {
      cert: readFileSync(join(pkiDir, 'apiserver.crt')),
      key: readFileSync(join(pkiDir, 'apiserver.key')),
      ca: readFileSync(join(pkiDir, 'ca.crt')),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url?.endsWith('/cut-off')) {
          // An answer the API server starts and never finishes (it went away mid-body).
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{"kind":"VMCluster",');
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        }
        answer(req, res, Buffer.concat(chunks).toString());
      });
    },
  );
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  proxy = await startFaultProxy({ upstream: upstreamUrl, pkiDir });
});

after(async () => {
  await proxy?.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
  rmSync(pkiDir, { recursive: true, force: true });
});

function reset(config: FaultConfig = { seed: 1, rules: [] }): void {
  proxy.setConfig(config);
  proxy.resetStats();
  seen.length = 0;
}

describe('classify', () => {
  it('names verbs and resources as kube-apiserver does', () => {
    const cases: Array<[string, string, string, string, string, string]> = [
      ['GET', vmclusterPath, 'get', 'vmclusters', 'vm', 'zone-a'],
      [
        'GET',
        '/apis/operator.victoriametrics.com/v1beta1/namespaces/vm/vmclusters',
        'list',
        'vmclusters',
        'vm',
        '',
      ],
      ['GET', '/api/v1/namespaces/vm/pods?watch=true', 'watch', 'pods', 'vm', ''],
      ['PATCH', `${vmclusterPath}?dryRun=All`, 'patch', 'vmclusters', 'vm', 'zone-a'],
      [
        'PUT',
        '/apis/argoproj.io/v1alpha1/namespaces/vm/rollouts/r/status',
        'update',
        'rollouts/status',
        'vm',
        'r',
      ],
      ['GET', '/api/v1/nodes/n1', 'get', 'nodes', '', 'n1'],
      ['DELETE', '/api/v1/namespaces/vm/pods', 'deletecollection', 'pods', 'vm', ''],
      ['GET', '/apis/operator.victoriametrics.com/v1beta1', 'discovery', '', '', ''],
      ['GET', '/version', 'discovery', '', '', ''],
    ];
    for (const [method, url, verb, resource, namespace, name] of cases) {
      const info = classify(method, url);
      assert.deepEqual(
        [info.verb, info.resource, info.namespace, info.name],
        [verb, resource, namespace, name],
        url,
      );
    }
    assert.equal(classify('PATCH', `${vmclusterPath}?dryRun=All`).dryRun, true);
  });
});

describe('fault proxy', () => {
  it('forwards with the admin client certificate and counts by verb and resource', async () => {
    reset();
    const got = await call('GET', vmclusterPath);
    assert.equal(got.status, 200);
    assert.equal(seen.length, 1);
    assert.equal(
      seen[0]?.clientCn,
      'vmzones-sandbox-admin',
      'the proxy presents the admin client certificate',
    );
    const patched = await call('PATCH', vmclusterPath, specPatch('v1'));
    assert.equal(patched.status, 200);
    assert.equal(
      JSON.parse(patched.body ?? '{}').echo,
      specPatch('v1'),
      'the body reached the upstream intact',
    );
    const stats = proxy.stats();
    assert.deepEqual(stats.requests, { 'get vmclusters': 1, 'patch vmclusters': 1 });
    assert.equal(stats.faultsTotal, 0);
    assert.deepEqual(stats.userAgents, { 'vmzones-test/1': 2 });
    assert.equal(stats.specPatches.length, 1);
    assert.equal(stats.specPatches[0]?.status, 200);
    assert.equal(stats.specPatches[0]?.generation, generation);
  });

  it('answers a Kubernetes Status for 409/429/500/503 on chosen verbs and resources, without forwarding', async () => {
    for (const [fault, code, reason] of [
      ['status409', 409, 'Conflict'],
      ['status429', 429, 'TooManyRequests'],
      ['status500', 500, 'InternalError'],
      ['status503', 503, 'ServiceUnavailable'],
    ] as const) {
      reset({ seed: 1, rules: [{ faults: [fault], rate: 1, verbs: ['patch'], resources: ['vmclusters'] }] });
      const got = await call('PATCH', vmclusterPath, specPatch('v2'));
      assert.equal(got.status, code);
      const status = JSON.parse(got.body ?? '{}') as { kind: string; reason: string; code: number };
      assert.deepEqual([status.kind, status.reason, status.code], ['Status', reason, code]);
      assert.equal(seen.length, 0, `${fault} before forwarding: the upstream saw nothing`);
      assert.equal((await call('GET', vmclusterPath)).status, 200, 'a GET does not match the rule');
      assert.deepEqual(proxy.stats().faults, { [`${fault}/before patch vmclusters`]: 1 });
      assert.equal(proxy.stats().specPatches[0]?.status, 0);
    }
  });

  it('"after": the upstream applies the patch, the client sees the fault; a retry is a duplicate spec patch', async () => {
    reset({
      seed: 1,
      rules: [{ faults: ['status500'], rate: 1, verbs: ['patch'], limit: 1, when: 'after' }],
    });
    const first = await call('PATCH', vmclusterPath, specPatch('v3'));
    assert.equal(first.status, 500);
    assert.equal(seen.length, 1, 'the write reached the upstream');
    const retry = await call('PATCH', vmclusterPath, specPatch('v3'));
    assert.equal(retry.status, 200, 'the limit of 1 stops the rule');
    const other = await call('PATCH', vmclusterPath, specPatch('v4'));
    assert.equal(other.status, 200);
    const stats = proxy.stats();
    assert.deepEqual(
      stats.specPatches.map((p) => [p.status, p.fault ?? '']),
      [
        [200, 'status500/after'],
        [200, ''],
        [200, ''],
      ],
    );
    const duplicates = duplicateSpecPatches(stats.specPatches);
    assert.equal(duplicates.length, 1);
    assert.deepEqual(duplicates[0]?.spec, { clusterVersion: 'v3' });
    // A dry run is not an applied patch.
    await call('PATCH', `${vmclusterPath}?dryRun=All`, specPatch('v4'));
    assert.equal(duplicateSpecPatches(proxy.stats().specPatches).length, 1);
  });

  it('resets the connection, before or after forwarding', async () => {
    for (const when of ['before', 'after'] as const) {
      reset({ seed: 1, rules: [{ faults: ['reset'], rate: 1, resources: ['vmclusters'], when }] });
      const got = await call('GET', vmclusterPath);
      assert.equal(got.status, undefined, `${when}: no answer`);
      assert.match(got.error ?? '', /ECONNRESET|socket hang up/);
      assert.equal(seen.length, when === 'after' ? 1 : 0);
    }
  });

  it('an answer cut off upstream ends the client’s answer, with or without a fault after it, and the proxy goes on', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      for (const rules of [
        [],
        [{ faults: ['status500' as const], rate: 1, limit: 1, when: 'after' as const }],
      ]) {
        reset({ seed: 1, rules });
        const got = await call('GET', `${vmclusterPath}/cut-off`);
        assert.notEqual(got.status, 500, 'no fault answer for a request whose upstream answer broke');
        assert.ok(got.error !== undefined || got.body !== undefined);
        assert.equal((await call('GET', vmclusterPath)).status, 200, 'the proxy still forwards');
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(rejections, [], 'the broken upstream answer was handled');
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it('hangs until the client gives up, or drops the connection after hangMs', async () => {
    reset({ seed: 1, hangMs: 60_000, rules: [{ faults: ['hang'], rate: 1 }] });
    const started = Date.now();
    const got = await call('GET', vmclusterPath, '', 400);
    assert.equal(got.status, undefined);
    assert.ok(Date.now() - started >= 390, 'no answer before the client timed out');
    reset({ seed: 1, hangMs: 200, rules: [{ faults: ['hang'], rate: 1 }] });
    const dropped = await call('GET', vmclusterPath, '', 3000);
    assert.match(dropped.error ?? '', /ECONNRESET|socket hang up/);
  });

  it('fires at the configured rate, the same requests for the same seed', async () => {
    const run = async (seed: number) => {
      reset({ seed, rules: [{ faults: ['status503', 'status429'], rate: 0.1 }] });
      const outcomes: number[] = [];
      for (let i = 0; i < 200; i++) outcomes.push((await call('GET', vmclusterPath)).status ?? 0);
      return outcomes;
    };
    const a = await run(42);
    const faults = a.filter((s) => s !== 200).length;
    assert.ok(faults >= 8 && faults <= 35, `10% of 200 requests, got ${faults}`);
    assert.equal(proxy.stats().faultsTotal, faults);
    assert.ok(a.includes(503) && a.includes(429), 'both kinds drawn');
    assert.deepEqual(await run(42), a, 'same seed, same faults');
    assert.notDeepEqual(await run(43), a, 'another seed, other faults');
  });

  it('is switched through its control API; a bad config is refused naming the field', async () => {
    reset();
    const control = new FaultControl(proxy.controlUrl);
    await control.set({ seed: 5, rules: [{ faults: ['status500'], rate: 1, verbs: ['get'] }] });
    assert.equal((await call('GET', vmclusterPath)).status, 500);
    assert.equal((await control.stats()).faultsTotal, 1);
    await control.clear();
    assert.equal((await call('GET', vmclusterPath)).status, 200);
    await assert.rejects(
      control.set({ seed: 1, rules: [{ faults: ['explode' as 'reset'], rate: 1 }] }),
      /HTTP 400.*rules\[0\]\.faults: \\"explode\\" is not one of/,
    );
    await assert.rejects(
      control.set({ seed: 1, rules: [{ faults: ['reset'], rate: 2 }] }),
      /rules\[0\]\.rate/,
    );
    const cleared = await control.reset();
    assert.equal(cleared.requestsTotal, 0);
  });
});
