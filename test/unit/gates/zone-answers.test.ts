// Gate zoneAnswers over an in-memory API (MemoryKube), local HTTP servers standing in for the zones' vmselect pods
// and the provider's clock moved by the test: the zone answers as the serving zone does (pass), answers with less
// data (waits, then fails naming the query, both answers and the zone), does not answer or answers too slowly,
// which zone serves as the reference, the window, and the config's problems.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { answerDifferences, percent } from '../../../plugin/gates/answer-match.ts';
import { parseGateConfig } from '../../../plugin/gates/config.ts';
import { createGatesProvider, metadataKeys } from '../../../plugin/gates/provider.ts';
import type { AnalysisRunView, MeasurementResult, MetricView } from '../../../plugin/rollouts/types.ts';
import { zoneComponentSelector } from '../../../plugin/vm/queries-in-flight.ts';
import { defaultZoneQueries, userZoneQuery } from '../../../plugin/vm/zone-query.ts';
import { MemoryKube, readyPod } from '../kube/memory-kube.ts';
import { ownedRun } from './owned-run.ts';

const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

const vmApi = 'operator.victoriametrics.com/v1beta1';
const specDocument = [
  'vmauth: {vmuser: vmauth-read}',
  'vmagent: {vmagent: vmagent}',
  'zones:',
  '  zone-a: {vmcluster: vm-zone-a}',
  '  zone-b: {vmcluster: vm-zone-b}',
  '  zone-c: {vmcluster: vm-zone-c}',
].join('\n');
const run: AnalysisRunView = { metadata: { name: 'ro-abc-3', namespace: 'vm' }, spec: {}, status: {} };
const start = Date.UTC(2026, 4, 1, 12, 0, 0);

function metric(config: Record<string, unknown>): MetricView {
  return {
    name: 'zone-answers',
    provider: { plugin: { 'vmzones/gates': { gate: 'zoneAnswers', ...config } } },
  };
}

interface Asked {
  path: string;
  query: string;
  time: string;
  nocache: string | null;
}

/** A vmselect pod: answers every instant query with `answer(query)` (a vector of `{labels: value}`), or a status. */
async function vmselect(options: {
  answer: (query: string) => Record<string, number> | { status: number; body: string };
  onRequest?: () => void;
}): Promise<{ port: number; asked: Asked[] }> {
  const asked: Asked[] = [];
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://pod');
    const query = url.searchParams.get('query') ?? '';
    asked.push({
      path: url.pathname,
      query,
      time: url.searchParams.get('time') ?? '',
      nocache: url.searchParams.get('nocache'),
    });
    options.onRequest?.();
    const answer = options.answer(query);
    if ('status' in answer && typeof answer.status === 'number' && 'body' in answer) {
      response.statusCode = answer.status;
      response.end(answer.body);
      return;
    }
    const result = Object.entries(answer as Record<string, number>).map(([labels, value]) => ({
      metric: labels === '{}' ? {} : { job: labels },
      value: [Number(url.searchParams.get('time')), String(value)],
    }));
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, asked };
}

/** Counts as the default queries ask for them: `series` and `samples` of the window. */
const counts =
  (series: number, samples: number) =>
  (query: string): Record<string, number> =>
    query.startsWith('count(') ? { '{}': series } : { '{}': samples };

function zoneObject(name: string, annotations: Record<string, string> = {}, status = 'operational') {
  return {
    apiVersion: vmApi,
    kind: 'VMCluster',
    metadata: { name, namespace: 'vm', generation: 2, annotations },
    status: { updateStatus: status, observedGeneration: 2 },
  };
}

function maintenance(zone: string, since: string): Record<string, string> {
  return {
    'vmzones.io/maintenance': JSON.stringify({ v: 1, zone, since, reason: 'drainReads by Rollout vm/ro' }),
  };
}

function vmselectLabels(name: string): Record<string, string> {
  return Object.fromEntries(
    zoneComponentSelector('vmselect', name)
      .split(',')
      .map((pair) => pair.split('=')),
  );
}

