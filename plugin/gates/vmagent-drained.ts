// Gate vmagentQueueDrained: has every vmagent that writes to the zone delivered everything it queued for it?
// Each reading is one round: the agents (drain-targets.ts) are scraped (drain-scrape.ts), the round is added to
// the state kept in the measurement between Run and Resume (drain-state.ts), and the rounds are judged by
// judgeQueueDrain (queue-drain.ts says what "drained" means); drain-figures.ts sums up the figures.

import { queueMetricNamesOf } from '../vm/remote-write.ts';
import { resolveScrapeAccess } from '../vm/scrape-credentials.ts';
import { vmclusterReadiness } from '../vm/vmcluster.ts';
import { zoneObjectRef } from '../vm/zone-kinds.ts';
import { type DrainGateConfig, GateConfigError } from './config.ts';
import { drainFigures } from './drain-figures.ts';
import { scrapeAgent } from './drain-scrape.ts';
import type { DrainState, StoredRound } from './drain-state.ts';
import { type DrainPlaces, drainPlaces, resolveTargets } from './drain-targets.ts';
import type { GateContext, GateReading } from './gate-reading.ts';
import {
  type DrainRound,
  defaultQueueDrainConfig,
  judgeQueueDrain,
  type PodScrape,
  type QueueDrainConfig,
  type QueueDrainVerdict,
} from './queue-drain.ts';

const defaultDrainTimeoutMs = 30 * 60_000;
/** Rounds kept beyond the K needed: one more gives the oldest counted round a predecessor to compare with. */
const extraRoundsKept = 2;

/**
 * The most the state may take in Measurement.Metadata (JSON characters). The controller writes the whole AnalysisRun
 * on every reading and sends it to the plugin with every call, so the readings it carries are capped: extra rounds
 * go first, and a state whose K rounds alone are larger (very many pods × consecutiveRounds) fails the measurement
 * with a message rather than growing the object towards etcd's request limit (docs/scale.md, "Limits").
 */
export const maxStoredStateChars = 128 * 1024;

/** The rounds to store: all that fit under the cap, never fewer than the K that prove a drain. */
function capRounds(state: DrainState, needed: number): DrainState {
  // Judged from the newest round, at the first reading already: K rounds like it must fit.
  const newest = state.rounds.at(-1);
  const perRound = newest === undefined ? 0 : JSON.stringify(newest).length + 1;
  const projected = JSON.stringify({ ...state, rounds: [] }).length + perRound * needed;
  if (projected > maxStoredStateChars) {
    const pods = Object.values(newest?.agents ?? {}).reduce((n, p) => n + p.length, 0);
    throw new GateConfigError([
      `consecutiveRounds: ${needed} rounds of ${pods} vmagent pods need ${Math.ceil(projected / 1024)} KiB of stored ` +
        `readings, more than the ${maxStoredStateChars / 1024} KiB an AnalysisRun measurement may carry; ask for ` +
        'fewer rounds with a longer roundSpacing, or split the agents over several metrics (vmagent)',
    ]);
  }
  let capped = state;
  while (capped.rounds.length > needed && JSON.stringify(capped).length > maxStoredStateChars) {
    capped = { ...capped, rounds: capped.rounds.slice(1) };
  }
  return capped;
}

function drainSettings(config: DrainGateConfig): QueueDrainConfig {
  return {
    consecutiveRounds: config.consecutiveRounds ?? defaultQueueDrainConfig.consecutiveRounds,
    maxPendingDataBytes: config.maxPendingDataBytes ?? defaultQueueDrainConfig.maxPendingDataBytes,
    maxOnDiskPendingBytes: config.maxOnDiskPendingBytes ?? defaultQueueDrainConfig.maxOnDiskPendingBytes,
    minRoundSpacingMs: config.roundSpacing ?? defaultQueueDrainConfig.minRoundSpacingMs,
    ingestionExpected: config.ingestionExpected ?? defaultQueueDrainConfig.ingestionExpected,
  };
}

