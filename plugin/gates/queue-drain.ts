// The vmagentQueueDrained verdict: a pure function over a series of scrape rounds of every vmagent pod that
// writes to the zone (docs/victoriametrics.md, "vmagent's remote-write queues"). "Drained" needs evidence, never the absence of it:
//
// - K consecutive good rounds, taken at least `minRoundSpacingMs` apart. A round is good when EVERY
//   configured pod was scraped, its zone queue was identified (index and directory name), and on it:
//   pending bytes (vmagent_remotewrite_pending_data_bytes, in-memory + on-disk) ≤ maxPendingDataBytes,
//   on-disk bytes (vm_persistentqueue_bytes_pending) ≤ maxOnDiskPendingBytes, retries and errors did not
//   grow since the pod's previous scrape, no counter went backwards (a restart), and the pod's list of
//   remote-write queues is the one it had at the start.
// - Across the window, every pod delivered something (2xx requests or bytes sent grew), unless the gate is
//   configured for "no ingestion expected": pending == 0 proves nothing while a sender retries a block it
//   took off the queue (same section).
// - Any growth of a drop counter at any time → `dataLost`, a verdict of its own: waiting longer won't help.
//
// Rounds are judged as given; the caller decides which rounds count (e.g. only those after the zone became
// ready, via `notBefore`).

import { CodedError } from '../goplugin/failure-codes.ts';
import {
  type QueueFigureName,
  type QueueMetricNames,
  queueSeriesName,
  sendsAwaitingRetry,
} from '../vm/remote-write.ts';
import type { PodScrape } from './drain-state.ts';

export interface QueueDrainConfig {
  /**
   * K: good rounds in a row needed. Default 3: three independent readings of a queue staying empty while data
   * kept flowing, which a still-draining queue's momentary dip to zero does not fake (docs/gates.md).
   */
  readonly consecutiveRounds: number;
  /**
   * Default 1 MiB. At steady state vmagent's in-memory queue holds at most a block or two waiting for a free
   * sender (blocks are typically tens of KB), so demanding exactly 0 would flap under load; a real backlog
   * shows up in the on-disk figure (the in-memory queue spills to disk when full) and in retries. 0 = strict.
   */
  readonly maxPendingDataBytes: number;
  /** Default 0: anything left in the on-disk queue is undelivered data. */
  readonly maxOnDiskPendingBytes: number;
  /**
   * Default 1.5 s = vmagent's default -remoteWrite.flushInterval (1 s) + 0.5 s for the flushed block's send to end.
   * Rounds closer together than this don't count separately towards K: between two counted rounds at least one
   * flush put new data on the queue and its send attempt ended, and a failed attempt shows at once (errors or a
   * non-2xx answer, and a send waiting to retry until its retry), so each round is a reading of its own
   * (docs/gates.md, "Why rounds 1.5 s apart").
   */
  readonly minRoundSpacingMs: number;
  /**
   * Default true: every pod must have delivered data (2xx requests or bytes sent grew) within the window.
   * Set false only where the agents are known to receive nothing during the check.
   */
  readonly ingestionExpected: boolean;
}

export const defaultQueueDrainConfig: QueueDrainConfig = {
  consecutiveRounds: 3,
  maxPendingDataBytes: 1024 * 1024,
  maxOnDiskPendingBytes: 0,
  minRoundSpacingMs: 1_500,
  ingestionExpected: true,
};

export type { PodScrape } from './drain-state.ts';

export interface DrainRound {
  /** When the round was taken, in ms since the epoch. */
  readonly at: number;
  readonly pods: readonly PodScrape[];
}

export interface QueueDrainInput {
  /** Every configured agent pod (e.g. `namespace/name`): each must be scraped in every counted round. */
  readonly pods: readonly string[];
  /** The zone's remote-write index (1-based), for messages. */
  readonly queueIndex: number;
  readonly rounds: readonly DrainRound[];
  /** Queue directory names per pod when the rollout started; without it, the pod's first scrape here. */
  readonly baselineQueueDirs?: Readonly<Record<string, readonly string[]>>;
  /** Rounds taken before this time (ms since the epoch) are ignored, e.g. those before the zone was ready. */
  readonly notBefore?: number;
  readonly config?: Partial<QueueDrainConfig>;
  /** The writer's series names, for messages; default vmagent's. */
  readonly names?: QueueMetricNames;
}

export type QueueDrainVerdictKind = 'drained' | 'notDrained' | 'dataLost';

export type PodFigures =
  | ({ readonly reachable: true; readonly queuePaths: readonly string[] } & Partial<
      Record<QueueFigureName, number>
    >)
  | { readonly reachable: false; readonly error: string };

