// A drain's end holds against vmauth's retries (issue 37 item 5), on the sandbox with a real vmauth (v1.151.0): vmauth
// binds a request to the backend list of the config it arrived under and, when an attempt fails with a
// retry_status_codes answer, retries the next backend of that OLD list (app/vmauth/main.go processRequest), the
// drained zone included. Here the list is [zone-b, zone-a] (first_available, retry_status_codes [503]); zone-b is
// reached through a proxy that holds one marked query for 10 s and then answers 503, zone-a through a proxy that
// records every request. The marked query is accepted before zone-a's drain; its retry reaches zone-a 10 s later.
// A drain that ended on the zone's own idle readings alone said Successful seconds before that retry (the test
// failed on main, daa2c84: the retry reached zone-a after the drain ended); the drain must end only after it.
// Run `npm run build` first (the sandbox configures the plugin in the real Argo Rollouts controller).

import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { eventually, parkedRollout, sandboxKube, zoneSpec } from './harness.ts';
import { helmConfig, helmSecret, helmUser, startHelmVmauth } from './helm-vmauth.ts';

let sandbox: Sandbox;
let kube: KubeObjects;
const report: string[] = [];

before(async () => {
  sandbox = await startSandbox({ zones: 2, podRestartSeconds: 2, plugin: true });
  kube = sandboxKube(sandbox);
});

after(async () => {
  console.log(`\n---- vmauth retry e2e figures ----\n${report.join('\n')}\n`);
  if (sandbox) await sandbox.stop();
});

/** The query whose first attempt fails: its URL carries this marker. */
const marker = 'vmzones_retry_probe';
/** How long zone-b's proxy holds the marked query before answering 503: longer than a drain takes to be proven. */
const holdMs = 10_000;

interface Seen {
  at: number;
  url: string;
}

/** A loopback HTTP proxy in front of a zone's process: records every request; `fails` ones are held `holdMs` and
 *  answered 503 (a retry_status_codes status) instead of being forwarded. */
