// Run (a) of the side-by-side rollout benchmark: vmzones walks three zones under the real Argo Rollouts controller
// with the project's default analysis templates (analysis-templates/, the vmzones-zone-healthy gate between zones)
// and no pause between zones. Returns the figures and the raw records the timeline (rollout-timeline.ts) reads.

import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { vmclusterReadiness } from '../../plugin/vm/vmcluster.ts';
import { renderSteps } from '../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../plugin/zones/spec.ts';
import {
  cluster,
  pluginStatuses,
  rolloutObject,
  rolloutState,
  type SpecDocument,
  sandboxKube,
  startReadProber,
  zoneSpec,
} from '../e2e/step/harness.ts';
import { applyAnalysisTemplates } from '../sandbox/analysis-templates.ts';
import type { Sandbox } from '../sandbox/helper.ts';
import { loadgenStatus } from '../sandbox/loadgen-client.ts';
import { readUser, vmagentName, vmauthName } from '../sandbox/manifests.ts';
import { type RssFigures, sampleRss } from './plugin-processes.ts';
import { type RunFigures, samplesLost, seconds } from './rollout-sandbox.ts';
import type { TimelineRecords, ZoneObservations } from './rollout-timeline.ts';

export const benchZones = [
  { zone: 'zone-a', vmcluster: 'vm-zone-a' },
  { zone: 'zone-b', vmcluster: 'vm-zone-b' },
  { zone: 'zone-c', vmcluster: 'vm-zone-c' },
];

/** The change both products make: a vmstorage flag, so every zone's process restarts. */
export const benchChange = { vmstorage: { extraArgs: { 'search.latencyOffset': '6s' } } };

/** The spec document with the product's defaults (drainGracePeriod 30s, readyTimeout 15m) except the change, and
 *  `waves` when given (the budget's maxZonesOut then defaults to the widest wave). */
function benchSpec(overrideSpec: object, waves?: readonly string[][]): SpecDocument {
  const spec = zoneSpec(overrideSpec);
  const vmauth = { ...(spec.vmauth as Record<string, unknown>) };
  delete vmauth.drainGracePeriod; // the harness shortens it for tests; the benchmark keeps the default
  return { ...spec, vmauth, ...(waves === undefined ? {} : { waves: waves.map((w) => [...w]) }) };
}

/** The third way of the side-by-side benchmark: a canary zone, then the other two together. */
export const benchWaves = [['zone-a'], ['zone-b', 'zone-c']];

export async function runVmzones(
  sandbox: Sandbox,
  log: (line: string) => void,
  /** With vmzones' shipped defaults (render's pause between zones) instead of no pause between zones. */
  shippedDefaults = false,
  /** Walk the zones in these waves (the steps `vmzones render` writes for them) instead of one at a time. */
  waves?: readonly string[][],
): Promise<{ figures: RunFigures; records: TimelineRecords; rss: RssFigures }> {
  const kube = sandboxKube(sandbox);
  const controllerPid = sandbox.state.daemons.find((d) => d.name === 'rollouts-controller')?.pid;
  if (controllerPid === undefined) throw new Error('the sandbox runs no rollouts-controller');
  await applyAnalysisTemplates(sandbox.kubectl);
  const name = 'bench';
  const steps = renderSteps(
    parseSpecDocument(stringify(benchSpec({}, waves))),
    shippedDefaults ? {} : { pauseBetweenZones: 'none' },
  );
  await sandbox.kubectl.apply([rolloutObject(name, benchSpec({}, waves), steps)]);
  const first = await waitFor(async () => {
    const s = await rolloutState(kube, name).catch(() => undefined);
    return s?.status.phase === 'Healthy' ? s : undefined;
  }, 180_000);
  const firstRevision = first.status.currentPodHash;

  const seqBefore = (await loadgenStatus(sandbox)).lastSeq;
  const prober = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const observer = observeZones(sandbox);
  // The product's processes as deployed (the sandbox runs the bundle with the manifests' Node flags): sampled from
  // the commit to the end of the walk, both roles (the gates process starts with the first AnalysisRun).
  const rssSampler = sampleRss(controllerPid);
  const changedAt = Date.now();
  await sandbox.kubectl.apply([rolloutObject(name, benchSpec(benchChange, waves), steps)]);
  log(`vmzones: change committed; ${steps.length} steps`);
  let lastIndex = -1;
  const done = await waitFor(async () => {
    // A poll the API server does not answer (busy, restarting) is a poll without news, not the end of the bench.
    const s = await rolloutState(kube, name).catch(() => undefined);
    if (s === undefined || s.status.currentPodHash === firstRevision) return undefined;
    if (s.status.abort || s.status.phase === 'Degraded')
      throw new Error(`vmzones rollout stopped: ${s.status.phase} ${s.status.message ?? ''}`);
    const index = s.status.currentStepIndex ?? 0;
    if (index !== lastIndex) {
      log(`vmzones: step ${index + 1}/${steps.length} at ${seconds(Date.now() - changedAt).toFixed(1)} s`);
      lastIndex = index;
    }
    return s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash ? s : undefined;
  }, 30 * 60_000);
  const finishedAt = Date.now();
  const rss = await rssSampler.stop();
  const observed = await observer.stop();
  const reads = await prober.stop();
  const seqAfter = (await loadgenStatus(sandbox)).lastSeq - 3;

  const statuses = pluginStatuses(done);
  const analysisRuns = (
    await sandbox.kubectl.getJson<{ items: TimelineRecords['analysisRuns'] }>(['analysisruns', '-n', 'vm'])
  ).items;
  const events = (await sandbox.kubectl.getJson<{ items: TimelineRecords['events'] }>(['events', '-n', 'vm']))
    .items;
  const zones = benchZones.map(({ zone }) => {
    const forZone = statuses.filter((s) => {
      const config = (steps[s.index] as { plugin?: { config: { zone?: string; zones?: string[] } } }).plugin
        ?.config;
      return s.operation === 'Run' && (config?.zone === zone || (config?.zones ?? []).includes(zone));
    });
    const started = forZone.map((s) => Date.parse(String((s as { startedAt?: string }).startedAt)));
    const finished = forZone.map((s) => Date.parse(String((s as { finishedAt?: string }).finishedAt)));
    return { zone, startMs: Math.min(...started), endMs: Math.max(...finished) };
  });
  const lost = await samplesLost(sandbox, benchZones, seqBefore, seqAfter);
  return {
    figures: {
      product: 'vmzones',
      settings: `default templates (vmzones-zone-healthy: drainRounds 3, roundSpacing 1.5s), ${waves === undefined ? '' : `waves ${waves.map((w) => `[${w.join(', ')}]`).join(', ')}, `}pauseBetweenZones ${shippedDefaults ? 'its default' : 'none'}, drainGracePeriod 30s (default; the upper bound of drainQueryCheck inFlight), readyTimeout 15m (default)`,
      zones,
      totalS: seconds(finishedAt - changedAt),
      reads,
      samplesLost: lost,
      samplesChecked: Math.max(0, seqAfter - seqBefore),
    },
    records: {
      changedAtMs: changedAt,
      observed,
      finishedAtMs: finishedAt,
      steps,
      statuses,
      analysisRuns,
      events,
    },
    rss,
  };
}

