// The Grafana dashboard's queries against real data (docs/observe.md, "Grafana dashboard"): a real victoria-metrics
// from the sandbox's build cache scrapes both plugin processes' observe endpoints and the sandbox's vmagents during a
// walk, then every panel's query is evaluated over the walk as Grafana would, with the dashboard's variables filled in.
//
//   const observe = await observedPluginArgs();                  // before the sandbox starts
//   const sandbox = await startSandbox({ plugin: true, pluginArgs: observe.pluginArgs, ... });
//   const scraper = await startMetricsScraper(sandbox);          // finds the plugins' addresses in their args
//   const from = new Date(); /* the walk */ const to = new Date();
//   await checkDashboardPanels(scraper.url, dashboardJson, { from, to });   // throws naming every empty panel
//   await scraper.stop();
//
// Everything listens on loopback (or in the sandbox's own pod network namespace, where its zone clusters' vmagents are).

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import type { Sandbox } from '../../sandbox/helper.ts';
import type { PluginExtraArgs } from '../../sandbox/manifests.ts';
import { freePort } from '../../sandbox/ports.ts';
import { type DaemonRecord, startDaemon, stopDaemon, waitFor } from '../../sandbox/processes.ts';
import { readEndpoints } from '../../sandbox/sandbox.ts';
import {
  type Dashboard,
  type DashboardVariable,
  metricNames,
  type PanelTarget,
  panelTargets,
  readDashboard,
} from './dashboard-queries.ts';

/** Where the two plugin processes serve /metrics (`host:port`). */
export interface PluginTargets {
  step: string;
  gates: string;
}

/**
 * The plugin arguments that turn on both processes' observe endpoints on free loopback ports (pass them as
 * `pluginArgs` to startSandbox), and where they will listen. The zone metrics are listed every `cacheTtl`
 * (`--observe-cache-ttl`, at least 1s) so that a short walk's states are seen at the scrape interval.
 */
export async function observedPluginArgs(
  cacheTtl = '1s',
): Promise<{ pluginArgs: PluginExtraArgs; targets: PluginTargets }> {
  const targets = { step: `127.0.0.1:${await freePort()}`, gates: `127.0.0.1:${await freePort()}` };
  return {
    targets,
    pluginArgs: {
      'vmzones/step': ['--observe-address', targets.step, '--observe-cache-ttl', cacheTtl],
      'vmzones/gates': ['--observe-address', targets.gates],
    },
  };
}

const pluginListSchema = z.array(z.looseObject({ name: z.string(), args: z.array(z.string()).default([]) }));

/** The `host:port` a plugin's `--observe-address [HOST]:PORT` (docs/observe.md) is reached at from this machine. */
function observeTarget(plugin: string, args: readonly string[]): string {
  const at = args.findIndex((a) => a === '--observe-address' || a.startsWith('--observe-address='));
  const value = at < 0 ? undefined : (args[at]?.split('=')[1] ?? args[at + 1]);
  if (value === undefined)
    throw new Error(`plugin ${plugin} runs without --observe-address: nothing to scrape`);
  const match = /^(?:(.*):)?(\d+)$/.exec(value);
  const host = match?.[1] ?? '';
  const port = Number(match?.[2] ?? 0);
  if (port === 0)
    throw new Error(`plugin ${plugin}: --observe-address ${value} names no fixed port to scrape`);
  return `${host === '' || host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
}

/** Where the sandbox's controller runs the two plugins' observe endpoints, from its argo-rollouts-config. */
export async function pluginObserveTargets(sandbox: Sandbox): Promise<PluginTargets> {
  const config = await sandbox.kubectl.getJson<{ data?: Record<string, string> }>([
    'configmap',
    'argo-rollouts-config',
    '-n',
    sandbox.state.controllerNamespace,
  ]);
  const entry = (key: string, name: string) => {
    const list = pluginListSchema.parse(parse(config.data?.[key] ?? '[]'));
    const plugin = list.find((p) => p.name === name);
    if (plugin === undefined) throw new Error(`argo-rollouts-config has no ${key} entry ${name}`);
    return observeTarget(name, plugin.args);
  };
  return {
    step: entry('stepPlugins', 'vmzones/step'),
    gates: entry('metricProviderPlugins', 'vmzones/gates'),
  };
}

export interface MetricsScraper {
  /** victoria-metrics' HTTP API (`http://127.0.0.1:PORT`). */
  url: string;
  /** The scrape interval, in seconds (Grafana's "scrape interval" for $__rate_interval). */
  scrapeIntervalSeconds: number;
  /** Every scrape target, by job: `vmzones` (both plugins) and `vmagent` (the sandbox's vmagents). */
  targets: Record<string, string[]>;
  /** The scrape targets' health as victoria-metrics last saw it (`job instance: up|down (lastError)`). */
  targetHealth(): Promise<string[]>;
  stop(): Promise<void>;
}

