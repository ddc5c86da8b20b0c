// Gate vmagentQueueDrained: has every vmagent that writes to the zone delivered everything it queued for it?
// Each reading is one round: every pod of every agent is scraped, the zone's queue is picked by its
// remote-write index (the VMAgent's spec.remoteWrite order) and cross-checked by its directory name (hashed
// from the URL the pod's process was started with). Rounds are kept in the measurement between Run and Resume
// (only Kubernetes holds state) and judged by judgeQueueDrain; see queue-drain.ts for what "drained" means.

import { createHash } from 'node:crypto';
import type { KubeObject } from '../kube/objects.ts';
import { describePod, listSelectedPods, selectorFromLabels } from '../vm/pods.ts';
import { pickQueueSamples, queueMetricNameList, remoteWriteQueueDirName } from '../vm/remote-write.ts';
import { ScrapeError, scrapeMetrics } from '../vm/scrape.ts';
import { resolveScrapeAccess, type ScrapeAccess } from '../vm/scrape-credentials.ts';
import {
  expectedVmagentPods,
  explicitZoneQueue,
  remoteWriteUrls,
  remoteWriteUrlsFromPod,
  vmagentPodLabels,
  vmagentRef,
  zoneQueueOf,
} from '../vm/vmagent.ts';
import { vmclusterReadiness, vmclusterRef } from '../vm/vmcluster.ts';
import { type DrainGateConfig, GateConfigError } from './config.ts';
import {
  type DrainRound,
  defaultQueueDrainConfig,
  judgeQueueDrain,
  type PodScrape,
  type QueueDrainConfig,
  type QueueDrainVerdict,
} from './queue-drain.ts';
import type { GateContext, GateReading } from './reading.ts';
import { explicitNamespace, type SpecZone, zoneFromSpec } from './zone-target.ts';

export const defaultDrainTimeoutMs = 30 * 60_000;
/** Rounds kept beyond the K needed: one more gives the oldest counted round a predecessor to compare with. */
const extraRoundsKept = 2;

export class MalformedMetricsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedMetricsError';
  }
}

interface AgentTarget {
  /** VMAgent name, or `pods(<selector>)` for pods named only by a selector. */
  readonly key: string;
  readonly vmagent: KubeObject | undefined;
  readonly selector: string;
  readonly expectedPods: number | undefined;
  readonly index: number;
  /** The zone's URL as the VMAgent spec lists it (may hold credentials: never shown or stored). */
  readonly specUrl: string | undefined;
  /** Digest of the whole spec.remoteWrite list, to notice an edit without storing URLs. */
  readonly listDigest: string | null;
}

interface StoredRound {
  readonly at: number;
  readonly zoneReady: boolean | null;
  readonly agents: Record<string, PodScrape[]>;
}

/** Kept in Measurement.Metadata between readings. */
export interface DrainState {
  readonly v: 1;
  readonly agents: Record<string, { index: number; listDigest: string | null }>;
  readonly baselineDirs: Record<string, string[]>;
  readonly zoneReadySince: number | null;
  readonly rounds: StoredRound[];
}

function digest(urls: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(urls)).digest('hex').slice(0, 16);
}

interface Targets {
  namespace: string;
  vmcluster: string | undefined;
  agents: AgentTarget[];
}

