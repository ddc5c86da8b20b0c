// What a zone move returns: one value that the step actions map to a step result and the reconciler to its
// progress, so that both read the same decision the same way.

import { type FailureCode, isFailureCode } from '../../goplugin/failure-codes.ts';

/** done: the move is complete; waiting: it progresses and needs another look later; blocked: it cannot start now
 *  (another zone or holder stands in the way); failed: it cannot succeed without a human; lost: a concurrent
 *  writer changed the zone's hands first (a guarded write got 409 and the re-read says the zone is not ours). */
export type MoveKind = 'done' | 'waiting' | 'blocked' | 'failed' | 'lost';

export type WaitCode = 'vmauth' | 'grace' | 'queries' | 'operational' | 'queues' | 'lost';

export interface MoveOutcome {
  kind: MoveKind;
  message: string;
  /** What the move waits on (`vmauth`, `grace`, `queries` in flight, `operational`, `queues`), or, when it is blocked or failed, the
   *  failure code (plugin/goplugin/failure-codes.ts) the step fails with once it gives up. */
  code?: WaitCode | FailureCode;
  /** Since when the move waits for what `code` names, for a deadline. */
  since?: Date;
  /** Until when it waits, when that is known (the end of a grace period). */
  until?: Date;
}

export function done(message: string, extra: Omit<MoveOutcome, 'kind' | 'message'> = {}): MoveOutcome {
  return { kind: 'done', message, ...extra };
}

export function waiting(
  message: string,
  code: WaitCode,
  extra: Omit<MoveOutcome, 'kind' | 'message' | 'code'> = {},
): MoveOutcome {
  return { kind: 'waiting', message, code, ...extra };
}

export function blocked(message: string, code: FailureCode): MoveOutcome & { code: FailureCode } {
  return { kind: 'blocked', message, code };
}

export function failedMove(message: string, code: FailureCode): MoveOutcome & { code: FailureCode } {
  return { kind: 'failed', message, code };
}

/** The failure code a blocked or failed outcome carries; `Unexpected` if a move forgot it. */
export function outcomeFailureCode(outcome: MoveOutcome): FailureCode {
  return outcome.code !== undefined && isFailureCode(outcome.code) ? outcome.code : 'Unexpected';
}

export function lost(message: string): MoveOutcome {
  return { kind: 'lost', message, code: 'lost' };
}
