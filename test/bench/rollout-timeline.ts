// Per-zone timeline of a vmzones walk, from the records the controller leaves: step plugin statuses (startedAt,
// finishedAt and the step's own status document), AnalysisRuns (measurement startedAt/finishedAt and gate rounds)
// and events. Splits each zone's wall time into real work, configured waits and dead time.

import { defaultQueueDrainConfig } from '../../plugin/gates/queue-drain.ts';
import { GoDurationError, parseGoDurationMs } from '../../plugin/kube/go-duration.ts';
import type { CanaryStep } from '../../plugin/zones/render.ts';
import type { StepPluginStatus } from '../e2e/step/harness.ts';

export interface TimelineRecords {
  changedAtMs: number;
  observed?: Record<string, ZoneObservations>;
  finishedAtMs: number;
  steps: CanaryStep[];
  statuses: StepPluginStatus[];
  analysisRuns: {
    metadata: { name: string; creationTimestamp: string; labels?: Record<string, string> };
    spec?: { args?: { name: string; value?: string }[] };
    status?: {
      phase?: string;
      startedAt?: string;
      metricResults?: {
        name: string;
        phase?: string;
        measurements?: {
          phase?: string;
          startedAt?: string;
          finishedAt?: string;
          metadata?: Record<string, string>;
        }[];
      }[];
    };
  }[];
  events: {
    involvedObject?: { kind?: string; name?: string };
    reason?: string;
    message?: string;
    firstTimestamp?: string;
    lastTimestamp?: string;
    eventTime?: string;
  }[];
}

/** What the benchmark saw itself, polling every 250 ms: per zone, when its VMCluster was operational at the new
 * generation after the change, and when vmagent's queue for it was empty after that. */
export interface ZoneObservations {
  operationalAtMs?: number;
  queueEmptyAtMs?: number;
  /** The last 250 ms reading at which vmagent's retries or errors for the zone's queue had grown. */
  lastFailedSendAtMs?: number;
}

export interface ZoneTimeline {
  zone: string;
  wallS: number;
  /** drainReads started → the VMUser was patched (drainedAt). */
  drainCallS: number;
  /** VMUser patched → every vmauth serves the config without the zone (reloadedAt). */
  vmauthReloadS: number;
  /** reloadedAt → the drain's end: no query in flight on the zone's query pods (queriesDoneAt), or else
   *  graceUntil, the configured drainGracePeriod. */
  drainGraceS: number;
  /** The drain's end → apply succeeded (appliedAt): controller requeue beyond the drain. */
  graceToApplyS: number;
  /** appliedAt → the VMCluster operational at the new generation: the operator's rollout. */
  operatorS: number;
  /** operational → vmagent's queue for the zone empty. */
  queueCatchUpS: number;
  /** (K−1) × roundSpacing: the spacing K independent good readings need. */
  evidenceS: number;
  /** Analysis created → its first measurement started. */
  analysisStartS: number;
  /** queue empty → the drain gate's first counted good round (windowStart). */
  firstGoodRoundS: number;
  /** queue empty → vmagent's last failed send to the zone (its retry backoff; 0 when it failed no more after). */
  retryingS: number;
  /** first good round → last one, beyond (K−1) × roundSpacing. */
  roundOvershootS: number;
  /** analysis done → restoreReads done. */
  restoreS: number;
  /** wall − (drain call + vmauth reload + grace + operator + catch-up + evidence). */
  deadS: number;
  gateReadings: number;
  /** Evidence kept: the drain's vmauth proof (reloadedAt in its status), the drain gate's good rounds (its value's
   *  consecutiveGoodRounds when it passed), the restore's vmauth proof (its status reached `restored`). */
  drainProof: number;
  queueRounds: number;
  restoreProof: number;
  /** 1 when the gate's last round came after vmagent's last retry or error for the zone (the bench's 250 ms
   *  readings): it passed on a queue with no block held in a backoff. */
  afterLastRetry: number;
}

const ms = (iso: string | undefined) => (iso === undefined ? Number.NaN : Date.parse(iso));
const s = (fromMs: number, toMs: number) => (toMs - fromMs) / 1000;

interface DrainStatus {
  drainedAt?: string;
  reloadedAt?: string;
  graceUntil?: string;
  queriesDoneAt?: string;
}

