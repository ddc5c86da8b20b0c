// The zone's intent, stored once on its object: who holds it, what is wanted of it, and who owns its next move.
// Since issue 35 the lease record carries it (`wants`, `nextMove`), so one value on the zone object answers all three;
// the handoff annotation is the reconciler's worksheet (who handed over and why, the balancers to act on, its
// progress note), never the authority for who moves next. Every decision of "is this zone the reconciler's?" and
// "is a rollback wanted?" reads `zoneIntent`, here only.
//
// Upgrade in place: a lease of an earlier build carries no intent. Then it is derived, once, here, from what those
// builds wrote beside it: a handoff means the reconciler moves next (rolled back when the handoff asks for it,
// else restored); without one the step moves next, and what it wants follows the walk's own records (a restore
// started: restored; its change applied: changed; else drained). The next write of the lease stores it.

import {
  type Lease,
  type nextMoves,
  type RolloutIdentity,
  sameRevision,
  type ZoneState,
  type zoneWants,
} from './zone-annotations.ts';

export type ZoneWant = (typeof zoneWants)[number];
export type NextMove = (typeof nextMoves)[number];

/** What the lease stores of the intent (besides its holder and since). */
export interface IntentFields {
  wants: ZoneWant;
  nextMove: NextMove;
}

export interface ZoneIntent extends IntentFields {
  holder: RolloutIdentity;
  /** Since when the holder holds the zone (the lease's `since`; a handoff's request time when there is no lease). */
  since: string;
  /** Stored in the lease (true), or derived from an earlier build's records (false, upgrade in place). */
  stored: boolean;
}

function identityOf(lease: Lease): RolloutIdentity {
  return { rollout: lease.rollout, uid: lease.uid, revision: lease.revision };
}

/** The zone's intent, or undefined when nobody holds it. */
export function zoneIntent(state: ZoneState): ZoneIntent | undefined {
  const { lease, handoff, rollback, maintenance } = state;
  if (lease?.wants !== undefined && lease.nextMove !== undefined) {
    return {
      holder: identityOf(lease),
      since: lease.since,
      wants: lease.wants,
      nextMove: lease.nextMove,
      stored: true,
    };
  }
  if (handoff !== undefined) {
    return {
      holder: lease === undefined ? handoff.holder : identityOf(lease),
      since: lease?.since ?? handoff.requestedAt,
      wants: handoff.rollback ? 'rolledBack' : 'restored',
      nextMove: 'reconciler',
      stored: false,
    };
  }
  if (lease === undefined) return undefined;
  const holder = identityOf(lease);
  const wants: ZoneWant =
    maintenance?.restoringSince !== undefined
      ? 'restored'
      : sameRevision(rollback, holder) && rollback?.phase === 'applied'
        ? 'changed'
        : 'drained';
  return { holder, since: lease.since, wants, nextMove: 'step', stored: false };
}

/** Whether the reconciler owns the zone's next move. */
export function reconcilerMovesNext(state: ZoneState): boolean {
  return zoneIntent(state)?.nextMove === 'reconciler';
}

/** The intent of a zone handed to the reconciler: its change undone first when `rollback`, then its reads back. */
export function handedOverIntent(rollback: boolean): IntentFields {
  return { wants: rollback ? 'rolledBack' : 'restored', nextMove: 'reconciler' };
}
