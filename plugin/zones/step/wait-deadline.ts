// Every wait of a step ends (issue 21 item 3): a step that waits records since when in its status, the next Run
// reads it back, and past the deadline the step fails with a message naming what never came.

import type { FailureCode } from '../../goplugin/failure-codes.ts';
import type { StepResult } from '../../rollouts/types.ts';
import { pastDeadline } from '../moves/deadline.ts';
import { timestamp } from '../state/zone-annotations.ts';
import { StepFailure } from './outcome.ts';

/** Every state a step's status says (`status.state`), one declared vocabulary: what a zone's step has reached, or
 *  what it waits on (docs/step-plugin.md). */
export const stepStates = [
  'drained',
  'restored',
  'grace',
  'queriesInFlight',
  'waitingForVmauth',
  'waitingForVMCluster',
  'waitingForOtherZones',
  'waitingForServingZones',
  'waitingForLease',
  'waitingForHandoff',
] as const;
export type StepState = (typeof stepStates)[number];

/** The status field of a state. */
export function stepState(state: StepState): { state: StepState } {
  return { state };
}

/** How long a step waits for the reconciler to finish earlier work on its zone: the reconciler may itself wait
 *  for the operator (readyTimeout), for vmauth and for the grace period, so twice readyTimeout. */
export const handoffWaitFactor = 2;

/** Since when the step has waited in `state`: from the previous Run's status when it waited in the same state,
 *  else from now. */
export function waitingSince(previous: unknown, state: StepState, now: Date): Date {
  return (previousState(previous) === state ? previousTime(previous, 'waitingSince') : undefined) ?? now;
}

/** A time the previous Run's status carried in `field` (an RFC 3339 string), if it is one. */
export function previousTime(previous: unknown, field: string): Date | undefined {
  if (typeof previous !== 'object' || previous === null) return undefined;
  const value = (previous as Record<string, unknown>)[field];
  return typeof value === 'string' && !Number.isNaN(Date.parse(value)) ? new Date(value) : undefined;
}

function previousState(previous: unknown): unknown {
  return typeof previous === 'object' && previous !== null
    ? (previous as Record<string, unknown>).state
    : undefined;
}

/** The status fields of a wait: the state and since when, to carry into the next Run. */
export function waitStatus(state: StepState, since: Date): { state: StepState; waitingSince: string } {
  return { state, waitingSince: timestamp(since) };
}

/**
 * The one deadline check of the step's own waits (for the reconciler, for the zone to become operational, for
 * vmauth after a restore; the drain's are the take-out move's): Running before the deadline, past it a StepFailure
 * with the wait's code and words naming what never came.
 */
export function stepWait(
  now: Date,
  wait: { since: Date; timeoutMs: number; code: FailureCode; late: string },
  waiting: () => StepResult,
): StepResult {
  if (pastDeadline(wait.since, wait.timeoutMs, now)) throw new StepFailure(wait.code, wait.late);
  return waiting();
}
