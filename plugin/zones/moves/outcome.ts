// What a zone move returns: one value that the step actions map to a step result and the reconciler to its
// progress, so that both read the same decision the same way.

/** done: the move is complete; waiting: it progresses and needs another look later; blocked: it cannot start now
 *  (another zone or holder stands in the way); failed: it cannot succeed without a human; lost: a concurrent
 *  writer changed the zone's hands first (a guarded write got 409 and the re-read says the zone is not ours). */
export type MoveKind = 'done' | 'waiting' | 'blocked' | 'failed' | 'lost';

export interface MoveOutcome {
  kind: MoveKind;
  message: string;
  /** A short machine word for what the move waits on, e.g. `vmauth`, `grace`, `otherZones` (step status state). */
  code?: string;
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
  code: string,
  extra: Omit<MoveOutcome, 'kind' | 'message' | 'code'> = {},
): MoveOutcome {
  return { kind: 'waiting', message, code, ...extra };
}

export function blocked(message: string, code: string): MoveOutcome {
  return { kind: 'blocked', message, code };
}

export function failedMove(message: string, code: string): MoveOutcome {
  return { kind: 'failed', message, code };
}

export function lost(message: string): MoveOutcome {
  return { kind: 'lost', message, code: 'lost' };
}
