// The Grafana dashboard of a zone walk (manifests/observe/dashboard.json, docs/observe.md "Grafana dashboard"): every
// metric a panel or a variable queries is one the plugins export — the names are collected from the real
// registries, by serving the observe endpoint's /metrics page of both roles in-process — or one of vmagent's own
// documented metrics. The ConfigMap users load carries the same JSON.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { createMetrics, type ObserveRole, registerZoneMetrics } from '../../../plugin/observe/metrics.ts';
import { createObserveApp, listen } from '../../../plugin/observe/server.ts';
import { ZoneSnapshots } from '../../../plugin/observe/zone-snapshot.ts';
import {
  configMapPath,
  configMapText,
  dashboardKey,
  dashboardPath,
} from '../../../scripts/dashboard-configmap.ts';
import {
  allPanels,
  metricNames,
  panelTargets,
  readDashboard,
  variableQuery,
} from '../../e2e/observe/dashboard-queries.ts';
import { MemoryKube } from '../kube/memory-kube.ts';

/** vmagent's own metrics the dashboard reads, each documented in docs/victoriametrics.md ("vmagent's remote-write
 *  queues"), where the names vmzones relies on are listed with the versions that have them. */
const vmagentMetrics = new Set(['vmagent_remotewrite_pending_data_bytes']);

const dashboardText = readFileSync(dashboardPath, 'utf8');
const dashboard = readDashboard(dashboardText);

/** Every query of the dashboard, named by where it is. */
function queries(): [string, string][] {
  const fromPanels = panelTargets(dashboard).map((t): [string, string] => [`panel "${t.panel}"`, t.expr]);
  const fromVariables = dashboard.templating.list
    .filter((v) => v.type === 'query')
    .map((v): [string, string] => [`variable ${v.name}`, variableQuery(v)]);
  return [...fromPanels, ...fromVariables];
}

/** The sample names of a /metrics page: every `# TYPE` line's name, and for a histogram its three series. */
function exportedNames(page: string): Set<string> {
  const names = new Set<string>();
  for (const match of page.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name = '', type] = match;
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) names.add(name + suffix);
    else names.add(name);
  }
  return names;
}

/** The /metrics page of the observe endpoint of a role, as the plugin process serves it (loopback, port 0). */
async function metricsPage(role: ObserveRole): Promise<string> {
  const metrics = createMetrics(role);
  const zones = role === 'step' ? new ZoneSnapshots(() => new MemoryKube()) : undefined;
  if (zones !== undefined) registerZoneMetrics(metrics.registry, zones);
  const { server, port } = await listen(
    await createObserveApp({ role, metrics, zones, startedAt: new Date(0) }),
    '127.0.0.1',
    0,
  );
  try {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(response.status, 200);
    return await response.text();
  } finally {
    server.close();
  }
}

test('metricNames reads the metric names of an expression, not its functions, labels, windows or variables', () => {
  assert.deepEqual(
    metricNames(
      'histogram_quantile(0.9, sum by (le, action) (rate(a_bucket{x="y{z}", w=~"$v"}[$__rate_interval]))) / on(q) group_left(r) b_total offset 5m > bool 1 unless vector($max)',
    ),
    ['a_bucket', 'b_total'],
  );
  assert.deepEqual(metricNames('label_values(c_info{n=~"$namespace"}, rollout)'), ['c_info']);
  assert.deepEqual(metricNames('time() - d_seconds'), ['d_seconds']);
});

test('every metric the dashboard queries is exported by a plugin role or is a documented vmagent metric', async () => {
  const exported = new Set([
    ...exportedNames(await metricsPage('step')),
    ...exportedNames(await metricsPage('metricprovider')),
  ]);
  assert.ok(exported.has('vmzones_zone_state'), 'the step role serves the zone metrics');
  assert.ok(exported.has('vmzones_gate_duration_seconds_count'), 'histogram series are named');
  const all = queries();
  assert.ok(all.length >= 15, `the dashboard has its queries (${all.length})`);
  const unknown: string[] = [];
  const used = new Set<string>();
  for (const [where, expr] of all) {
    assert.notEqual(expr.trim(), '', `${where}: an empty query`);
    const names = metricNames(expr);
    assert.ok(names.length > 0 || /vector\(/.test(expr), `${where}: no metric in ${expr}`);
    for (const name of names) {
      used.add(name);
      if (!exported.has(name) && !vmagentMetrics.has(name)) unknown.push(`${where}: ${name}`);
    }
  }
  assert.deepEqual(unknown, [], 'metric names nothing exports');
  for (const name of vmagentMetrics) assert.ok(used.has(name), `${name} is allowed but unused`);
});

test('each panel but a row has a query; the panels the walk needs are there', () => {
  const panels = allPanels(dashboard.panels).filter((p) => p.type !== 'row');
  for (const p of panels) assert.ok((p.targets ?? []).length > 0, `panel "${p.title}" has no query`);
  const titles = panels.map((p) => p.title).join('\n');
  for (const expected of [
    /Zones by state/,
    /out of reads against the budget/,
    /Lease holders/,
    /Gate verdicts/,
    /vmagent queue bytes/,
    /Time per zone/,
  ])
    assert.match(titles, expected);
});

test('the ConfigMap carries the dashboard JSON byte for byte, labelled for the Grafana sidecar', () => {
  const text = readFileSync(configMapPath, 'utf8');
  assert.equal(
    text,
    configMapText(dashboardText),
    'dashboard-configmap.yaml is not generated from dashboard.json: run node scripts/dashboard-configmap.ts',
  );
  const configMap = parse(text) as {
    metadata: { labels: Record<string, string> };
    data: Record<string, string>;
  };
  assert.equal(configMap.metadata.labels.grafana_dashboard, '1');
  assert.equal(configMap.data[dashboardKey], dashboardText.trimEnd());
  const cr = parse(
    readFileSync(new URL('../../../manifests/observe/grafanadashboard.yaml', import.meta.url), 'utf8'),
  ) as { spec: { configMapRef: { name: string; key: string } } };
  assert.deepEqual(cr.spec.configMapRef, { name: 'vmzones-dashboard', key: dashboardKey });
});
