// The short waits inside a call that save a controller round trip: a move checks again until its answer is done or
// the caller's in-call wait is over (the reconciler waits 0: it looks again next pass).

import type { Clock } from '../../goplugin/index.ts';
import type { ObjectChange } from '../../kube/objects.ts';

export const inCallPollMs = 250;

/** What an in-call wait needs: the clock and how long it may wait. */
export interface InCallWait extends Clock {
  inCallWaitMs: number;
}

/**
 * Checks until `done` or `deps.inCallWaitMs` has passed (on `deps`' clock); the last answer is returned. Between
 * checks it waits for `changeOf(answer)` — a watch of what the answer rests on (KubeObjects.changeOf) — and
 * checks again only once that changed; without one it polls every 250 ms. With 50 walks waiting on VMUsers the
 * polls were most of the plugins' API requests (docs/scale.md). Every answer is still a fresh read; the watch
 * only says when one is worth making.
 */
export async function waitInCall<T>(
  deps: Pick<InCallWait, 'inCallWaitMs' | 'now' | 'sleep'>,
  check: () => Promise<T>,
  done: (value: T) => boolean,
  changeOf?: (value: T) => ObjectChange | undefined,
): Promise<T> {
  const deadline = deps.now().getTime() + deps.inCallWaitMs;
  for (;;) {
    const checkedAt = deps.now().getTime();
    const value = await check();
    if (done(value) || deps.now().getTime() + inCallPollMs > deadline) return value;
    const change = changeOf?.(value);
    if (change === undefined) {
      await deps.sleep(inCallPollMs);
      continue;
    }
    const woken = await Promise.race([
      change.changed.then(() => true),
      deps.sleep(Math.max(0, deadline - deps.now().getTime())).then(() => false),
    ]);
    change.cancel();
    // Nothing changed until the deadline: the answer stands (no read to find the same again).
    if (!woken) return value;
    // A watched copy behind the read wakes at once: never check more often than the polling did.
    const pause = checkedAt + inCallPollMs - deps.now().getTime();
    if (pause > 0) await deps.sleep(pause);
  }
}
