// `npm run bench` part: one real Argo Rollouts controller with many Rollouts of 3 zones each (default 50), the
// plugins behind the sandbox's fault proxy in pass-through mode (it counts every request they make). The zones are
// placeholders in namespace `scale` that no operator reconciles (the real operator watches only `vm`; the data plane
// finds no version to run): their VMCluster statuses are written here, so the step plugin and the gates see healthy
// or not-yet-ready zones without a process per zone. One Rollout over the sandbox's real zones runs the drain gate
// with the highest drainRounds allowed, so its stored readings grow round after round up to what is kept. Phases:
//   idle      — every Rollout at its first revision (no walk): what the plugins cost doing nothing;
//   analysis  — every Rollout's second revision waits in an analysis step (vmclusterReady on a zone set not ready):
//               AnalysisRuns in flight, the gates process busy;
//   walking   — those zones become ready; every Rollout takes its zone-a lease in drainReads and stays Running
//               there (no VMAuth renders the placeholder VMUsers): step Runs and the reconciler's Rollout reads.
// Prints `name value` lines: kube_requests_per_s_<phase>{,_<verb resource>}, rpc_<service>_<method>_p50_ms/p99_ms
// (from the plugins' own vmzones_rpc_duration_seconds histograms, differences over the phase), plugin_rss_mib_*,
// analysisrun_* sizes and the drain gate's stored readings per round; last, the plugin processes' peak RSS over all
// phases (plugin_peak_rss_mib_scale_<role>, and its private part, _anon_) and start → handshake of the bundle.
// Flags: --rollouts N (default 50), --phase-seconds S (default 60).

import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { maxConsecutiveRounds } from '../../plugin/gates/config.ts';
import type { KubeObject } from '../../plugin/kube/objects.ts';
import { renderSteps } from '../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../plugin/zones/spec.ts';
import { rolloutObject, sandboxKube, zoneSpec } from '../e2e/step/harness.ts';
import { applyAnalysisTemplates } from '../sandbox/analysis-templates.ts';
import { FaultControl, type ProxyStats } from '../sandbox/fault-proxy.ts';
import { startSandbox } from '../sandbox/helper.ts';
import { freePort } from '../sandbox/ports.ts';
import { placeholderNamespace, placeholderVmagent, placeholderVmcluster } from './placeholders.ts';
import { handshakeMs, pluginRss } from './plugin-processes.ts';
import { fixed } from './rollout-sandbox.ts';
import { waitFor } from './rollout-vmzones.ts';

const { values } = parseArgs({
  options: {
    rollouts: { type: 'string', default: '50' },
    'phase-seconds': { type: 'string', default: '60' },
  },
});
const rollouts = Number(values.rollouts);
const phaseMs = Number(values['phase-seconds']) * 1000;
if (!Number.isInteger(rollouts) || rollouts < 1 || !(phaseMs > 0)) {
  console.error('scale bench: --rollouts must be a whole number ≥ 1 and --phase-seconds > 0');
  process.exit(2);
}
const started = Date.now();
const log = (line: string) =>
  console.error(`[scale bench ${fixed((Date.now() - started) / 1000, 0).padStart(4)} s] ${line}`);
const out = (name: string, value: number | string) =>
  console.log(`${name} ${typeof value === 'number' ? fixed(value, 2) : value}`);

const scaleNs = 'scale';
const vmGroup = { group: 'operator.victoriametrics.com', version: 'v1beta1' };
const names = Array.from({ length: rollouts }, (_, i) => `s${String(i).padStart(2, '0')}`);
const zonesOf = (n: string) => ({
  'zone-a': { vmcluster: `${n}-a` },
  'zone-b': { vmcluster: `${n}-b` },
  'zone-c': { vmcluster: `${n}-c` },
});