async function resolveTargets(config: DrainGateConfig, context: GateContext): Promise<Targets> {
  const selector = config.pods?.selector;
  const explicitAgents = config.vmagents ?? (config.vmagent === undefined ? undefined : [config.vmagent]);
  const explicitQueue = config.remoteWriteUrl !== undefined || config.remoteWriteIndex !== undefined;
  const needSpec =
    (config.vmcluster === undefined && config.zone !== undefined) ||
    (explicitAgents === undefined && selector === undefined);
  let zone: SpecZone | undefined;
  if (needSpec) zone = await zoneFromSpec(context, config.zone, 'the vmcluster and vmagents');
  const namespace = config.namespace ?? zone?.namespace ?? explicitNamespace(context, undefined);
  const vmcluster = config.vmcluster ?? zone?.vmcluster;
  const agentSource = zone?.spec.vmagent;
  const agentNames =
    explicitAgents ??
    (selector !== undefined
      ? []
      : (agentSource?.vmagents ?? (agentSource?.vmagent === undefined ? [] : [agentSource.vmagent])));
  if (selector !== undefined && agentNames.length > 1) {
    throw new GateConfigError([
      'pods.selector: names the pods of one agent; with it, set at most one vmagent',
    ]);
  }
  if (vmcluster === undefined && !explicitQueue) {
    throw new GateConfigError([
      'zone: required to tell which remote-write queue feeds the zone (or set vmcluster, remoteWriteUrl or remoteWriteIndex)',
    ]);
  }
  const agents: AgentTarget[] = [];
  for (const name of agentNames) {
    const vmagent = await context.kube.get(vmagentRef(namespace, name));
    const urls = remoteWriteUrls(vmagent);
    const queue = explicitQueue
      ? explicitZoneQueue(vmagent, {
          ...(config.remoteWriteUrl === undefined ? {} : { remoteWriteUrl: config.remoteWriteUrl }),
          ...(config.remoteWriteIndex === undefined ? {} : { remoteWriteIndex: config.remoteWriteIndex }),
        })
      : zoneQueueOf(vmagent, vmcluster as string, namespace);
    agents.push({
      key: name,
      vmagent,
      selector: selector ?? selectorFromLabels(vmagentPodLabels(name)),
      expectedPods: selector === undefined ? expectedVmagentPods(vmagent) : undefined,
      index: queue.index,
      specUrl: queue.url,
      listDigest: digest(urls),
    });
  }
  if (agentNames.length === 0 && selector !== undefined) {
    if (config.remoteWriteIndex === undefined) {
      throw new GateConfigError([
        'remoteWriteIndex: required when the pods are named only by pods.selector (no VMAgent to read the order from)',
      ]);
    }
    agents.push({
      key: `pods(${selector})`,
      vmagent: undefined,
      selector,
      expectedPods: undefined,
      index: config.remoteWriteIndex,
      specUrl: config.remoteWriteUrl,
      listDigest: null,
    });
  }
  if (agents.length === 0) throw new GateConfigError(['vmagent: no vmagent writes to the zone']);
  return { namespace, vmcluster, agents };
}

