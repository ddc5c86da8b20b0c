// The Grafana dashboard (manifests/observe/dashboard.json) against real data: a real victoria-metrics scrapes both
// plugin processes the real Argo Rollouts controller runs and the sandbox's vmagent while the controller walks a
// change through three zones in two waves (zone-a, then zone-b and zone-c together) with the project's gates to
// Healthy; then every panel's query, evaluated over the walk as Grafana would, must return series, and a query
// with a wrong metric name must fail the check (dashboard-scrape.ts). Run `npm run build` first.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { dashboardPath } from '../../../scripts/dashboard-configmap.ts';
import { applyAnalysisTemplates } from '../../sandbox/analysis-templates.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import {
  eventually,
  latencyOffset,
  ns,
  rolloutCanProgress,
  rolloutObject,
  rolloutState,
  type SpecDocument,
  sandboxKube,
  stepsFor,
  withRoundSpacing,
  zoneSpec,
} from '../step/harness.ts';
import { type Dashboard, readDashboard } from './dashboard-queries.ts';
import {
  checkDashboardPanels,
  DashboardPanelsError,
  describeResults,
  type MetricsScraper,
  observedPluginArgs,
  quietInHealthyWalk,
  startMetricsScraper,
  type TargetResult,
} from './dashboard-scrape.ts';

const name = 'dashboard-walk';
const waves = [['zone-a'], ['zone-b', 'zone-c']];
const dashboardText = readFileSync(dashboardPath, 'utf8');
// The walk's namespace and Rollout, and its budget: the widest wave (the spec's default maxZonesOut).
const variables = { namespace: ns, rollout: `${ns}/${name}`, max_zones_out: '2' };

let sandbox: Sandbox;
let kube: KubeObjects;
let scraper: MetricsScraper;
let walk: { from: Date; to: Date } | undefined;
const started = Date.now();
const report: string[] = [];