function placeholderObjects(): object[] {
  const objects: object[] = [
    ...placeholderNamespace(scaleNs),
    // Selects every VMUser here; nothing renders them, so each drainReads waits for vmauth's evidence.
    {
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMAuth',
      metadata: { name: 'placeholder-vmauth', namespace: scaleNs },
      spec: { selectAllByDefault: true },
    },
  ];
  for (const n of names) {
    for (const { vmcluster } of Object.values(zonesOf(n))) {
      objects.push(placeholderVmcluster(vmcluster, scaleNs));
    }
    objects.push({
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMUser',
      metadata: { name: `${n}-read`, namespace: scaleNs },
      spec: {
        username: `${n}-reader`,
        password: 'placeholder',
        targetRefs: [
          {
            crd: {
              kind: 'VMCluster/vmselect',
              name: '',
              namespace: '',
              objects: Object.values(zonesOf(n)).map((z) => ({ name: z.vmcluster, namespace: scaleNs })),
            },
            paths: ['/select/.*'],
          },
        ],
      },
    });
  }
  return objects;
}

function placeholderSpec(n: string, overrideSpec: object) {
  return {
    overrideSpec,
    vmauth: { vmuser: `${n}-read`, drainGracePeriod: '3s' },
    vmagent: { vmagent: placeholderVmagent },
    zones: zonesOf(n),
  };
}

/** The Rollout's steps: an analysis that waits for zone-c, then the rendered walk. */
function placeholderRollout(n: string, overrideSpec: object): object {
  const spec = placeholderSpec(n, overrideSpec);
  const steps = [
    {
      analysis: {
        templates: [{ templateName: 'vmzones-vmcluster-ready', clusterScope: true }],
        args: [{ name: 'zone', value: 'zone-c' }],
      },
    },
    ...renderSteps(parseSpecDocument(stringify(spec)), { pauseBetweenZones: 'none' }),
  ];
  const rollout = rolloutObject(n, spec, steps) as { metadata: { namespace: string } };
  rollout.metadata.namespace = scaleNs;
  return rollout;
}

// ---- measurements ----

interface Histogram {
  buckets: Map<number, number>;
  count: number;
}
type Histograms = Map<string, Histogram>;

/** vmzones_rpc_duration_seconds by "service method" (outcomes summed), from one /metrics page. */
function rpcHistograms(text: string): Histograms {
  const found: Histograms = new Map();
  for (const line of text.split('\n')) {
    const m = /^vmzones_rpc_duration_seconds_bucket\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries(
      [...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]] as const),
    );
    const id = `${labels.service} ${labels.method}`;
    const h = found.get(id) ?? { buckets: new Map(), count: 0 };
    found.set(id, h);
    const le = labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(labels.le);
    h.buckets.set(le, (h.buckets.get(le) ?? 0) + Number(m[2]));
    if (le === Number.POSITIVE_INFINITY) h.count += Number(m[2]);
  }
  return found;
}

/** The q-quantile of the calls between two snapshots, linearly within its bucket (as histogram_quantile). */
function quantile(before: Histogram | undefined, after: Histogram, q: number): number {
  const les = [...after.buckets.keys()].sort((a, b) => a - b);
  const diff = les.map((le) => (after.buckets.get(le) ?? 0) - (before?.buckets.get(le) ?? 0));
  const total = diff.at(-1) ?? 0;
  if (total === 0) return Number.NaN;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [i, le] of les.entries()) {
    const count = diff[i] ?? 0;
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return lower;
      return lower + ((le - lower) * (rank - below)) / Math.max(count - below, 1e-9);
    }
    lower = le;
    below = count;
  }
  return lower;
}

/** The histograms, or none while the plugin process is not started (the controller starts it on first use). */
async function scrape(url: string): Promise<Histograms> {
  try {
    return rpcHistograms(await (await fetch(`${url}/metrics`)).text());
  } catch {
    return new Map();
  }
}

// ---- the run ----