export interface QueueDrainFigures {
  readonly verdict: QueueDrainVerdictKind;
  readonly drained: boolean;
  readonly dataLost: boolean;
  readonly queueIndex: number;
  readonly consecutiveGoodRounds: number;
  readonly requiredRounds: number;
  /** Sums over the pods of the latest round; null when a pod's value is unknown. */
  readonly pendingDataBytes: number | null;
  readonly onDiskPendingBytes: number | null;
  /** The latest round's raw values per pod. */
  readonly pods: Readonly<Record<string, PodFigures>>;
  readonly latestRoundAt: string | null;
  readonly windowStart: string | null;
}

export interface QueueDrainVerdict {
  readonly verdict: QueueDrainVerdictKind;
  readonly message: string;
  /**
   * The latest round is not good only because a send is still failing: retries or errors grew since the round
   * before, or a send waits out its backoff with a block. The next round that sees neither starts the count.
   */
  readonly retrying: boolean;
  readonly figures: QueueDrainFigures;
}

export class QueueDrainConfigError extends CodedError {
  constructor(problem: string) {
    super('GateConfigInvalid', `queue drain config: ${problem}`);
    this.name = 'QueueDrainConfigError';
  }
}

// Counters that only grow while a vmagent process lives; a decrease means it restarted.
const counterFigures: readonly QueueFigureName[] = [
  'requests',
  'failedRequests',
  'bytesSent',
  'retries',
  'errors',
  'packetsDropped',
  'onDiskBytesDropped',
  'onDiskBlocksDropped',
  'samplesDropped',
];
const dropFigures: readonly QueueFigureName[] = [
  'packetsDropped',
  'onDiskBytesDropped',
  'onDiskBlocksDropped',
  'samplesDropped',
];
const failureFigures: readonly QueueFigureName[] = ['retries', 'errors'];

function resolveConfig(partial: Partial<QueueDrainConfig> | undefined): QueueDrainConfig {
  const config = { ...defaultQueueDrainConfig, ...partial };
  if (!Number.isInteger(config.consecutiveRounds) || config.consecutiveRounds < 1) {
    throw new QueueDrainConfigError(
      `consecutiveRounds must be a whole number ≥ 1, got ${config.consecutiveRounds}`,
    );
  }
  for (const key of ['maxPendingDataBytes', 'maxOnDiskPendingBytes', 'minRoundSpacingMs'] as const) {
    if (!Number.isFinite(config[key]) || config[key] < 0) {
      throw new QueueDrainConfigError(`${key} must be a number ≥ 0, got ${config[key]}`);
    }
  }
  if (typeof config.ingestionExpected !== 'boolean') {
    throw new QueueDrainConfigError(
      `ingestionExpected must be true or false, got ${String(config.ingestionExpected)}`,
    );
  }
  return config;
}

type OkScrape = Extract<PodScrape, { ok: true }>;

function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

function summarize(problems: readonly string[]): string {
  const shown = problems.slice(0, 3).join('; ');
  return problems.length > 3 ? `${shown}; and ${problems.length - 3} more` : shown;
}