async function world(options: {
  zoneA: Parameters<typeof vmselect>[0];
  zoneB?: Parameters<typeof vmselect>[0];
  zoneBAnnotations?: Record<string, string>;
  zoneBStatus?: string;
  zoneAReady?: boolean;
  spec?: string;
}) {
  const a = await vmselect(options.zoneA);
  const b = await vmselect(options.zoneB ?? { answer: counts(10, 3000) });
  const c = await vmselect({ answer: counts(10, 3000) });
  const kube = ownedRun(new MemoryKube(), { 'vmzones.io/spec': options.spec ?? specDocument })
    .put(zoneObject('vm-zone-a', maintenance('zone-a', '2026-05-01T11:50:00Z')))
    .put(zoneObject('vm-zone-b', options.zoneBAnnotations ?? {}, options.zoneBStatus))
    .put(zoneObject('vm-zone-c'))
    .put(
      readyPod(
        'vm',
        'vmselect-vm-zone-a-0',
        vmselectLabels('vm-zone-a'),
        { http: a.port },
        {
          ready: options.zoneAReady ?? true,
        },
      ),
    )
    .put(readyPod('vm', 'vmselect-vm-zone-b-0', vmselectLabels('vm-zone-b'), { http: b.port }))
    .put(readyPod('vm', 'vmselect-vm-zone-c-0', vmselectLabels('vm-zone-c'), { http: c.port }));
  let now = start;
  const clock = {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
  const provider = createGatesProvider({ kube: () => kube, now: clock.now });
  return { a, b, c, kube, clock, provider };
}

function figuresOf(result: MeasurementResult): Record<string, unknown> {
  return JSON.parse(result.value ?? '{}') as Record<string, unknown>;
}

test('a zone that answers as the serving zone does passes; both are asked the same queries at the same time', async () => {
  const { a, b, c, provider } = await world({ zoneA: { answer: counts(10, 3000) } });
  const result = await provider.run(run, metric({ zone: 'zone-a' }));
  assert.equal(result.phase, 'Successful', result.message);
  assert.match(result.message ?? '', /zone zone-a answers as the serving zone zone-b does over /);
  // The window: from a minute before the zone's walk began (maintenance since 11:50) to 30 s before now.
  const figures = figuresOf(result);
  assert.deepEqual(figures.window, { start: '2026-05-01T11:49:00.000Z', end: '2026-05-01T11:59:30.000Z' });
  assert.equal(figures.servingZone, 'zone-b');
  assert.equal(figures.matched, true);
  const expected = [
    'count(count_over_time({__name__!=""}[630s]))',
    'sum(count_over_time({__name__!=""}[630s]))',
  ];
  for (const pod of [a, b]) {
    assert.deepEqual(
      pod.asked.map((q) => q.query),
      expected,
    );
    for (const q of pod.asked) {
      assert.equal(q.path, '/select/0/prometheus/api/v1/query');
      assert.equal(q.time, `${String((start - 30_000) / 1000)}.000`);
      assert.equal(q.nocache, '1', "no answer from VictoriaMetrics' rollup cache");
    }
  }
  assert.equal(c.asked.length, 0, 'one serving zone is asked');
});

test('a zone that answers with missing samples waits, then fails at the timeout naming the query, both answers and the zone', async () => {
  const { provider, clock } = await world({ zoneA: { answer: counts(10, 2400) } });
  const config = metric({ zone: 'zone-a', timeout: '1m', pollInterval: '5s' });
  const first = await provider.run(run, config);
  assert.equal(first.phase, 'Running', 'it may still be catching up on its queue');
  assert.match(
    first.message ?? '',
    /zone zone-a answers differently from the serving zone zone-b over .* \(tolerance 0\.1%\): query `sum\(count_over_time\(\{__name__!=""\}\[630s\]\)\)`: \{\} = 2400 in the zone, 3000 in the serving zone \(20% apart\)/,
  );
  const figures = figuresOf(first);
  assert.deepEqual(figures.differences, [
    {
      pod: 'vm/vmselect-vm-zone-a-0',
      query: 'samples',
      series: '{}',
      zone: 2400,
      serving: 3000,
      relative: 0.2,
    },
  ]);
  clock.advance(61_000);
  const last = await provider.resume(run, config, { ...first, startedAt: first.startedAt ?? '' });
  assert.equal(last.phase, 'Failed');
  assert.equal(last.metadata?.[metadataKeys.failureCode], 'QueryMismatch');
  assert.match(last.message ?? '', /^timed out after 1m: zone zone-a answers differently/);
  assert.match(
    last.message ?? '',
    /Zone zone-a \(vm\/vmselect-vm-zone-a-0\): series: \{\} = 10; samples: \{\} = 2400/,
  );
  assert.match(
    last.message ?? '',
    /Zone zone-b \(vm\/vmselect-vm-zone-b-0\): series: \{\} = 10; samples: \{\} = 3000/,
  );
});

test('within the tolerance is a match; a series only one zone has is a difference', async () => {
  const { provider } = await world({ zoneA: { answer: counts(10, 2998) } });
  const result = await provider.run(run, metric({ zone: 'zone-a' }));
  assert.equal(result.phase, 'Successful', `2998 vs 3000 is within 0.1%: ${result.message}`);
  assert.deepEqual(answerDifferences({ q: { '{}': 0 } }, { q: {} }, 0), [], 'no data on both sides matches');
  assert.deepEqual(answerDifferences({ q: { '{job="a"}': 5 } }, { q: { '{job="b"}': 5 } }, 0.5), [
    { query: 'q', series: '{job="a"}', zone: 5, serving: null, relative: 1 },
    { query: 'q', series: '{job="b"}', zone: null, serving: 5, relative: 1 },
  ]);
  assert.equal(percent(0.001), '0.1%');
});

test('a zone that does not answer, answers an error or is not Ready waits, and its timeout is QueryUnanswered', async () => {
  const failing = await world({ zoneA: { answer: () => ({ status: 503, body: 'storage not ready' }) } });
  const config = metric({ zone: 'zone-a', timeout: '0s' });
  const result = await failing.provider.run(run, config);
  assert.equal(result.phase, 'Failed');
  assert.equal(result.metadata?.[metadataKeys.failureCode], 'QueryUnanswered');
  assert.match(
    result.message ?? '',
    /zone zone-a does not answer `count\(count_over_time.*HTTP 503: storage not ready/,
  );

  const notReady = await world({ zoneA: { answer: counts(10, 3000) }, zoneAReady: false });
  const waiting = await notReady.provider.run(run, metric({ zone: 'zone-a' }));
  assert.equal(waiting.phase, 'Running');
  assert.match(waiting.message ?? '', /pod vm\/vmselect-vm-zone-a-0 is not Ready/);
  assert.equal(notReady.a.asked.length, 0);
});

test('a zone that answers more slowly than maxLatency is not a pass, though its answer matches', async () => {
  let slow: { advance(ms: number): void } | undefined;
  const setup = await world({ zoneA: { answer: counts(10, 3000), onRequest: () => slow?.advance(6_000) } });
  slow = setup.clock;
  const result = await setup.provider.run(run, metric({ zone: 'zone-a', maxLatency: '10s', timeout: '0s' }));
  assert.equal(result.phase, 'Failed');
  assert.equal(result.metadata?.[metadataKeys.failureCode], 'QueryUnanswered');
  assert.match(
    result.message ?? '',
    /zone zone-a answers too slowly: vm\/vmselect-vm-zone-a-0 in 12000 ms \(maxLatency 10000 ms\)/,
  );
});

test('the serving zone is the first other zone that is operational and out of maintenance, or the one named', async () => {
  const inMaintenance = await world({
    zoneA: { answer: counts(10, 3000) },
    zoneBAnnotations: maintenance('zone-b', '2026-05-01T11:58:00Z'),
  });
  const result = await inMaintenance.provider.run(run, metric({ zone: 'zone-a' }));
  assert.equal(result.phase, 'Successful', result.message);
  assert.equal(figuresOf(result).servingZone, 'zone-c');
  assert.equal(inMaintenance.b.asked.length, 0);

  const named = await world({ zoneA: { answer: counts(10, 3000) }, zoneBStatus: 'expanding' });
  const chosen = await named.provider.run(run, metric({ zone: 'zone-a', servingZone: 'zone-c' }));
  assert.equal(figuresOf(chosen).servingZone, 'zone-c');
  const skipped = await named.provider.run(run, metric({ zone: 'zone-a' }));
  assert.equal(figuresOf(skipped).servingZone, 'zone-c', 'zone-b is expanding');
});

test("a user's query replaces the counts, with $window, $start and $end filled in; an explicit window and tenant", async () => {
  const { a, provider } = await world({
    zoneA: { answer: () => ({ '{}': 7 }) },
    zoneB: { answer: () => ({ '{}': 7 }) },
  });
  const result = await provider.run(
    run,
    metric({
      zone: 'zone-a',
      query: 'sum(rate(http_requests_total[$window]))',
      window: '10m',
      tenant: '3:1',
      lag: '1m',
    }),
  );
  assert.equal(result.phase, 'Successful', result.message);
  assert.deepEqual(
    a.asked.map((q) => [q.path, q.query]),
    [['/select/3:1/prometheus/api/v1/query', 'sum(rate(http_requests_total[600s]))']],
  );
  assert.equal(
    userZoneQuery('_time:[$start, $end] | stats count()', { startMs: 0, endMs: 60_000 }),
    '_time:[1970-01-01T00:00:00.000Z, 1970-01-01T00:01:00.000Z] | stats count()',
  );
  assert.deepEqual(defaultZoneQueries('LogsQL', 'app:x', { startMs: 0, endMs: 60_000 }), [
    {
      name: 'entries',
      query:
        '_time:[1970-01-01T00:00:00.000Z, 1970-01-01T00:01:00.000Z] app:x | stats count() samples, count_uniq(_stream) series',
    },
  ]);
});

test('vmselectPathPrefix replaces /select/<tenant>/prometheus; an empty argument is the default', async () => {
  const { a, provider } = await world({ zoneA: { answer: counts(10, 3000) } });
  await provider.run(run, metric({ zone: 'zone-a', vmselectPathPrefix: '/prometheus', selector: '' }));
  assert.equal(a.asked[0]?.path, '/prometheus/api/v1/query');
  assert.match(a.asked[0]?.query ?? '', /\{__name__!=""\}/, "'' is the default selector");
});

test('config problems are named: selector and query together, a tolerance above 1, a bad path or tenant', () => {
  assert.throws(
    () => parseGateConfig({ gate: 'zoneAnswers', zone: 'zone-a', selector: 'up', query: 'up' }),
    /query: set selector or query, not both/,
  );
  assert.throws(
    () => parseGateConfig({ gate: 'zoneAnswers', zone: 'zone-a', tolerance: '1.5' }),
    /tolerance: must be at most 1/,
  );
  assert.throws(
    () => parseGateConfig({ gate: 'zoneAnswers', zone: 'zone-a', vmselectPathPrefix: 'select' }),
    /vmselectPathPrefix: must be a path starting with \//,
  );
  assert.throws(
    () => parseGateConfig({ gate: 'zoneAnswers', zone: 'zone-a', tenant: 'x' }),
    /tenant: must be an accountID/,
  );
  assert.deepEqual(parseGateConfig({ gate: 'zoneAnswers', zone: 'zone-a', tolerance: '0.01' }), {
    gate: 'zoneAnswers',
    zone: 'zone-a',
    tolerance: 0.01,
  });
});

test('a zone whose object is not operational at its generation is not asked: its old self would answer', async () => {
  const setup = await world({ zoneA: { answer: counts(10, 3000) } });
  // The change was written (generation 3) and the operator has not seen it yet.
  setup.kube.put({
    ...zoneObject('vm-zone-a', maintenance('zone-a', '2026-05-01T11:50:00Z')),
    metadata: {
      name: 'vm-zone-a',
      namespace: 'vm',
      generation: 3,
      annotations: maintenance('zone-a', '2026-05-01T11:50:00Z'),
    },
  });
  const result = await setup.provider.run(run, metric({ zone: 'zone-a', timeout: '1m' }));
  assert.equal(result.phase, 'Running');
  assert.match(result.message ?? '', /zone zone-a is not asked until it is ready: VMCluster vm\/vm-zone-a/);
  assert.equal(setup.a.asked.length, 0);
  assert.equal(figuresOf(result).zoneReady, false);
  setup.clock.advance(61_000);
  const last = await setup.provider.resume(run, metric({ zone: 'zone-a', timeout: '1m' }), result);
  assert.equal(last.phase, 'Failed');
  assert.equal(last.metadata?.[metadataKeys.failureCode], 'QueryUnanswered');
});

test('a zone of another kind is never the serving zone: its answers are not comparable', async () => {
  const mixed = specDocument.replace('zone-b: {vmcluster: vm-zone-b}', 'zone-b: {vmsingle: vm-zone-b}');
  const setup = await world({ zoneA: { answer: counts(10, 3000) }, spec: mixed });
  const result = await setup.provider.run(run, metric({ zone: 'zone-a' }));
  assert.equal(result.phase, 'Successful', result.message);
  assert.equal(figuresOf(result).servingZone, 'zone-c');
  assert.equal(setup.b.asked.length, 0);
});

test('no data in the window on the serving zone is no evidence: the counts wait for data to compare', async () => {
  const { provider } = await world({
    zoneA: { answer: () => ({}) },
    zoneB: { answer: () => ({}) },
  });
  const result = await provider.run(run, metric({ zone: 'zone-a', timeout: '0s' }));
  assert.equal(result.phase, 'Failed');
  assert.equal(result.metadata?.[metadataKeys.failureCode], 'QueryUnanswered');
  assert.match(
    result.message ?? '',
    /the serving zone zone-b holds no data of \{__name__!=""\} over .*, so a match would prove nothing/,
  );
});