const observePorts = { step: await freePort(), gates: await freePort() };
log(`starting a sandbox (real operator watching vm only, fault proxy, ${rollouts} placeholder Rollouts)`);
const sandbox = await startSandbox({
  zones: 3,
  plugin: true,
  faultProxy: true,
  operatorWatchNamespaces: ['vm'],
  pluginArgs: {
    'vmzones/step': ['--observe-address', `127.0.0.1:${observePorts.step}`, '--observe-cache-ttl', '1s'],
    'vmzones/gates': ['--observe-address', `127.0.0.1:${observePorts.gates}`],
  },
  log: () => {},
});
let failed = false;
try {
  const kube = sandboxKube(sandbox);
  const kc = new KubeConfig();
  kc.loadFromFile(sandbox.state.kubeconfig);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const proxyControl = sandbox.state.faultProxy?.controlUrl;
  if (proxyControl === undefined) throw new Error('the sandbox started without its fault proxy');
  const proxy = new FaultControl(proxyControl);
  const controllerPid = sandbox.state.daemons.find((d) => d.name === 'rollouts-controller')?.pid ?? 0;

  /** Plays the operator for the placeholder zones: status at the current generation. */
  const setZoneStatus = async (name: string, updateStatus: 'operational' | 'expanding') => {
    const current = await kube.get({
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMCluster',
      namespace: scaleNs,
      name,
    });
    await custom.patchNamespacedCustomObjectStatus(
      {
        ...vmGroup,
        namespace: scaleNs,
        plural: 'vmclusters',
        name,
        body: { status: { updateStatus, observedGeneration: current.metadata.generation ?? 1, reason: '' } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };
  const eachLimited = async <T>(items: T[], work: (item: T) => Promise<void>) => {
    for (let i = 0; i < items.length; i += 10) await Promise.all(items.slice(i, i + 10).map(work));
  };

  await applyAnalysisTemplates(sandbox.kubectl);
  await sandbox.kubectl.apply(placeholderObjects());
  await eachLimited(
    names.flatMap((n) => Object.values(zonesOf(n)).map((z) => z.vmcluster)),
    (c) => setZoneStatus(c, 'operational'),
  );
  log('placeholder zones created and operational; first revisions of the Rollouts');
  await sandbox.kubectl.apply(names.map((n) => placeholderRollout(n, {})));

  // The one real drain gate: a Rollout over the sandbox's real zones whose first step is the drain gate of zone-a
  // with the highest drainRounds allowed (not reached in this run), so every reading adds a stored round.
  const realSteps = [
    {
      analysis: {
        templates: [{ templateName: 'vmzones-vmagent-queue-drained', clusterScope: true }],
        args: [
          { name: 'zone', value: 'zone-a' },
          { name: 'drainRounds', value: String(maxConsecutiveRounds) },
          { name: 'drainTimeout', value: '4h' },
        ],
      },
    },
  ];
  await sandbox.kubectl.apply([rolloutObject('real-drain', zoneSpec({}), realSteps)]);
  // The controller starts a plugin process on the first step that needs it: a Rollout whose step fails at once
  // (a zone its spec document does not have) starts the step plugin, and with it the reconciler, for the idle phase.
  const starterSteps = [
    { plugin: { name: 'vmzones/step', config: { zone: 'no-such-zone', action: 'drainReads' } } },
  ];
  await sandbox.kubectl.apply([rolloutObject('starter', zoneSpec({}), starterSteps)]);

  const healthy = async (namespaceName: string, name: string) => {
    const r = await kube.get({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Rollout',
      namespace: namespaceName,
      name,
    });
    return (r.status as { phase?: string } | undefined)?.phase === 'Healthy';
  };
  await waitFor(async () => {
    for (const n of names) if (!(await healthy(scaleNs, n))) return undefined;
    return (await healthy('vm', 'real-drain')) && (await healthy('vm', 'starter')) ? true : undefined;
  }, 600_000);
  log('every Rollout Healthy at its first revision');
  await sandbox.kubectl.apply([rolloutObject('starter', zoneSpec({ retentionPeriod: '2' }), starterSteps)]);
  await waitFor(
    async () => ((await scrape(`http://127.0.0.1:${observePorts.step}`)).size > 0 ? true : undefined),
    120_000,
  );
  log('the step plugin runs (started by a Rollout whose step failed at once)');

  const observe = {
    step: `http://127.0.0.1:${observePorts.step}`,
    gates: `http://127.0.0.1:${observePorts.gates}`,
  };
  const rssPeak: Record<string, number> = {};
  const phase = async (what: string, during?: () => Promise<void>) => {
    const before = { step: await scrape(observe.step), gates: await scrape(observe.gates) };
    await proxy.reset();
    const from = Date.now();
    await during?.();
    const until = from + phaseMs;
    while (Date.now() < until) {
      for (const [role, mib] of Object.entries(pluginRss(controllerPid)))
        rssPeak[`${what}_${role}`] = Math.max(rssPeak[`${what}_${role}`] ?? 0, mib);
      for (const [role, mib] of Object.entries(pluginRss(controllerPid, 'RssAnon')))
        rssPeak[`anon_${role}`] = Math.max(rssPeak[`anon_${role}`] ?? 0, mib);
      await sleep(1000);
    }
    const stats: ProxyStats = await proxy.stats();
    const seconds = (Date.now() - from) / 1000;
    const after = { step: await scrape(observe.step), gates: await scrape(observe.gates) };
    out(`kube_requests_per_s_${what}`, stats.requestsTotal / seconds);
    for (const [key, count] of Object.entries(stats.requests).sort((a, b) => b[1] - a[1]))
      out(`kube_requests_per_s_${what}_${key.replace(/[ /]/g, '_')}`, count / seconds);
    for (const role of ['step', 'gates'] as const) {
      for (const [id, h] of after[role]) {
        const b = before[role].get(id);
        const calls = h.count - (b?.count ?? 0);
        if (calls === 0) continue;
        const base = `rpc_${what}_${id.replace(/[ .]/g, '_')}`;
        out(`${base}_calls`, calls);
        out(`${base}_p50_ms`, quantile(b, h, 0.5) * 1000);
        out(`${base}_p99_ms`, quantile(b, h, 0.99) * 1000);
      }
    }
    // A plugin process the controller has not started (gates before the first AnalysisRun) has no RSS: say so.
    for (const role of ['step', 'gates'])
      out(`plugin_rss_mib_${what}_${role}`, rssPeak[`${what}_${role}`] ?? 'not-running');
  };

  log(`phase idle (${phaseMs / 1000} s)`);
  await phase('idle');
  // What one cluster-wide list of VMClusters weighs (the reconciler's pass without a watch cache).
  out(
    'vmcluster_list_bytes',
    (await sandbox.kubectl.run(['get', '--raw', '/apis/operator.victoriametrics.com/v1beta1/vmclusters']))
      .length,
  );

  // Second revisions: each waits in its analysis (zone-c not ready) with an AnalysisRun in flight.
  await eachLimited(names, (n) => setZoneStatus(`${n}-c`, 'expanding'));
  await sandbox.kubectl.apply([
    ...names.map((n) => placeholderRollout(n, { retentionPeriod: '2' })),
    rolloutObject('real-drain', zoneSpec({ retentionPeriod: '2' }), realSteps),
  ]);
  const arsRunning = async () => {
    const list = await kube.list('argoproj.io/v1alpha1', 'AnalysisRun', scaleNs);
    return list.filter((a) => (a.status as { phase?: string } | undefined)?.phase === 'Running').length;
  };
  await waitFor(async () => ((await arsRunning()) >= rollouts ? true : undefined), 600_000);
  log(`phase analysis (${rollouts} AnalysisRuns running, ${phaseMs / 1000} s)`);
  await phase('analysis');
  out('analysisruns_in_flight', await arsRunning());
  const sizes = (await kube.list('argoproj.io/v1alpha1', 'AnalysisRun', scaleNs)).map(analysisRunSizes);
  out('analysisrun_bytes_avg', avg(sizes.map((s) => s.whole)));
  out('analysisrun_measurement_metadata_bytes_avg', avg(sizes.map((s) => s.metadata)));

  log(`phase walking (zones c ready: every Rollout takes zone-a in drainReads, ${phaseMs / 1000} s)`);
  await phase('walking', () => eachLimited(names, (n) => setZoneStatus(`${n}-c`, 'operational')));
  const leased = (await kube.list('operator.victoriametrics.com/v1beta1', 'VMCluster', scaleNs)).filter(
    (c) => c.metadata.annotations?.['vmzones.io/lease'] !== undefined,
  ).length;
  out('zones_leased_walking', leased);

  // The real drain gate's stored readings, after some minutes of rounds.
  const real = (await kube.list('argoproj.io/v1alpha1', 'AnalysisRun', 'vm')).find(
    (a) => a.metadata.ownerReferences?.[0]?.name === 'real-drain',
  );
  if (real === undefined) throw new Error('the real drain gate has no AnalysisRun');
  const stored = drainState(real);
  out('drain_gate_rounds_stored', stored.rounds);
  out('drain_gate_state_bytes', stored.bytes);
  out('drain_gate_state_bytes_per_round', stored.rounds > 0 ? stored.bytes / stored.rounds : 0);
  out('analysisrun_bytes_real_drain', JSON.stringify(real).length);

  // The product processes over the whole run (idle, 50 AnalysisRuns, 50 walks), and how long the bundle takes from
  // start to its go-plugin handshake under the manifests' flags (the controller waits for that line).
  for (const role of ['step', 'gates'] as const) {
    const peaks = ['idle', 'analysis', 'walking'].flatMap((p) => rssPeak[`${p}_${role}`] ?? []);
    out(`plugin_peak_rss_mib_scale_${role}`, peaks.length === 0 ? 'not-running' : Math.max(...peaks));
    out(`plugin_peak_rss_anon_mib_scale_${role}`, rssPeak[`anon_${role}`] ?? 'not-running');
  }
  const plugin = sandbox.state.plugin;
  if (plugin !== undefined) {
    const env = { KUBECONFIG: sandbox.state.kubeconfig };
    for (const role of ['step', 'gates'] as const)
      out(
        `plugin_start_to_handshake_ms_${role}`,
        // A start that fails here (30 s without the line on a loaded machine) costs this figure, not the others.
        await handshakeMs([plugin.location, ...plugin.args], role, env).catch(
          (error: unknown) => `failed (${error instanceof Error ? error.message : String(error)})`,
        ),
      );
  }
} catch (error) {
  failed = true;
  console.error(`scale bench did not complete: ${error instanceof Error ? error.message : String(error)}`);
  console.error(`  logs: ${sandbox.state.stateDir}/logs`);
} finally {
  await sandbox.stop();
}
if (failed) process.exitCode = 1;

function avg(values: number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

interface MeasuredRun {
  status?: { metricResults?: { measurements?: { metadata?: Record<string, string> }[] }[] };
}

function analysisRunSizes(run: KubeObject): { whole: number; metadata: number } {
  let metadata = 0;
  for (const result of (run as MeasuredRun).status?.metricResults ?? [])
    for (const m of result.measurements ?? []) metadata += JSON.stringify(m.metadata ?? {}).length;
  return { whole: JSON.stringify(run).length, metadata };
}

function drainState(run: KubeObject): { rounds: number; bytes: number } {
  const measurements = (run as MeasuredRun).status?.metricResults?.[0]?.measurements ?? [];
  const state = measurements.at(-1)?.metadata?.['vmzones.io/state'];
  if (state === undefined) return { rounds: 0, bytes: 0 };
  return { rounds: (JSON.parse(state) as { rounds: unknown[] }).rounds.length, bytes: state.length };
}