/** How soon the gate looks again while the zone's VMCluster is not ready (no round counts until it is). */
export const notReadyPollMs = 2_000;
/**
 * How soon the gate looks again after a round in which vmagent's retries or errors for the zone grew, or a send
 * waits to retry: the first round that sees them stand still starts the count, so the count starts 0.5–1 s after
 * the last retry instead of 1.5–3 s (a roundSpacing). Half of -remoteWrite.retryMinInterval (1 s): a retry that
 * fails again shows in errors at once, and the counted rounds after it are still roundSpacing apart
 * (docs/gates.md, "Where the count starts").
 */
export const retryingPollMs = 500;

export async function readVmagentDrained(
  config: DrainGateConfig,
  context: GateContext,
  previous: DrainState | undefined,
  /** Where to read, when the caller knows (the reconciler's rollback check); default: from the spec document. */
  places?: DrainPlaces,
): Promise<GateReading> {
  const settings = drainSettings(config);
  const timeoutMs = config.timeout ?? defaultDrainTimeoutMs;
  const windowMs = (settings.consecutiveRounds - 1) * settings.minRoundSpacingMs;
  if (timeoutMs < windowMs) {
    throw new GateConfigError([
      `timeout: ${timeoutMs / 1000} s is shorter than the ${settings.consecutiveRounds} rounds ` +
        `${settings.minRoundSpacingMs / 1000} s apart that prove a drain`,
    ]);
  }
  const where = places ?? (await drainPlaces(config, context));
  // The VMAgents and their pods (and the Secrets of scrape credentials) live where the VMAgents run.
  const targets = await resolveTargets(config, { ...context, kube: where.agents });
  const requireZoneReady = config.requireZoneReady ?? targets.vmcluster !== undefined;
  if (requireZoneReady && targets.vmcluster === undefined) {
    throw new GateConfigError([
      'requireZoneReady: needs the zone or vmcluster to know which VMCluster to check',
    ]);
  }
  const access = await resolveScrapeAccess(
    where.agents,
    targets.namespace,
    config.pods?.scheme ?? 'http',
    config.pods?.tls,
    config.pods?.auth,
  );

  let readinessMessage: string | undefined;
  let zoneReady: boolean | null = null;
  if (requireZoneReady) {
    const readiness = vmclusterReadiness(
      await where.zone.get(zoneObjectRef(targets.kind, targets.namespace, targets.vmcluster as string)),
    );
    zoneReady = readiness.state === 'ready';
    if (!zoneReady) readinessMessage = readiness.message;
  }

  const scraped = await Promise.all(
    targets.agents.map((agent) =>
      scrapeAgent(where.agents, agent, targets.namespace, config, access, where.agentsCluster),
    ),
  );

  // Carry the state forward: rounds, per-pod baselines, the agents' remote-write lists at the start.
  const agentsAtStart = previous?.agents ?? {};
  const listProblems: string[] = [];
  const agentsState: DrainState['agents'] = { ...agentsAtStart };
  for (const agent of targets.agents) {
    const first = agentsAtStart[agent.key];
    if (first === undefined) {
      agentsState[agent.key] = { index: agent.index, listDigest: agent.listDigest };
    } else if (first.index !== agent.index || first.listDigest !== agent.listDigest) {
      listProblems.push(
        `${agent.writer.kind} ${agent.key}: spec.remoteWrite changed since the gate started` +
          (first.index !== agent.index
            ? ` (the zone's queue moved from index ${first.index} to ${agent.index})`
            : ''),
      );
    }
  }
  const baselineDirs: Record<string, string[]> = { ...(previous?.baselineDirs ?? {}) };
  const round: StoredRound = { at: context.now, zoneReady, agents: {} };
  targets.agents.forEach((agent, position) => {
    const result = scraped[position] as { pods: PodScrape[] };
    round.agents[agent.key] = result.pods;
    for (const scrape of result.pods) {
      // A page without the queue series lists no queues: that is no baseline, the next page that has them is.
      if (scrape.ok && baselineDirs[scrape.pod] === undefined && scrape.queue.allQueueDirNames.length > 0) {
        baselineDirs[scrape.pod] = [...scrape.queue.allQueueDirNames];
      }
    }
  });
  const rounds = [...(previous?.rounds ?? []), round].slice(-(settings.consecutiveRounds + extraRoundsKept));
  const zoneReadySince = !requireZoneReady
    ? null
    : zoneReady
      ? (previous?.zoneReadySince ?? context.now)
      : null;

  const verdicts = targets.agents.map((agent, position) => {
    const agentRounds: DrainRound[] = rounds.map((stored) => ({
      at: stored.at,
      pods: stored.agents[agent.key] ?? [],
    }));
    const input = {
      pods: (scraped[position] as { keys: string[] }).keys,
      queueIndex: agent.index,
      rounds: agentRounds,
      baselineQueueDirs: baselineDirs,
      config: settings,
      names: queueMetricNamesOf(agent.writer),
    };
    const all = judgeQueueDrain(input);
    if (all.verdict === 'dataLost' || !requireZoneReady) return all;
    if (zoneReadySince === null) {
      // No round counts while the zone is down, but its raw figures still show what the queue holds.
      return {
        ...all,
        verdict: 'notDrained',
        retrying: false,
        message: 'no round counts while the zone is not ready',
        figures: {
          ...all.figures,
          verdict: 'notDrained',
          drained: false,
          consecutiveGoodRounds: 0,
          windowStart: null,
        },
      } satisfies QueueDrainVerdict;
    }
    return judgeQueueDrain({ ...input, notBefore: zoneReadySince });
  });

  const state = capRounds(
    { v: 1, agents: agentsState, baselineDirs, zoneReadySince, rounds },
    settings.consecutiveRounds,
  );
  const figures = drainFigures(config, targets, verdicts, zoneReady, rounds.length);
  const lost = verdicts.findIndex((verdict) => verdict.verdict === 'dataLost');
  // While the zone is not ready no round counts, so looking again a whole roundSpacing later only delays the first
  // counted round (up to 10 s after the zone came back, measured in test/bench/rollout-vs-vmdistributed.ts); the
  // same holds while vmagent still retries (retryingPollMs). The counted rounds keep their spacing: K of them still
  // span ≥ (K−1) × roundSpacing, every reading between them good.
  const retrying = readinessMessage === undefined && verdicts.some((verdict) => verdict.retrying);
  const spacing = settings.minRoundSpacingMs;
  const pollMs =
    readinessMessage !== undefined
      ? Math.min(notReadyPollMs, spacing)
      : retrying
        ? Math.min(retryingPollMs, spacing)
        : spacing;
  // Counting: every agent's latest round good, some still short of K. Its remaining rounds are due in this long.
  const counting =
    readinessMessage === undefined &&
    listProblems.length === 0 &&
    lost < 0 &&
    verdicts.every((verdict) => verdict.verdict === 'drained' || verdict.figures.consecutiveGoodRounds > 0);
  const evidenceDueInMs = counting
    ? Math.max(
        ...verdicts.map(
          (verdict) => (settings.consecutiveRounds - verdict.figures.consecutiveGoodRounds) * spacing,
        ),
      )
    : undefined;
  const base = {
    figures,
    state,
    timeoutMs,
    pollMs,
    ...(evidenceDueInMs !== undefined && { evidenceDueInMs }),
  };
  const agentMessage = (position: number) =>
    `${targets.agents.length > 1 ? `${targets.agents[position]?.key}: ` : ''}${verdicts[position]?.message ?? ''}`;
  if (lost >= 0) return { ...base, verdict: 'fail', message: agentMessage(lost) };
  if (listProblems.length > 0) {
    return { ...base, verdict: 'wait', message: `not drained: ${listProblems.join('; ')}` };
  }
  if (readinessMessage !== undefined) {
    return {
      ...base,
      verdict: 'wait',
      message: `not drained: ${readinessMessage}; rounds count only once the zone is ready`,
    };
  }
  // Every agent still waiting, the furthest from drained first.
  const pending = verdicts
    .map((verdict, position) => ({ verdict, position }))
    .filter(({ verdict }) => verdict.verdict !== 'drained')
    .sort((a, b) => a.verdict.figures.consecutiveGoodRounds - b.verdict.figures.consecutiveGoodRounds);
  if (pending.length > 0) {
    return {
      ...base,
      verdict: 'wait',
      message: pending.map(({ position }) => agentMessage(position)).join('; '),
    };
  }
  return {
    ...base,
    verdict: 'pass',
    message: verdicts.map((_, position) => agentMessage(position)).join('; '),
  };
}