before(async () => {
  const observe = await observedPluginArgs();
  sandbox = await startSandbox({
    zones: 3,
    plugin: true,
    podRestartSeconds: 2,
    pluginArgs: observe.pluginArgs,
  });
  report.push(`sandbox start: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  kube = sandboxKube(sandbox);
  await applyAnalysisTemplates(sandbox.kubectl);
  scraper = await startMetricsScraper(sandbox);
  assert.deepEqual(
    scraper.targets.vmzones,
    [observe.targets.step, observe.targets.gates],
    'the plugins found',
  );
});

after(async () => {
  report.push(`e2e wall time (sandbox start included): ${((Date.now() - started) / 1000).toFixed(0)} s`);
  console.log(`\n---- dashboard e2e ----\n${report.join('\n')}\n`);
  await scraper?.stop();
  await sandbox?.stop();
});

/** Every panel's query over the walk, with the walk's namespace and Rollout picked in the variables. */
const check = (dashboard: string | Dashboard) => {
  if (walk === undefined) throw new Error('the walk did not finish');
  return checkDashboardPanels(scraper.url, dashboard, {
    ...walk,
    variables,
    scrapeIntervalSeconds: scraper.scrapeIntervalSeconds,
    mayBeEmpty: Object.keys(quietInHealthyWalk),
  });
};

test('a walk in two waves to Healthy, scraped: every panel of the dashboard returns series', async () => {
  const steps = (spec: SpecDocument) => withRoundSpacing(stepsFor(spec, 'none', 'vmzones-zone-healthy'));
  const first = zoneSpec({}, { waves });
  await sandbox.kubectl.apply([rolloutObject(name, first, steps(first))]);
  const initial = await eventually(
    'the first revision (no steps run) to be Healthy',
    async () => {
      const s = await rolloutState(kube, name);
      return s.status.phase === 'Healthy' ? s : undefined;
    },
    { unless: rolloutCanProgress(kube, name) },
  );

  const from = new Date();
  const spec = zoneSpec(latencyOffset('2s'), { waves });
  await sandbox.kubectl.apply([rolloutObject(name, spec, steps(spec))]);
  await eventually(
    'the walk in two waves to be Healthy',
    async () => {
      const s = await rolloutState(kube, name);
      if (s.status.currentPodHash === initial.status.currentPodHash) return undefined;
      return s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash ? s : undefined;
    },
    { timeoutMs: 240_000, intervalMs: 1000, unless: rolloutCanProgress(kube, name) },
  );
  // A few scrapes more, and one cache TTL of the zone metrics, so the walk's end is in the data.
  await sleep(3_000 + 2_000 * scraper.scrapeIntervalSeconds);
  walk = { from, to: new Date() };
  report.push(`walk: ${((walk.to.getTime() - from.getTime()) / 1000).toFixed(0)} s`);

  const health = await scraper.targetHealth();
  report.push(`scrape targets:\n  ${health.join('\n  ')}`);
  assert.equal(health.length, 3, `both plugins and the vmagent are scraped: ${health.join('; ')}`);
  assert.ok(
    health.every((h) => /: up$/.test(h)),
    `every target up at the end: ${health.join('; ')}`,
  );

  let results: TargetResult[];
  try {
    results = await check(dashboardText);
  } catch (error) {
    if (error instanceof DashboardPanelsError) report.push(`panels:\n${describeResults(error.results)}`);
    throw error;
  }
  report.push(`panels (series over the walk):\n${describeResults(results)}`);
  const dashboard = readDashboard(dashboardText);
  const panels = new Set(results.map((r) => r.panel));
  assert.equal(
    panels.size,
    dashboard.panels.filter((p) => p.type !== 'row').length,
    'every panel but the rows was evaluated',
  );

  // The wave label: each zone's series carry its wave in the Rollout's walk.
  const params = new URLSearchParams({
    'match[]': `vmzones_zone_state{rollout="${ns}/${name}"}`,
    start: String(Math.floor(from.getTime() / 1000)),
    end: String(Math.ceil(walk.to.getTime() / 1000)),
  });
  const series = (await (await fetch(`${scraper.url}/api/v1/series?${params}`)).json()) as {
    data: Record<string, string>[];
  };
  const waveOf = Object.fromEntries(series.data.map((labels) => [labels.zone, labels.wave]));
  assert.deepEqual(
    waveOf,
    { 'zone-a': '1', 'zone-b': '2', 'zone-c': '2' },
    'each zone is labelled with its wave',
  );
  // What "Zones out of reads against the budget" drew: at most the budget, and the whole second wave at once.
  const range = Math.ceil((walk.to.getTime() - from.getTime()) / 1000);
  const peak = (await (
    await fetch(
      `${scraper.url}/api/v1/query?${new URLSearchParams({
        query: `max_over_time(sum(vmzones_zone_maintenance{rollout="${ns}/${name}"})[${range}s:1s])`,
        time: String(walk.to.getTime() / 1000),
      })}`,
    )
  ).json()) as { data: { result: { value: [number, string] }[] } };
  assert.equal(peak.data.result[0]?.value[1], '2', 'two zones out of reads at once: the second wave');
});

test('a panel whose query names a metric nothing exports fails the check, naming the panel', async () => {
  const misspell = (panel: string, refId: string, from: string, to: string): Dashboard => {
    const dashboard = readDashboard(dashboardText);
    const target = dashboard.panels.find((p) => p.title === panel)?.targets?.find((x) => x.refId === refId);
    if (target?.expr?.includes(from) !== true)
      throw new Error(`panel "${panel}" ${refId} does not query ${from}`);
    target.expr = target.expr.replace(from, to);
    return dashboard;
  };

  await assert.rejects(
    check(misspell('Zones by state', 'A', 'vmzones_zone_state', 'vmzones_zone_states')),
    (error: Error) => {
      assert.ok(error instanceof DashboardPanelsError, String(error));
      assert.match(error.message, /panel "Zones by state" A: vmzones_zone_states: no series and no metadata/);
      assert.match(error.message, /panel "Zones by state" A: no series over the walk/);
      assert.equal(error.message.split('\n').length, 3, `only that panel fails: ${error.message}`);
      return true;
    },
  );
  // A query the walk may leave empty (failed API requests) still needs a metric that exists.
  await assert.rejects(
    check(
      misspell(
        'Kubernetes API requests and errors',
        'B',
        'vmzones_kube_api_errors_total',
        'vmzones_kube_api_error_total',
      ),
    ),
    /panel "Kubernetes API requests and errors" B: vmzones_kube_api_error_total: no series and no metadata/,
  );
});