/** Loopback, or an address in the sandbox's own pod network namespace: the only places test traffic may go. */
function allowedHost(sandbox: Sandbox, host: string): boolean {
  const name = host.replace(/^\[|\]$/g, '');
  if (name === 'localhost' || name === '::1' || /^127\./.test(name)) return true;
  return isIP(name) !== 0 && name === sandbox.state.podNetwork?.podAddress;
}

/** The `host:port` of every VMAgent the sandbox runs, in the hub and in its zone clusters. */
function vmagentTargets(sandbox: Sandbox): string[] {
  const files = [sandbox.state, ...(sandbox.state.zoneClusters ?? [])];
  return files
    .flatMap((s) => readEndpoints(s))
    .filter((e) => e.kind === 'VMAgent')
    .map((e) => new URL(e.url).host);
}

/**
 * Starts the real victoria-metrics binary of the sandbox (its build cache, test/env/build.ts) on loopback, scraping
 * both plugin processes (`job="vmzones"`, honor_labels as manifests/observe/vmpodscrape.yaml scrapes them; found in
 * the controller's argo-rollouts-config unless `plugins` names them: start the sandbox with observedPluginArgs) and every
 * vmagent of the sandbox (`job="vmagent"`) every `scrapeIntervalSeconds`. Targets that are not up yet (the controller
 * starts the plugin processes on first use) are scraped once they are. The process is recorded in the sandbox's
 * state, so the sandbox's teardown stops it too should the test end early.
 */
export async function startMetricsScraper(
  sandbox: Sandbox,
  options: { scrapeIntervalSeconds?: number; plugins?: PluginTargets } = {},
): Promise<MetricsScraper> {
  const scrapeIntervalSeconds = options.scrapeIntervalSeconds ?? 1;
  const plugins = options.plugins ?? (await pluginObserveTargets(sandbox));
  const targets = { vmzones: [plugins.step, plugins.gates], vmagent: vmagentTargets(sandbox) };
  if (targets.vmagent.length === 0) throw new Error('the sandbox publishes no VMAgent endpoint to scrape');
  const stray = Object.values(targets)
    .flat()
    .filter((t) => !allowedHost(sandbox, new URL(`http://${t}`).hostname));
  if (stray.length > 0) throw new Error(`scrape targets outside loopback: ${stray.join(', ')}`);

  const dir = join(sandbox.state.stateDir, 'dashboard-scrape');
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'scrape.yaml');
  writeFileSync(
    config,
    stringify({
      global: { scrape_interval: `${scrapeIntervalSeconds}s`, scrape_timeout: `${scrapeIntervalSeconds}s` },
      scrape_configs: [
        { job_name: 'vmzones', honor_labels: true, static_configs: [{ targets: targets.vmzones }] },
        { job_name: 'vmagent', static_configs: [{ targets: targets.vmagent }] },
      ],
    }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const record: DaemonRecord = startDaemon({
    name: 'dashboard-victoria-metrics',
    command: sandbox.state.binaries['victoria-metrics'],
    args: [
      `-storageDataPath=${join(dir, 'data')}`,
      `-httpListenAddr=127.0.0.1:${port}`,
      `-promscrape.config=${config}`,
      '-retentionPeriod=1d',
      // Points are queryable as soon as they are scraped, and no answer comes from a cache of an earlier query.
      '-search.latencyOffset=0s',
      '-search.disableCache',
    ],
    log: join(dir, 'victoria-metrics.log'),
    ports: [port],
  });
  recordDaemon(sandbox, record);
  await waitFor(
    async () => ((await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) })).ok ? true : undefined),
    { part: 'victoria-metrics (dashboard scrape)', log: record.log, pid: record.pid, timeoutMs: 30_000 },
  );
  return {
    url,
    scrapeIntervalSeconds,
    targets,
    targetHealth: async () => {
      const body = (await getJson(`${url}/api/v1/targets`)) as {
        data: {
          activeTargets: { labels: Record<string, string>; health: string; lastError: string }[];
        };
      };
      return body.data.activeTargets.map(
        (t) =>
          `${t.labels.job} ${t.labels.instance}: ${t.health}${t.lastError === '' ? '' : ` (${t.lastError})`}`,
      );
    },
    stop: () => stopDaemon(record, 5_000),
  };
}