async function scrapeAgent(
  kube: GateContext['kube'],
  agent: AgentTarget,
  namespace: string,
  config: DrainGateConfig,
  access: ScrapeAccess,
): Promise<{ pods: PodScrape[]; keys: string[] }> {
  const { active } = await listSelectedPods(kube, namespace, agent.selector);
  const port = config.pods?.port ?? 'http';
  const specCount = agent.vmagent === undefined ? undefined : remoteWriteUrls(agent.vmagent).length;
  const scrapes = await Promise.all(
    active.map(async (object): Promise<PodScrape> => {
      const pod = describePod(object, port);
      if (pod.address === undefined) return { pod: pod.key, ok: false, error: pod.problem ?? 'no address' };
      const podUrls = remoteWriteUrlsFromPod(object);
      if (podUrls !== undefined && specCount !== undefined && podUrls.length !== specCount) {
        return {
          pod: pod.key,
          ok: false,
          error:
            `its process has ${podUrls.length} -remoteWrite.url values but VMAgent ${agent.key} lists ${specCount} ` +
            '(the pod runs another version of the spec; a rollout of the agent is in progress?)',
        };
      }
      const hashedUrl = podUrls?.[agent.index - 1] ?? agent.specUrl;
      const expectedDirName =
        hashedUrl === undefined ? undefined : await remoteWriteQueueDirName(agent.index, hashedUrl);
      try {
        const page = await scrapeMetrics(
          {
            url: `${access.scheme}://${pod.address}/metrics`,
            ...(access.tls === undefined ? {} : { tls: access.tls }),
            ...(access.auth === undefined ? {} : { auth: access.auth }),
          },
          queueMetricNameList,
          {
            ...(config.pods?.scrapeTimeout === undefined ? {} : { timeoutMs: config.pods.scrapeTimeout }),
            ...(config.pods?.maxScrapeBytes === undefined
              ? {}
              : { maxBodyBytes: config.pods.maxScrapeBytes }),
          },
        );
        return {
          pod: pod.key,
          ok: true,
          queue: pickQueueSamples(page.samples, {
            index: agent.index,
            ...(expectedDirName === undefined ? {} : { expectedDirName }),
          }),
        };
      } catch (error) {
        if (!(error instanceof ScrapeError)) throw error;
        if (error.kind === 'malformed') throw new MalformedMetricsError(`pod ${pod.key}: ${error.message}`);
        return { pod: pod.key, ok: false, error: error.message };
      }
    }),
  );
  const keys = scrapes.map((scrape) => scrape.pod);
  const missing = (agent.expectedPods ?? 0) - active.length;
  for (let position = 1; position <= missing; position++) {
    const key = `${namespace}/${agent.key}#missing-${position}`;
    keys.push(key);
    scrapes.push({
      pod: key,
      ok: false,
      error: `VMAgent ${agent.key} asks for ${agent.expectedPods} pods but ${active.length} exist`,
    });
  }
  return { pods: scrapes, keys };
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

export function parseDrainState(value: unknown): DrainState | undefined {
  if (value === undefined) return undefined;
  const state = value as Partial<DrainState>;
  if (state.v !== 1 || !Array.isArray(state.rounds) || typeof state.agents !== 'object') {
    throw new Error('the measurement carries no drain state this plugin version understands');
  }
  return state as DrainState;
}

export async function readVmagentDrained(
  config: DrainGateConfig,
  context: GateContext,
  previous: DrainState | undefined,
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
  const targets = await resolveTargets(config, context);
  const requireZoneReady = config.requireZoneReady ?? targets.vmcluster !== undefined;
  if (requireZoneReady && targets.vmcluster === undefined) {
    throw new GateConfigError([
      'requireZoneReady: needs the zone or vmcluster to know which VMCluster to check',
    ]);
  }
  const access = await resolveScrapeAccess(
    context.kube,
    targets.namespace,
    config.pods?.scheme ?? 'http',
    config.pods?.tls,
    config.pods?.auth,
  );

  let readinessMessage: string | undefined;
  let zoneReady: boolean | null = null;
  if (requireZoneReady) {
    const readiness = vmclusterReadiness(
      await context.kube.get(vmclusterRef(targets.namespace, targets.vmcluster as string)),
    );
    zoneReady = readiness.state === 'ready';
    if (!zoneReady) readinessMessage = readiness.message;
  }

  const scraped = await Promise.all(
    targets.agents.map((agent) => scrapeAgent(context.kube, agent, targets.namespace, config, access)),
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
        `VMAgent ${agent.key}: spec.remoteWrite changed since the gate started` +
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
      if (scrape.ok && baselineDirs[scrape.pod] === undefined) {
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
    };
    const all = judgeQueueDrain(input);
    if (all.verdict === 'dataLost' || !requireZoneReady) return all;
    if (zoneReadySince === null) {
      // No round counts while the zone is down, but its raw figures still show what the queue holds.
      return {
        ...all,
        verdict: 'notDrained',
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

  const state: DrainState = { v: 1, agents: agentsState, baselineDirs, zoneReadySince, rounds };
  const figures = drainFigures(config, targets, verdicts, zoneReady, rounds.length);
  const lost = verdicts.findIndex((verdict) => verdict.verdict === 'dataLost');
  const base = { figures, state, timeoutMs, pollMs: settings.minRoundSpacingMs };
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

function drainFigures(
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
