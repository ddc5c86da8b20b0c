// The one polling helper of the tests that run on the sandbox (and of the sandbox's own start, through
// test/sandbox/processes.ts's waitFor): wait until `check` returns a value, or fail saying what was awaited and the
// last error seen. A wait also asks "can it still become true?": its own `unless` checks (the Rollout aborted or
// went Degraded: test/e2e/step/harness.ts's rolloutCanProgress) and the standing checks every wait makes (a daemon
// of a running sandbox died: registered by test/sandbox/helper.ts). When one of them gives a reason, the wait fails
// at once with it instead of waiting out its timeout.

import { setTimeout as sleep } from 'node:timers/promises';

/** A reason the awaited condition can no longer become true, or undefined while it still can. */
export type StillPossible = () => Promise<string | undefined> | string | undefined;

export interface WaitClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realClock: WaitClock = { now: () => Date.now(), sleep: (ms) => sleep(ms) };

export interface EventuallyOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** This wait's own "can it still become true?" checks. */
  unless?: StillPossible | readonly StillPossible[];
  /** Default: the real clock (unit tests pass a fake one). */
  clock?: WaitClock;
}

export class WaitError extends Error {
  readonly what: string;
  /** "timeout", or "impossible" when a check said the condition can no longer become true. */
  readonly kind: 'timeout' | 'impossible';
  /** The reason a check gave, or the last error `check` threw. */
  readonly detail: string | undefined;
  readonly elapsedMs: number;
  constructor(what: string, kind: 'timeout' | 'impossible', detail: string | undefined, elapsedMs: number) {
    const seconds = `${Math.round(elapsedMs / 100) / 10} s`;
    super(
      kind === 'impossible'
        ? `gave up waiting for ${what} after ${seconds}: ${detail}`
        : `timed out after ${seconds} waiting for ${what}${detail ? `: ${detail}` : ''}`,
    );
    this.name = 'WaitError';
    this.what = what;
    this.kind = kind;
    this.detail = detail;
    this.elapsedMs = elapsedMs;
  }
}

const standing = new Set<StillPossible>();

/** The waits in progress in this process, so that a stop from outside can say what it interrupted. */
const inProgress = new Set<{ what: string; started: number }>();

/** The line a test process writes, per wait in progress, when a signal stops it (read by scripts/test.ts). */
export const interruptedWaitPrefix = '[sandbox] a signal stopped this process while waiting for: ';

/** What this process is waiting for right now, oldest first, with how long (real clock). */
export function waitsInProgress(now = Date.now()): { what: string; seconds: number }[] {
  return [...inProgress].map((w) => ({ what: w.what, seconds: (now - w.started) / 1000 }));
}

/** Adds a check every wait makes (until the returned function removes it). */
export function checkDuringEveryWait(check: StillPossible): () => void {
  standing.add(check);
  return () => {
    standing.delete(check);
  };
}

async function firstReason(checks: readonly StillPossible[]): Promise<string | undefined> {
  for (const check of checks) {
    const reason = await check();
    if (reason !== undefined) return reason;
  }
  return undefined;
}

export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutOrOptions: number | EventuallyOptions = {},
  intervalMs?: number,
): Promise<T> {
  const options = typeof timeoutOrOptions === 'number' ? { timeoutMs: timeoutOrOptions } : timeoutOrOptions;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const interval = intervalMs ?? options.intervalMs ?? 500;
  const clock = options.clock ?? realClock;
  const own = options.unless === undefined ? [] : [options.unless].flat();
  const started = clock.now();
  const entry = { what, started: Date.now() };
  inProgress.add(entry);
  try {
    return await waitFor(what, check, { timeoutMs, interval, clock, own, started });
  } finally {
    inProgress.delete(entry);
  }
}

async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  w: { timeoutMs: number; interval: number; clock: WaitClock; own: StillPossible[]; started: number },
): Promise<T> {
  const { timeoutMs, interval, clock, own, started } = w;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    const reason = await firstReason([...own, ...standing]);
    if (reason !== undefined) throw new WaitError(what, 'impossible', reason, clock.now() - started);
    if (clock.now() - started >= timeoutMs) {
      throw new WaitError(
        what,
        'timeout',
        last === undefined ? undefined : last instanceof Error ? last.message : String(last),
        clock.now() - started,
      );
    }
    await clock.sleep(interval);
  }
}