/** Adds a daemon to the sandbox's state (memory and state.json), so its teardown and its dead-daemon check know it. */
function recordDaemon(sandbox: Sandbox, record: DaemonRecord): void {
  const file = join(sandbox.state.stateDir, 'state.json');
  const saved = JSON.parse(readFileSync(file, 'utf8')) as { daemons: DaemonRecord[] };
  saved.daemons.push(record);
  writeFileSync(file, `${JSON.stringify(saved, null, 2)}\n`);
  sandbox.state.daemons.push(record);
}

async function getJson(url: string): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  const text = await response.text();
  if (!response.ok)
    throw new Error(`GET ${url.replace(/\?.*/, '')}: HTTP ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

// ---- the panels ----

export interface PanelCheckOptions {
  /** The walk: every query is evaluated over it, as with Grafana's time picker set to it. */
  from: Date;
  to: Date;
  /** Values of the dashboard's variables by name (e.g. `rollout: "vm/walk"`); a query variable without one takes
   *  its "All" value (`allValue`, e.g. `.*`), a textbox its default. */
  variables?: Record<string, string>;
  /** Grafana's data source scrape interval, for $__rate_interval; default 1 s (startMetricsScraper's). */
  scrapeIntervalSeconds?: number;
  /**
   * Panels (`title`) or targets (`title/refId`) that the walk may rightly leave empty (e.g. errors in a walk without
   * faults: quietInHealthyWalk). Their metric names must still be known to victoria-metrics.
   */
  mayBeEmpty?: readonly string[];
}

/** The targets of the shipped dashboard that a walk without faults leaves empty, and why. */
export const quietInHealthyWalk: Readonly<Record<string, string>> = {
  'Drifted zones': 'no zone drifts from its stable spec in a walk that changes every zone through the steps',
  'Kubernetes API requests and errors/B':
    'a walk without faults may make no Kubernetes API request that fails',
};

export interface TargetResult extends PanelTarget {
  /** The expression as evaluated, variables filled in. */
  query: string;
  /** Series the query returned over the walk. */
  series: number;
  /** Each metric name the query selects: series of it over the walk, or -1 for a name known only from the
   *  targets' metadata (`# TYPE`: exported, no sample yet), or 0 for a name victoria-metrics does not know. */
  metrics: Record<string, number>;
}

/** The error of checkDashboardPanels, with every target's result (a report can list them all). */
export class DashboardPanelsError extends Error {
  readonly results: TargetResult[];
  constructor(problems: string[], results: TargetResult[]) {
    super(`dashboard queries that fail on the walk's data:\n  ${problems.join('\n  ')}`);
    this.name = 'DashboardPanelsError';
    this.results = results;
  }
}

/** Grafana's value of a dashboard variable when nothing is picked: "All" where allowed, else the current value. */
function defaultValue(variable: DashboardVariable): string {
  if (variable.includeAll === true) return variable.allValue ?? '.*';
  const current = variable.current?.value;
  const value = Array.isArray(current) ? current[0] : current;
  if (value !== undefined && value !== '' && value !== '$__all') return value;
  if (typeof variable.query === 'string') return variable.query;
  return '.*';
}

/** The expression with the dashboard's variables and Grafana's interval variables filled in. */
export function fillVariables(expr: string, values: Readonly<Record<string, string>>): string {
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$([A-Za-z_]\w*)/g, (_whole, a, b, c) => {
    const name = (a ?? b ?? c) as string;
    const value = values[name];
    if (value === undefined) throw new Error(`the query ${expr} uses $${name}, which has no value`);
    return value;
  });
}

/** Strips the series suffixes of a histogram or summary, which metadata names by the family. */
function familyOf(name: string): string[] {
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base === name ? [name] : [name, base];
}

