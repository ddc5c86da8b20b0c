// The waits the three step actions share: for the reconciler to finish earlier work on the zone (with a
// deadline), and the answer to a lost guarded write (run the action again on the zone as it is now).

import { KubeError } from '../../kube/objects.ts';
import type { StepResult } from '../../rollouts/types.ts';
import type { Handoff } from '../state/zone-annotations.ts';
import { timestamp } from '../state/zone-annotations.ts';
import { running, type StatusDocument } from './outcome.ts';
import { handoffWaitFactor, stepWait, waitingSince, waitStatus } from './wait-deadline.ts';

export interface WaitClock {
  now(): Date;
}

/** Running while the reconciler works on the zone; Failed once it took longer than twice readyTimeout, with the
 *  zone left as it is (the reconciler goes on finishing it, and a retry of the step waits again). */
export function waitForReconciler(
  deps: WaitClock,
  target: { readyTimeoutMs: number; spec: { readyTimeout: string } },
  previous: unknown,
  handoff: Handoff,
  message: string,
  status: StatusDocument,
): StepResult {
  const now = deps.now();
  const since = waitingSince(previous, 'waitingForHandoff', now);
  return stepWait(
    now,
    {
      since,
      timeoutMs: handoffWaitFactor * target.readyTimeoutMs,
      code: 'HandoffTimeout',
      late: `${message}; the reconciler did not finish within ${handoffWaitFactor} × readyTimeout ${target.spec.readyTimeout} (waiting since ${timestamp(since)}); check the reconciler's log and the zone's handoff annotation`,
    },
    () =>
      running(message, {
        ...status,
        ...waitStatus('waitingForHandoff', since),
        since: handoff.requestedAt,
      }),
  );
}

/** A guarded write lost to a concurrent move: a conflict, which the step plugin retries from a fresh read. */
export function lostRace(zone: string, name: string): never {
  throw new KubeError(
    'conflict',
    `zone ${zone}: ${name} changed hands while this step decided; deciding again`,
    409,
  );
}