/** The value of `metric` for the zone's queue (`url="<index>:…"`), summed over the page's series. */
function queueFigure(metrics: string, metric: string, index: number): number | undefined {
  let total: number | undefined;
  for (const l of metrics.split('\n')) {
    if (!l.startsWith(`${metric}{`) || !l.includes(`url="${index}:`)) continue;
    total = (total ?? 0) + Number(l.slice(l.lastIndexOf(' ') + 1));
  }
  return total;
}

/**
 * Every 250 ms: each zone's VMCluster (operational at a generation above the one before the change?) and
 * vmagent's figures for the zone's queue. Records when each zone became operational after its change, when its
 * queue was empty after that, and the last time vmagent's retries or errors for it grew (a block a sender retries
 * is not in the pending bytes: the drain gate counts no round until the retry went through).
 */
function observeZones(sandbox: Sandbox) {
  const kube = sandboxKube(sandbox);
  const agentUrl = sandbox.endpoint('VMAgent', vmagentName).url;
  const observed: Record<string, ZoneObservations> = {};
  const failures: Record<string, number> = {};
  let stopped = false;
  const loop = (async () => {
    const initial = await Promise.all(
      benchZones.map(async (z) => (await cluster(kube, z.vmcluster)).metadata.generation ?? 0),
    );
    while (!stopped) {
      try {
        const metrics = await (await fetch(`${agentUrl}/metrics`)).text();
        for (const [i, z] of benchZones.entries()) {
          const o = observed[z.zone] ?? {};
          observed[z.zone] = o;
          const failed =
            (queueFigure(metrics, 'vmagent_remotewrite_retries_count_total', i + 1) ?? 0) +
            (queueFigure(metrics, 'vmagent_remotewrite_errors_total', i + 1) ?? 0);
          if (failures[z.zone] !== undefined && failed > (failures[z.zone] as number))
            o.lastFailedSendAtMs = Date.now();
          failures[z.zone] = failed;
          if (o.queueEmptyAtMs !== undefined) continue;
          if (o.operationalAtMs === undefined) {
            const vmc = await cluster(kube, z.vmcluster);
            if (
              (vmc.metadata.generation ?? 0) > (initial[i] ?? 0) &&
              vmclusterReadiness(vmc).state === 'ready'
            )
              o.operationalAtMs = Date.now();
          }
          if (
            o.operationalAtMs !== undefined &&
            queueFigure(metrics, 'vmagent_remotewrite_pending_data_bytes', i + 1) === 0
          )
            o.queueEmptyAtMs = Date.now();
        }
      } catch {
        // a failed poll (vmagent or the API busy) leaves the figures as they were
      }
      await sleep(250);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return observed;
    },
  };
}

export async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}