/**
 * Evaluates every panel target of the dashboard over the walk on victoria-metrics (`/api/v1/query_range`: at each step
 * the query Grafana would send for that moment, instant panels included), and checks each metric name it selects.
 * Throws DashboardPanelsError listing every target that returned no series (but those `mayBeEmpty` names) and every
 * metric name victoria-metrics neither holds series of nor has seen in a target's metadata. Returns every result.
 */
export async function checkDashboardPanels(
  url: string,
  dashboardJson: string | Dashboard,
  options: PanelCheckOptions,
): Promise<TargetResult[]> {
  const dashboard = readDashboard(dashboardJson);
  const start = Math.floor(options.from.getTime() / 1000);
  const end = Math.ceil(options.to.getTime() / 1000);
  if (end <= start) throw new Error(`the walk ends (${options.to.toISOString()}) before it starts`);
  const scrape = options.scrapeIntervalSeconds ?? 1;
  // Grafana's step for ~300 points over the range, never below the scrape interval; its rate window the same way.
  const step = Math.max(scrape, Math.ceil((end - start) / 300));
  const builtins: Record<string, string> = {
    __range: `${end - start}s`,
    __range_s: String(end - start),
    __range_ms: String((end - start) * 1000),
    __interval: `${step}s`,
    __interval_ms: String(step * 1000),
    __rate_interval: `${Math.max(step + scrape, 4 * scrape)}s`,
  };
  const values: Record<string, string> = { ...builtins };
  for (const variable of dashboard.templating.list) {
    if (variable.type === 'datasource') continue;
    values[variable.name] = options.variables?.[variable.name] ?? defaultValue(variable);
  }

  const rangeQuery = async (query: string) => {
    const params = new URLSearchParams({ query, start: String(start), end: String(end), step: `${step}s` });
    const body = (await getJson(`${url}/api/v1/query_range?${params}`)) as { data: { result: unknown[] } };
    return body.data.result.length;
  };
  const metadata = async (name: string) => {
    const body = (await getJson(`${url}/api/v1/metadata?metric=${encodeURIComponent(name)}`)) as {
      data: Record<string, unknown[]>;
    };
    return (body.data[name] ?? []).length > 0;
  };
  const known = new Map<string, number>();
  const metricSeries = async (name: string): Promise<number> => {
    const cached = known.get(name);
    if (cached !== undefined) return cached;
    let count = await rangeQuery(`{__name__=${JSON.stringify(name)}}`);
    if (count === 0) {
      for (const family of familyOf(name)) if (await metadata(family)) count = -1;
    }
    known.set(name, count);
    return count;
  };

  const results: TargetResult[] = [];
  const problems: string[] = [];
  const quiet = new Set(options.mayBeEmpty ?? []);
  for (const target of panelTargets(dashboard)) {
    const where = `panel "${target.panel}" ${target.refId}`;
    if (target.expr.trim() === '') {
      problems.push(`${where}: no query`);
      continue;
    }
    const query = fillVariables(target.expr, values);
    let series: number;
    try {
      series = await rangeQuery(query);
    } catch (error) {
      problems.push(`${where}: ${query}: ${(error as Error).message}`);
      continue;
    }
    const metrics: Record<string, number> = {};
    for (const name of metricNames(target.expr)) metrics[name] = await metricSeries(name);
    results.push({ ...target, query, series, metrics });
    const unknown = Object.entries(metrics)
      .filter(([, n]) => n === 0)
      .map(([name]) => name);
    if (unknown.length > 0)
      problems.push(`${where}: ${unknown.join(', ')}: no series and no metadata of any scraped target`);
    const allowedEmpty = quiet.has(target.panel) || quiet.has(`${target.panel}/${target.refId}`);
    if (series === 0 && !allowedEmpty) problems.push(`${where}: no series over the walk for ${query}`);
  }
  if (problems.length > 0) throw new DashboardPanelsError(problems, results);
  return results;
}

/** One line per target: panel, refId, series over the walk, and each metric's series (for a test's report). */
export function describeResults(results: readonly TargetResult[]): string {
  return results
    .map(
      (r) =>
        `${r.series.toString().padStart(4)} series  ${r.panel} ${r.refId}  (${Object.entries(r.metrics)
          .map(([name, n]) => `${name}: ${n < 0 ? 'metadata only' : n}`)
          .join(', ')})`,
    )
    .join('\n');
}
