// The figures (Measurement.Value) of a vmagentQueueDrained reading: totals over the agents, and each agent's
// own verdict figures, for successCondition / failureCondition and for people reading the AnalysisRun.

import type { DrainGateConfig } from './config.ts';
import type { Targets } from './drain-targets.ts';
import type { QueueDrainVerdict } from './queue-drain.ts';

export function drainFigures(
  config: DrainGateConfig,
  targets: Targets,
  verdicts: QueueDrainVerdict[],
  zoneReady: boolean | null,
  roundsKept: number,
): Record<string, unknown> {
  const sum = (pick: (verdict: QueueDrainVerdict) => number | null) =>
    verdicts.reduce<number | null>((total, verdict) => {
      const value = pick(verdict);
      return total === null || value === null ? null : total + value;
    }, 0);
  const agents: Record<string, unknown> = {};
  targets.agents.forEach((agent, position) => {
    const verdict = verdicts[position] as QueueDrainVerdict;
    agents[agent.key] = { ...verdict.figures, message: verdict.message };
  });
  return {
    gate: config.gate,
    zone: config.zone ?? null,
    namespace: targets.namespace,
    vmcluster: targets.vmcluster ?? null,
    drained: verdicts.every((verdict) => verdict.verdict === 'drained'),
    dataLost: verdicts.some((verdict) => verdict.verdict === 'dataLost'),
    zoneReady,
    pendingDataBytes: sum((verdict) => verdict.figures.pendingDataBytes),
    onDiskPendingBytes: sum((verdict) => verdict.figures.onDiskPendingBytes),
    consecutiveGoodRounds: Math.min(...verdicts.map((verdict) => verdict.figures.consecutiveGoodRounds)),
    requiredRounds: verdicts[0]?.figures.requiredRounds ?? null,
    podCount: verdicts.reduce((total, verdict) => total + Object.keys(verdict.figures.pods).length, 0),
    roundsKept,
    agents,
  };
}