/** The zones a step is for (one, or a wave's: `zones` in a step's config, comma-separated in the gate's arg). */
function zonesOf(step: CanaryStep | undefined): { zones: string[]; action: string } | undefined {
  if (step === undefined) return undefined;
  if ('plugin' in step) {
    const config = step.plugin.config as { zone?: string; zones?: string[]; action: string };
    return { zones: config.zones ?? (config.zone === undefined ? [] : [config.zone]), action: config.action };
  }
  if ('analysis' in step)
    return { zones: String(step.analysis.args[0]?.value).split(','), action: 'analysis' };
  return undefined;
}

/** A zone's own status in a step's status: a wave step keeps each zone's under `zones.<zone>`. */
function zoneStatus(status: unknown, zone: string): unknown {
  const zones = (status as { zones?: Record<string, unknown> } | undefined)?.zones;
  return zones?.[zone] ?? status;
}

/** A Go duration argument in seconds; undefined when absent or not a Go duration (the default then applies). */
function argSeconds(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parseGoDurationMs(value) / 1000;
  } catch (err) {
    if (err instanceof GoDurationError) return undefined;
    throw err;
  }
}

/** The per-zone timeline; `observed` adds the benchmark's own 250 ms readings of operational and queue empty. */
export function zoneTimelines(
  records: TimelineRecords,
  observed: Record<string, ZoneObservations> = records.observed ?? {},
  drainRounds = defaultQueueDrainConfig.consecutiveRounds,
  roundSpacingS = defaultQueueDrainConfig.minRoundSpacingMs / 1000,
): ZoneTimeline[] {
  const zones = [...new Set(records.steps.flatMap((st) => zonesOf(st)?.zones ?? []))];
  return zones.map((zone) => {
    const run = (action: string) => {
      const index = records.steps.findIndex(
        (st) => zonesOf(st)?.zones.includes(zone) === true && zonesOf(st)?.action === action,
      );
      return records.statuses.find((st) => st.index === index && st.operation === 'Run') as
        | (StepPluginStatus & { startedAt?: string; finishedAt?: string })
        | undefined;
    };
    const drain = run('drainReads');
    const apply = run('apply');
    const restore = run('restoreReads');
    const drainStatus = (zoneStatus(drain?.status, zone) ?? {}) as DrainStatus;
    const appliedAt = ms((zoneStatus(apply?.status, zone) as { appliedAt?: string } | undefined)?.appliedAt);
    const analysis = records.analysisRuns.find((a) =>
      a.spec?.args?.some((arg) => arg.name === 'zone' && arg.value?.split(',').includes(zone) === true),
    );
    // The gate's own K and spacing where its AnalysisRun carries them (the template's args), else the defaults.
    const arg = (name: string) => analysis?.spec?.args?.find((x) => x.name === name)?.value;
    const rounds = Number(arg('drainRounds') ?? drainRounds);
    const spacingS = argSeconds(arg('roundSpacing')) ?? roundSpacingS;
    const drainMetric = analysis?.status?.metricResults?.find((m) => m.name === 'vmagent-queue-drained');
    const measurement = drainMetric?.measurements?.at(-1) as
      | { startedAt?: string; finishedAt?: string; value?: string; metadata?: Record<string, string> }
      | undefined;
    type DrainFigures = {
      drained?: boolean;
      consecutiveGoodRounds?: number;
      agents?: Record<string, { windowStart?: string; latestRoundAt?: string }>;
    };
    const value = (() => {
      try {
        // A wave's gate keeps each zone's figures under `zones.<zone>` (plugin/gates/wave-reading.ts).
        const parsed = JSON.parse(measurement?.value ?? '{}') as DrainFigures & {
          zones?: Record<string, DrainFigures>;
        };
        return parsed.zones?.[zone] ?? parsed;
      } catch {
        return {};
      }
    })();
    const agent = Object.values(value.agents ?? {})[0];
    const operationalAt = observed[zone]?.operationalAtMs ?? Number.NaN;
    const queueEmptyAt = Math.max(observed[zone]?.queueEmptyAtMs ?? operationalAt, operationalAt);
    const lastFailedSendAt = observed[zone]?.lastFailedSendAtMs;
    const drainEnd = ms(drainStatus.queriesDoneAt ?? drainStatus.graceUntil);
    const start = ms(drain?.startedAt);
    const end = ms(restore?.finishedAt);
    const analysisDone = ms(measurement?.finishedAt);
    const line = {
      zone,
      wallS: s(start, end),
      drainCallS: s(start, ms(drainStatus.drainedAt)),
      vmauthReloadS: s(ms(drainStatus.drainedAt), ms(drainStatus.reloadedAt)),
      drainGraceS: s(ms(drainStatus.reloadedAt), drainEnd),
      graceToApplyS: s(drainEnd, appliedAt),
      operatorS: s(appliedAt, operationalAt),
      queueCatchUpS: s(operationalAt, queueEmptyAt),
      evidenceS: (rounds - 1) * spacingS,
      analysisStartS: s(ms(analysis?.metadata.creationTimestamp), ms(measurement?.startedAt)),
      firstGoodRoundS: s(queueEmptyAt, ms(agent?.windowStart)),
      retryingS: Math.max(0, s(queueEmptyAt, lastFailedSendAt ?? queueEmptyAt)),
      afterLastRetry: lastFailedSendAt === undefined || lastFailedSendAt <= ms(agent?.latestRoundAt) ? 1 : 0,
      roundOvershootS: s(ms(agent?.windowStart), ms(agent?.latestRoundAt)) - (rounds - 1) * spacingS,
      restoreS: s(analysisDone, end),
      gateReadings: Number(measurement?.metadata?.['vmzones.io/readings'] ?? Number.NaN),
      drainProof: drainStatus.reloadedAt === undefined ? 0 : 1,
      queueRounds: value.drained === true ? (value.consecutiveGoodRounds ?? 0) : 0,
      restoreProof: (() => {
        const st = (zoneStatus(restore?.status, zone) ?? {}) as Record<string, unknown>;
        // restoreReads reaches `restored` only once every vmauth replica proved it serves the zone again.
        return st.state === 'restored' ? 1 : 0;
      })(),
    };
    const work =
      line.drainCallS +
      line.vmauthReloadS +
      line.drainGraceS +
      line.operatorS +
      line.queueCatchUpS +
      line.evidenceS;
    return { ...line, deadS: line.wallS - work };
  });
}