/** Judges the drain of one remote-write queue over the given rounds. */
export function judgeQueueDrain(input: QueueDrainInput): QueueDrainVerdict {
  const config = resolveConfig(input.config);
  const rounds = input.rounds
    .filter((round) => input.notBefore === undefined || round.at >= input.notBefore)
    .toSorted((a, b) => a.at - b.at);
  const queue = `remote-write queue ${input.queueIndex}`;

  // Per pod, its successful scrapes in time order, and the previous successful scrape for each round.
  const previousOk = new Map<DrainRound, Map<string, OkScrape>>();
  const lastOk = new Map<string, OkScrape>();
  const firstOk = new Map<string, OkScrape>();
  const lossProblems: string[] = [];
  for (const round of rounds) {
    previousOk.set(round, new Map(lastOk));
    for (const scrape of round.pods) {
      if (!scrape.ok) continue;
      const before = lastOk.get(scrape.pod);
      if (before !== undefined) lossProblems.push(...droppedData(scrape, before, round.at, input.names));
      lastOk.set(scrape.pod, scrape);
      if (!firstOk.has(scrape.pod)) firstOk.set(scrape.pod, scrape);
    }
  }

  /** The problems that say a send is still failing (retries or errors grew, a send waits to retry), to tell them
   *  from the others. */
  const sendFailures = new Set<string>();
  const roundProblems = (round: DrainRound): string[] => {
    const problems: string[] = [];
    const previous = previousOk.get(round) ?? new Map<string, OkScrape>();
    for (const pod of input.pods) {
      const scrape = round.pods.find((candidate) => candidate.pod === pod);
      if (scrape === undefined) {
        problems.push(`pod ${pod} was not scraped`);
        continue;
      }
      if (!scrape.ok) {
        problems.push(`pod ${pod} is unreachable: ${scrape.error}`);
        continue;
      }
      problems.push(...podProblems(pod, scrape, previous.get(pod)));
    }
    return problems;
  };

  const podProblems = (pod: string, scrape: OkScrape, previous: OkScrape | undefined): string[] => {
    const problems: string[] = [];
    const { figures } = scrape.queue;
    problems.push(...scrape.queue.problems.map((problem) => `pod ${pod}: ${problem}`));
    if (scrape.queue.missing.length > 0) {
      problems.push(`pod ${pod} lacks the series ${scrape.queue.missing.join(', ')}`);
    }
    const baseline = input.baselineQueueDirs?.[pod] ?? firstOk.get(pod)?.queue.allQueueDirNames;
    if (baseline !== undefined && !sameList(baseline, scrape.queue.allQueueDirNames)) {
      problems.push(
        `pod ${pod}: the remote-write queues changed since the start (were ${baseline.join(', ') || 'none'}, ` +
          `now ${scrape.queue.allQueueDirNames.join(', ') || 'none'}): the -remoteWrite.url list was edited`,
      );
    }
    const pending = figures.pendingDataBytes;
    if (pending !== undefined && pending > config.maxPendingDataBytes) {
      problems.push(
        `pod ${pod} has ${pending} bytes pending for ${queue} (at most ${config.maxPendingDataBytes} allowed)`,
      );
    }
    const onDisk = figures.onDiskPendingBytes;
    if (onDisk !== undefined && onDisk > config.maxOnDiskPendingBytes) {
      problems.push(
        `pod ${pod} has ${onDisk} bytes in the on-disk queue for ${queue} (at most ${config.maxOnDiskPendingBytes} allowed)`,
      );
    }
    // A send waiting out its backoff holds a block that pending bytes no longer count: not drained, however quiet
    // the counters stay meanwhile (the wait doubles up to -remoteWrite.retryMaxInterval while the zone was down).
    const waiting = sendsAwaitingRetry(figures);
    if (waiting !== undefined && waiting > 0) {
      const problem =
        `pod ${pod}: ${waiting} send(s) to ${queue} wait to retry a block (${queueSeriesName('errors', input.names)} + ` +
        `${queueSeriesName('failedRequests', input.names)} − ${queueSeriesName('retries', input.names)} − ` +
        `${queueSeriesName('packetsDropped', input.names)})`;
      sendFailures.add(problem);
      problems.push(problem);
    }
    if (previous !== undefined) {
      for (const figure of counterFigures) {
        const now = figures[figure];
        const before = previous.queue.figures[figure];
        if (now !== undefined && before !== undefined && now < before) {
          problems.push(
            `pod ${pod} restarted (${queueSeriesName(figure, input.names)} went back from ${before} to ${now})`,
          );
          return problems;
        }
      }
      for (const figure of failureFigures) {
        const now = figures[figure];
        const before = previous.queue.figures[figure];
        if (now !== undefined && before !== undefined && now > before) {
          const problem = `pod ${pod}: ${queueSeriesName(figure, input.names)} grew by ${now - before} since the previous scrape`;
          sendFailures.add(problem);
          problems.push(problem);
        }
      }
    }
    return problems;
  };

  const latest = rounds.at(-1);
  const latestProblems = latest === undefined ? [] : roundProblems(latest);
  const spaced: DrainRound[] = [];
  for (let index = rounds.length - 1; index >= 0; index--) {
    const round = rounds[index] as DrainRound;
    const problems = round === latest ? latestProblems : roundProblems(round);
    if (problems.length > 0) break;
    const lastPicked = spaced.at(-1);
    if (lastPicked === undefined || lastPicked.at - round.at >= config.minRoundSpacingMs) spaced.push(round);
    if (spaced.length === config.consecutiveRounds) break;
  }

  const result = (
    verdict: QueueDrainVerdictKind,
    message: string,
    windowStart?: DrainRound,
  ): QueueDrainVerdict => ({
    verdict,
    message,
    retrying:
      verdict === 'notDrained' &&
      latestProblems.length > 0 &&
      latestProblems.every((problem) => sendFailures.has(problem)),
    figures: buildFigures(verdict, input, config, latest, spaced.length, windowStart),
  });

  if (lossProblems.length > 0) {
    return result('dataLost', `data was dropped for ${queue}: ${summarize(lossProblems)}`);
  }
  if (input.pods.length === 0) {
    return result('notDrained', `no vmagent pods are configured for ${queue}; nothing proves it drained`);
  }
  if (latest === undefined) return result('notDrained', `no scrape of the vmagent pods yet for ${queue}`);
  if (latestProblems.length > 0) {
    return result('notDrained', `${queue} is not drained: ${summarize(latestProblems)}`);
  }
  if (spaced.length < config.consecutiveRounds) {
    return result(
      'notDrained',
      `${queue} looks drained in ${spaced.length} of the ${config.consecutiveRounds} consecutive rounds ` +
        `(at least ${config.minRoundSpacingMs / 1000} s apart) needed`,
    );
  }
  const windowStart = spaced.at(-1) as DrainRound;
  if (config.ingestionExpected) {
    const stalled = input.pods.filter((pod) => !delivered(pod, windowStart, latest));
    if (stalled.length > 0) {
      return result(
        'notDrained',
        `${queue}: no data was delivered by ${stalled.map((pod) => `pod ${pod}`).join(', ')} between ` +
          `${isoTime(windowStart.at)} and ${isoTime(latest.at)} (2xx requests and bytes sent did not grow); ` +
          'if the agents receive no data during the check, configure ingestionExpected: false',
        windowStart,
      );
    }
  }
  return result(
    'drained',
    `${queue} drained on all ${input.pods.length} vmagent pods: ${config.consecutiveRounds} consecutive rounds ` +
      `from ${isoTime(windowStart.at)} to ${isoTime(latest.at)} with nothing on disk, at most ` +
      `${config.maxPendingDataBytes} bytes pending, no retries, errors or drops` +
      (config.ingestionExpected ? ', and data delivered by every pod' : ''),
    windowStart,
  );
}

