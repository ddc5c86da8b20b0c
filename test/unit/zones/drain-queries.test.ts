// The drain ends when the zone's queries in flight are done (issue 26 item 1): after vmauth proves it no longer
// routes to the zone, drainReads reads the zone's vmselect pods' vm_concurrent_select_current and ends the drain
// once two readings ≥ 0.5 s apart show none, with drainGracePeriod as the upper bound and the fallback where the pods
// give no reading. The vmselect pod is a page server on loopback; time is the fake clock.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { registersGaugeLazily } from '../../../plugin/vm/vmauth-requests.ts';
import { FakeClock } from '../fake-clock.ts';
import { readyPod } from '../kube/memory-kube.ts';
import { serveChangingPage } from '../vm/page-server.ts';
import {
  ns,
  operatorVmauthLabels,
  rolloutObject,
  specDocument,
  stepPluginOf,
  threeZones,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

/** The operator's labels of VMCluster vm-zone-a's vmselect pods (plugin/vm/queries-in-flight.ts). */
const vmselectLabels = {
  'app.kubernetes.io/name': 'vmselect',
  'app.kubernetes.io/instance': 'vm-zone-a',
  'app.kubernetes.io/component': 'monitoring',
  'managed-by': 'vm-operator',
};

function selectPage(inFlight: number | undefined): string {
  return [
    'vm_concurrent_select_capacity 8',
    ...(inFlight === undefined ? [] : [`vm_concurrent_select_current ${inFlight}`]),
    'vm_app_version{version="victoria-metrics-v1.151.0", short_version="v1.151.0"} 1',
    '',
  ].join('\n');
}

/** Zone a with one vmselect pod whose page says what `inFlight` returns at each reading; drainGracePeriod 30s. */
async function walk(
  inFlight: () => number | undefined,
  options: {
    drainQueryCheck?: string;
    port?: number;
    /** vmauth's vmauth_concurrent_requests_current at each reading (undefined: not exposed); default 0. */
    vmauthInFlight?: () => number | undefined;
    /** vmauth's vm_app_version short_version; default none on the page. */
    vmauthVersion?: string;
  } = {},
) {
  const kube = threeZones(vmauth.port);
  const doc = JSON.parse(specDocument()) as { vmauth: Record<string, unknown> };
  doc.vmauth.drainGracePeriod = '30s';
  if (options.drainQueryCheck !== undefined) doc.vmauth.drainQueryCheck = options.drainQueryCheck;
  kube.put(rolloutObject('walk', { currentPodHash: 'rev2', stableRS: 'rev1' }, JSON.stringify(doc)));
  let readings = 0;
  const port =
    options.port ??
    (await serveChangingPage(() => {
      readings += 1;
      const value = inFlight();
      order.push(`vmselect ${value}`);
      return selectPage(value);
    }));
  kube.put(readyPod(ns, 'vmselect-vm-zone-a-0', vmselectLabels, { http: port }));
  // A vmauth whose reload stamp stops moving once frozen, as a real one's does after it loaded the drain.
  let stamp = 0;
  let frozen = false;
  const order: string[] = [];
  const vmauthPort = await serveChangingPage(() => {
    if (!frozen) stamp = Math.floor(clock.now().getTime() / 1000);
    const requests = (options.vmauthInFlight ?? (() => 0))();
    order.push(`vmauth ${requests}`);
    return [
      'vmauth_config_last_reload_successful 1',
      `vmauth_config_last_reload_success_timestamp_seconds ${stamp}`,
      ...(requests === undefined ? [] : [`vmauth_concurrent_requests_current ${requests}`]),
      ...(options.vmauthVersion === undefined
        ? []
        : [
            `vm_app_version{version="vmauth-${options.vmauthVersion}", short_version="${options.vmauthVersion}"} 1`,
          ]),
      '',
    ].join('\n');
  });
  kube.put(
    readyPod(ns, 'vmauth-0', { app: 'vmauth', ...operatorVmauthLabels('vmauth') }, { http: vmauthPort }),
  );
  const { call } = stepPluginOf(kube, clock, { inCallWaitMs: 5_000 });
  return {
    call,
    readings: () => readings,
    /** Every page served, in order: `vmauth <requests>` or `vmselect <queries>`. */
    order,
    freezeVmauth: () => {
      frozen = true;
    },
  };
}

const status = (result: StepResult) => result.status as Record<string, string>;

test('queries in flight, then none: the drain ends at the second idle reading, long before the grace period', async () => {
  const sequence = [2, 1, 0, 0];
  const { call, readings } = await walk(() => sequence.shift() ?? 0);
  const started = clock.now().getTime();
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Successful', result.message);
  assert.equal(readings(), 4, 'busy, busy, idle, idle: four readings');
  assert.match(
    result.message ?? '',
    /no query executes on the 1 vmselect pod in 2 readings from .* so the drain ends before the grace period 30s/,
  );
  const doneAt = Date.parse(status(result).queriesDoneAt ?? '');
  assert.ok(doneAt < Date.parse(status(result).graceUntil ?? ''), 'ended before graceUntil');
  assert.ok(clock.now().getTime() - started < 10_000, 'within one call, not 30 s');
  // The two idle readings are half a second apart: a query forwarded just before vmauth's reload reaches the
  // pod within milliseconds (docs/step-plugin.md, "When the drain ends"), and a longer wait only delays the change.
  const [, from, to] = /in 2 readings from (\S+) to (\S+),/.exec(result.message ?? '') ?? [];
  assert.equal(Date.parse(to ?? '') - Date.parse(from ?? ''), 500, 'idle readings 0.5 s apart');
});

test('one idle reading is not enough: a query that arrives before the second keeps the drain going', async () => {
  const sequence = [0, 1, 0, 3, 5, 5, 5];
  const { call } = await walk(() => sequence.shift() ?? 5);
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.equal(status(result).state, 'queriesInFlight');
  assert.match(
    result.message ?? '',
    /queries still in flight: vm\/vmselect-vm-zone-a-0: 5 \(vm_concurrent_select_current\)/,
  );
  assert.match(result.message ?? '', /at the latest when the grace period 30s ends/);
});

test('queries that never end: the grace period is the upper bound', async () => {
  const { call, freezeVmauth } = await walk(() => 1);
  let result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Running', result.message);
  freezeVmauth();
  clock.advance(30_000);
  result = await call('run', 'zone-a', 'drainReads', result);
  assert.equal(result.phase, 'Successful', result.message);
  assert.match(result.message ?? '', /grace period 30s over/);
  assert.equal(status(result).queriesDoneAt, undefined);
});

test('a vmselect without the gauge: no reading, the whole grace period, and the step says why', async () => {
  const { call } = await walk(() => undefined);
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.equal(status(result).state, 'grace');
  assert.match(
    result.message ?? '',
    /no reading of the queries in flight \(pod vm\/vmselect-vm-zone-a-0 exposes no vm_concurrent_select_current\), so the whole grace period is waited/,
  );
});

test('an unreachable vmselect pod: the whole grace period, naming the pod', async () => {
  // A port nobody listens on: the page server is closed again at once.
  const closed = await serveChangingPage(() => '');
  const { pageServers } = await import('../vm/page-server.ts');
  await new Promise((resolve) => pageServers.at(-1)?.close(resolve));
  const { call } = await walk(() => 0, { port: closed });
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.equal(status(result).state, 'grace');
  assert.match(
    result.message ?? '',
    /no reading of the queries in flight \(scraping http:\/\/127\.0\.0\.1:\d+\/metrics: /,
  );
});

test('drainQueryCheck grace: the pods are not read, the whole grace period is waited', async () => {
  const { call, readings } = await walk(() => 0, { drainQueryCheck: 'grace' });
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.equal(status(result).state, 'grace');
  assert.equal(readings(), 0);
});

// vmauth keeps a request it accepted under the config before the drain, and retries it on the next backend of that
// config's list, the drained zone included (vmauth v1.151.0 app/vmauth/main.go processRequest): the zone's idle
// readings count only once every vmauth pod showed no request in flight after its reload (issue 37 item 5).
test('a request vmauth accepted before the drain is still in flight: the zone showing none does not end the drain', async () => {
  const requests = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
  const { call, order } = await walk(() => 0, { vmauthInFlight: () => requests.shift() ?? 1 });
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.equal(status(result).state, 'queriesInFlight');
  assert.equal(status(result).queriesDoneAt, undefined);
  assert.match(
    result.message ?? '',
    /vmauth still executes requests, any of which may have been accepted before the drain and may retry on the zone: vm\/vmauth-0: 1 \(vmauth_concurrent_requests_current\)/,
  );
  assert.ok(!order.some((page) => page.startsWith('vmselect')), 'the zone is not read while vmauth is busy');
});

test('vmauth’s old request ends (it retried on the zone meanwhile): the zone is read after that, and the drain ends on two idle readings', async () => {
  // The proof's scrape shows 1, then two busy readings, then 0; the retry lands on the zone meanwhile, so the zone
  // reads 1 at first.
  const requests = [1, 1, 1, 0];
  const zone = [1, 0, 0];
  const { call, order } = await walk(() => zone.shift() ?? 0, {
    vmauthInFlight: () => requests.shift() ?? 0,
  });
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Successful', result.message);
  assert.ok(status(result).queriesDoneAt !== undefined);
  assert.match(
    result.message ?? '',
    /no request left in vmauth from before the drain: each of the 1 vmauth pod showed none in flight \(vmauth_concurrent_requests_current 0\) in 2 readings 0\.5 s apart after its reload; then no query executes on the 1 vmselect pod in 2 readings/,
  );
  const lastVmauth = order.lastIndexOf('vmauth 0');
  const firstVmselect = order.findIndex((page) => page.startsWith('vmselect'));
  assert.ok(
    lastVmauth >= 0 && firstVmselect > lastVmauth,
    `vmauth idle before the zone is read: ${order.join(', ')}`,
  );
  assert.deepEqual(order.slice(firstVmselect), ['vmselect 1', 'vmselect 0', 'vmselect 0']);
});

test('a vmauth without vmauth_concurrent_requests_current: no reading, the whole grace period, and the step says why', async () => {
  const { call, readings } = await walk(() => 0, { vmauthInFlight: () => undefined });
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.equal(status(result).state, 'grace');
  assert.match(
    result.message ?? '',
    /no reading of vmauth's requests in flight \(pod vm\/vmauth-0 exposes no vmauth_concurrent_requests_current\), so the whole grace period is waited/,
  );
  assert.equal(readings(), 0, 'the zone is not read');
});

test('one reading of 0 on vmauth is not enough: a request between its arrival and its slot is seen only by a later reading', async () => {
  // The proof's scrape, then 0 once, then busy for good: the drain does not end on the lone 0.
  const requests = [1, 0];
  const { call, order } = await walk(() => 0, { vmauthInFlight: () => requests.shift() ?? 2 });
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.equal(status(result).state, 'queriesInFlight');
  assert.match(result.message ?? '', /vm\/vmauth-0: 2 \(vmauth_concurrent_requests_current\)/);
  assert.ok(!order.some((page) => page.startsWith('vmselect')), 'the zone is not read');
});

test('vmauth v1.151.0 registers the gauge at its first user request: without it, that version has served none (0), an older or unknown one gives no reading', async () => {
  const { call } = await walk(() => 0, { vmauthInFlight: () => undefined, vmauthVersion: 'v1.151.0' });
  const result = await call('run', 'zone-a', 'drainReads');
  assert.equal(result.phase, 'Successful', result.message);
  assert.match(result.message ?? '', /no request left in vmauth from before the drain/);
  assert.deepEqual(
    ['v1.151.0', 'v1.151.1', 'v1.152.0-enterprise', 'v2.0.0', 'v1.150.9', 'v1.79.5', 'devel', undefined].map(
      registersGaugeLazily,
    ),
    [true, true, true, true, false, false, false, false],
  );
});