async function startZoneProxy(
  target: number,
  fails: (url: string) => boolean = () => false,
): Promise<{ port: number; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const held = new Set<NodeJS.Timeout>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    seen.push({ at: Date.now(), url });
    if (fails(url)) {
      const timer = setTimeout(() => {
        held.delete(timer);
        res.writeHead(503, { 'content-type': 'text/plain' }).end('held, then unavailable');
      }, holdMs);
      held.add(timer);
      return;
    }
    const upstream = httpRequest(
      { host: '127.0.0.1', port: target, method: req.method, path: url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (error) => res.writeHead(502).end(String(error)));
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    async close() {
      for (const timer of held) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const zonePort = (vmcluster: string) => Number(new URL(sandbox.endpoint('VMCluster', vmcluster).url).port);

/** The chart users' config with zone-b first and a failed attempt retried on the next backend (zone-a). */
function retryConfig(): string {
  const config = helmConfig(['vm-zone-b', 'vm-zone-a']);
  const policy = '        load_balancing_policy: least_loaded\n';
  assert.ok(config.includes(policy), 'helmConfig names its load-balancing policy');
  return config.replace(
    policy,
    '        load_balancing_policy: first_available\n        retry_status_codes: [503]\n',
  );
}

test('a query vmauth accepted before the drain and retried on the drained zone reaches it before the drain ends, never after', async (t) => {
  const proxyA = await startZoneProxy(zonePort('vm-zone-a'));
  const proxyB = await startZoneProxy(zonePort('vm-zone-b'), (url) => url.includes(marker));
  t.after(() => Promise.all([proxyA.close(), proxyB.close()]));
  const helm = await startHelmVmauth(sandbox, kube, ['vm-zone-a', 'vm-zone-b'], {
    config: retryConfig(),
    ports: { 'vm-zone-a': proxyA.port, 'vm-zone-b': proxyB.port },
  });
  t.after(() => helm.stop());
  const spec = zoneSpec(
    {},
    {
      vmauth: [
        {
          secret: helmSecret,
          pods: [{ labelSelector: 'app=helm-vmauth', port: 'http' }],
          drainGracePeriod: '40s',
        },
      ],
      zones: { 'zone-a': { vmcluster: 'vm-zone-a' }, 'zone-b': { vmcluster: 'vm-zone-b' } },
    },
  );
  const view = await parkedRollout(sandbox, kube, 'retry', 'zone-a', spec);
  const plugin = createZoneStepPlugin({ kube, reconciler: false, logger: silentLogger, inCallWaitMs: 5000 });
  const run = (action: string, status?: unknown): Promise<StepResult> =>
    plugin.run(view, { pluginName: 'vmzones/step', config: { zone: 'zone-a', action }, status });

  const auth = `Basic ${Buffer.from(`${helmUser.username}:${helmUser.password}`).toString('base64')}`;
  const plain = await fetch(`${helm.url}/api/v1/query?query=up`, { headers: { authorization: auth } });
  assert.equal(plain.status, 200, 'an unmarked query is answered through zone-b');
  const sentAt = Date.now();
  const probe = fetch(`${helm.url}/api/v1/query?query=${marker}`, { headers: { authorization: auth } }).then(
    async (answer) => ({ status: answer.status, at: Date.now(), body: await answer.text() }),
  );
  await eventually(
    'the marked query to reach zone-b (held there)',
    async () => (proxyB.seen.some((s) => s.url.includes(marker)) ? true : undefined),
    5000,
    50,
  );

  let result: StepResult | undefined;
  const drainStarted = Date.now();
  while (Date.now() - drainStarted < 60_000) {
    result = await run('drainReads', result?.status);
    if (result.phase === 'Failed') assert.fail(`drainReads failed: ${result.message}`);
    if (result.phase === 'Successful') break;
  }
  const returnedAt = Date.now();
  assert.equal(result?.phase, 'Successful', `drainReads: ${result?.message}`);
  const status = (result?.status ?? {}) as Record<string, string>;
  // The drain ends at the last of its idle readings, which its message stamps to the millisecond (the status's
  // queriesDoneAt is whole seconds); when it ended otherwise, when the call returned.
  const lastReading = /in \d+ readings from \S+ to (\S+),/.exec(result?.message ?? '')?.[1];
  const endedAt = Math.min(returnedAt, Date.parse(lastReading ?? '') || returnedAt);

  const answer = await probe;
  assert.equal(
    answer.status,
    200,
    `the marked query was answered after its retry: ${answer.body.slice(0, 200)}`,
  );
  const retries = proxyA.seen.filter((s) => s.url.includes(marker));
  assert.equal(
    retries.length,
    1,
    'vmauth retried the marked query on zone-a, from the list it accepted it under',
  );
  const retryAt = retries[0]?.at ?? 0;
  report.push(
    `marked query sent at +0 ms; held at zone-b ${holdMs} ms; retried on zone-a at +${retryAt - sentAt} ms; drain started +${drainStarted - sentAt} ms, ended +${endedAt - sentAt} ms (${endedAt - retryAt} ms after the retry) (${status.queriesDoneAt === undefined ? 'grace' : 'queries'}); the drain said: ${result?.message}`,
  );
  assert.ok(
    retryAt < endedAt,
    `the retry reached the drained zone-a ${retryAt - endedAt} ms after the drain ended (${new Date(endedAt).toISOString()}): ${result?.message}`,
  );
  const afterEnd = proxyA.seen.filter((s) => s.at > endedAt);
  assert.deepEqual(afterEnd, [], 'nothing reached the drained zone-a after the drain ended');
  assert.ok(
    status.queriesDoneAt !== undefined,
    `the drain ended on the readings, not the grace period: ${result?.message}`,
  );

  let restored: StepResult | undefined;
  while (restored?.phase !== 'Successful') {
    restored = await run('restoreReads', restored?.status);
    if (restored.phase === 'Failed') assert.fail(`restoreReads failed: ${restored.message}`);
  }
});