function scrapeOf(round: DrainRound, pod: string): OkScrape | undefined {
  const scrape = round.pods.find((candidate) => candidate.pod === pod);
  return scrape?.ok === true ? scrape : undefined;
}

function delivered(pod: string, from: DrainRound, to: DrainRound): boolean {
  const before = scrapeOf(from, pod)?.queue.figures;
  const after = scrapeOf(to, pod)?.queue.figures;
  if (before === undefined || after === undefined) return false;
  const grew = (figure: QueueFigureName) => {
    const a = before[figure];
    const b = after[figure];
    return a !== undefined && b !== undefined && b > a;
  };
  return grew('requests') || grew('bytesSent');
}

/** Drop counters that grew between two successful scrapes of one pod (after a restart: any non-zero value). */
function droppedData(
  scrape: OkScrape,
  before: OkScrape,
  at: number,
  names: QueueMetricNames | undefined,
): string[] {
  const problems: string[] = [];
  const restarted = counterFigures.some((figure) => {
    const now = scrape.queue.figures[figure];
    const then = before.queue.figures[figure];
    return now !== undefined && then !== undefined && now < then;
  });
  for (const figure of dropFigures) {
    const now = scrape.queue.figures[figure];
    const then = before.queue.figures[figure];
    if (now === undefined) continue;
    const grown = restarted ? now : then === undefined ? 0 : now - then;
    if (grown > 0) {
      problems.push(
        `pod ${scrape.pod}: ${queueSeriesName(figure, names)} grew by ${grown} by ${isoTime(at)}${restarted ? ' (after a restart)' : ''}`,
      );
    }
  }
  return problems;
}

function buildFigures(
  verdict: QueueDrainVerdictKind,
  input: QueueDrainInput,
  config: QueueDrainConfig,
  latest: DrainRound | undefined,
  goodRounds: number,
  windowStart: DrainRound | undefined,
): QueueDrainFigures {
  const pods: Record<string, PodFigures> = {};
  let pendingDataBytes: number | null = 0;
  let onDiskPendingBytes: number | null = 0;
  for (const pod of input.pods) {
    const scrape = latest?.pods.find((candidate) => candidate.pod === pod);
    if (scrape === undefined || !scrape.ok) {
      pods[pod] = { reachable: false, error: scrape === undefined ? 'not scraped' : scrape.error };
      pendingDataBytes = null;
      onDiskPendingBytes = null;
      continue;
    }
    pods[pod] = { reachable: true, queuePaths: scrape.queue.queuePaths, ...scrape.queue.figures };
    const { pendingDataBytes: pending, onDiskPendingBytes: onDisk } = scrape.queue.figures;
    pendingDataBytes = pendingDataBytes === null || pending === undefined ? null : pendingDataBytes + pending;
    onDiskPendingBytes =
      onDiskPendingBytes === null || onDisk === undefined ? null : onDiskPendingBytes + onDisk;
  }
  if (input.pods.length === 0 || latest === undefined) {
    pendingDataBytes = null;
    onDiskPendingBytes = null;
  }
  return {
    verdict,
    drained: verdict === 'drained',
    dataLost: verdict === 'dataLost',
    queueIndex: input.queueIndex,
    consecutiveGoodRounds: goodRounds,
    requiredRounds: config.consecutiveRounds,
    pendingDataBytes,
    onDiskPendingBytes,
    pods,
    latestRoundAt: latest === undefined ? null : isoTime(latest.at),
    windowStart: windowStart === undefined ? null : isoTime(windowStart.at),
  };
}