export function printTimeline(timelines: ZoneTimeline[]): string[] {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '?');
  const rows: [string, (t: ZoneTimeline) => number][] = [
    ['wall (drainReads start → restoreReads done)', (t) => t.wallS],
    ['  drainReads call → VMUser patched', (t) => t.drainCallS],
    ['  vmauth reload (patched → served)', (t) => t.vmauthReloadS],
    ['  drain: served → no query in flight (or grace)', (t) => t.drainGraceS],
    ['  operator rollout (applied → operational)', (t) => t.operatorS],
    ['  queue catch-up (operational → empty)', (t) => t.queueCatchUpS],
    ['  evidence: (K−1) × roundSpacing', (t) => t.evidenceS],
    ['  dead time (the rest)', (t) => t.deadS],
    ['    of which drain end → apply', (t) => t.graceToApplyS],
    ['    of which analysis created → 1st reading', (t) => t.analysisStartS],
    ['    of which queue empty → 1st good round', (t) => t.firstGoodRoundS],
    ['      of it vmagent retrying (→ its last retry or error)', (t) => t.retryingS],
    ['    of which round spacing overshoot', (t) => t.roundOvershootS],
    ['    of which analysis done → restoreReads done', (t) => t.restoreS],
    ['  drain gate readings', (t) => t.gateReadings],
    ['evidence: vmauth proof of the drain (1 = kept)', (t) => t.drainProof],
    ['evidence: queue drained, good rounds (K = 3)', (t) => t.queueRounds],
    ['evidence: vmauth proof of the restore (1 = kept)', (t) => t.restoreProof],
    ["evidence: passed after vmagent's last retry (1)", (t) => t.afterLastRetry],
  ];
  const lines = [
    '\n---- vmzones per-zone timeline (s; step statuses, AnalysisRuns, 250 ms observations) ----',
  ];
  lines.push(`${''.padEnd(48)}${timelines.map((t) => t.zone.padStart(9)).join('')}`);
  for (const [label, pick] of rows)
    lines.push(`${label.padEnd(48)}${timelines.map((t) => f(pick(t)).padStart(9)).join('')}`);
  const dead = [...timelines.map((t) => t.deadS)].sort((a, b) => a - b);
  lines.push(`dead_time_per_zone_s ${f(dead[Math.floor(dead.length / 2)] ?? Number.NaN)}`);
  return lines;
}
