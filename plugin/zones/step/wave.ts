// A step over a wave (`config: {zones: [...], action}`, docs/step-plugin.md "Waves"): the action runs for every zone
// of the wave, the zones' waits at once, each zone with its own lease, evidence, rollback record and deadline, and one
// result says how the wave stands.
// Each zone's status is kept under `zones.<zone>` and handed back to that zone's next call, as the controller hands
// a one-zone step its own.

import { type FailureCode, isFailureCode } from '../../goplugin/failure-codes.ts';
import type { StepResult } from '../../rollouts/types.ts';
import type { ZoneAction } from './actions.ts';
import { failed, running, type StatusDocument, successful } from './outcome.ts';
import type { StepState } from './wait-deadline.ts';

/** The status a zone's previous call returned, from the wave's status; undefined on its first call. */
export function zoneStatusIn(previous: unknown, zone: string): unknown {
  if (typeof previous !== 'object' || previous === null) return undefined;
  const zones = (previous as { zones?: unknown }).zones;
  if (typeof zones !== 'object' || zones === null) return undefined;
  return (zones as Record<string, unknown>)[zone];
}

export interface WaveCall {
  /** Run stops at the first zone that failed in its turn (below): a wave that fails aborts, and Abort undoes what
   *  was done. Abort and Terminate go through every zone: the controller calls them once. */
  stopAtFailure: boolean;
  /** The zones move together (Run): each zone's writes to what the wave's zones share (the balancers) happen in a
   *  turn of its own, one zone after another, and the zones' waits run at once (docs/step-plugin.md "Waves").
   *  Without it (Abort, Terminate) every zone's call runs whole, one after another. */
  together?: ZoneTurns;
}

/** How a wave's zones take turns: `needsTurn` says, from the zone's previous status in the wave, whether its call
 *  may still write what the other zones' calls write too (a balancer); `waitsOnly` whether the result of its turn
 *  says it is now only waiting (its write made: it writes nothing shared again). */
export interface ZoneTurns {
  needsTurn(previous: unknown): boolean;
  waitsOnly(result: StepResult): boolean;
}

/** One zone's call: `turn` when it runs in its turn (no in-call wait: the next zone's turn comes as soon as this
 *  one has written), else with the in-call wait, beside the other zones; `previous`: the status of the zone's last
 *  call (its turn's in this call, else the wave's previous status), undefined on its first. */
export type ZoneCall = (zone: string, turn: boolean, previous: unknown) => Promise<StepResult>;

/** A zone's status in the wave's status document: its phase and what its call returned. */
function zoneStatusOf(result: StepResult): StatusDocument {
  return { phase: result.phase, ...result.status };
}

/**
 * Runs the action for the wave's zones, then sums the results: Failed if a zone failed, Running while a zone waits,
 * Successful when every zone is.
 *
 * Together (Run): first the zones that may write what the others write too take turns, one after another, with no
 * in-call wait: a drain checks the disruption budget for the whole wave against the routing the previous zone's
 * drain left (so a wave is admitted whole or not at all, as when the zones walked one after another), a restore
 * writes the balancer the previous one wrote, and no two zones' guarded writes meet on one balancer. Then every
 * zone that only waits (its turn wrote, or an earlier call's did) runs at once with the in-call wait: the wave's
 * evidence, grace periods and operator waits overlap. Each zone keeps its own lease, evidence, rollback record and
 * deadline (its own status, `zones.<zone>`); a zone failed in its turn stops the wave's call there (the zones
 * not run keep their previous status) and the wave fails naming it.
 */
export async function overWave(
  zones: readonly string[],
  action: ZoneAction,
  call: WaveCall,
  each: ZoneCall,
  previous?: unknown,
): Promise<StepResult> {
  const byZone = new Map<string, StepResult>();
  const turns = call.together;
  if (turns === undefined) {
    for (const zone of zones) {
      const result = await each(zone, false, zoneStatusIn(previous, zone));
      byZone.set(zone, result);
      if (call.stopAtFailure && result.phase === 'Failed') break;
    }
  } else {
    const waiting: string[] = [];
    for (const zone of zones) {
      if (!turns.needsTurn(zoneStatusIn(previous, zone))) {
        waiting.push(zone);
        continue;
      }
      const result = await each(zone, true, zoneStatusIn(previous, zone));
      byZone.set(zone, result);
      if (turns.waitsOnly(result)) waiting.push(zone);
      if (call.stopAtFailure && result.phase === 'Failed') break;
    }
    // A zone failed in its turn: the wave fails and the controller aborts it; the others' waits are not worth making.
    const stopped = call.stopAtFailure && [...byZone.values()].some((r) => r.phase === 'Failed');
    if (!stopped) {
      const waited = await Promise.all(
        waiting.map(async (zone) => {
          const turn = byZone.get(zone);
          const last = turn === undefined ? zoneStatusIn(previous, zone) : zoneStatusOf(turn);
          return { zone, result: await each(zone, false, last) };
        }),
      );
      for (const { zone, result } of waited) byZone.set(zone, result);
    }
  }
  const results = zones.flatMap((zone) => {
    const result = byZone.get(zone);
    return result === undefined ? [] : [{ zone, result }];
  });
  const notRun = zones.filter((zone) => !byZone.has(zone));
  const status: StatusDocument = {
    action,
    zones: Object.fromEntries([
      ...notRun.flatMap((zone) => {
        const kept = zoneStatusIn(previous, zone);
        return kept === undefined ? [] : [[zone, kept]];
      }),
      ...results.map(({ zone, result }) => [zone, zoneStatusOf(result)]),
    ]),
  };
  const say = (list: typeof results) => list.map(({ result }) => result.message ?? '').join('; ');
  const failures = results.filter(({ result }) => result.phase === 'Failed');
  const wave = `wave ${zones.join(', ')}`;
  if (failures.length > 0) {
    // The wave fails with its first failed zone's code: the one a user alerting on codes acts on first.
    const firstCode = failures[0]?.result.status?.code;
    const code: FailureCode = isFailureCode(firstCode) ? firstCode : 'Unexpected';
    return failed(
      `${wave}: ${failures.map(({ zone }) => zone).join(', ')} failed: ${say(failures)}${notRun.length === 0 ? '' : ` (not run: ${notRun.join(', ')})`}`,
      status,
      code,
    );
  }
  const waiting = results.filter(({ result }) => result.phase === 'Running');
  if (waiting.length > 0) {
    const requeue = Math.min(
      ...waiting.map(({ result }) => result.requeueAfterMs ?? Number.POSITIVE_INFINITY),
    );
    return running(
      `${wave}: waiting for ${waiting.map(({ zone }) => zone).join(', ')}: ${say(waiting)}`,
      status,
      ...(Number.isFinite(requeue) ? [requeue] : []),
    );
  }
  return successful(`${wave}: ${say(results)}`, status);
}

/** The states in which a zone's action has made its writes to the balancers and waits (or, for a restore waiting
 *  for its zone's object, writes next only its own zone's record, one balancer write at a time: vm/read-layer.ts
 *  restoreLayer): a replayed call of it writes nothing another zone's turn could meet. */
const waitsOnlyIn: Record<ZoneAction, readonly StepState[]> = {
  drainReads: ['waitingForVmauth', 'grace', 'queriesInFlight'],
  // apply writes the zone's own object alone: every zone's call runs beside the others from the start.
  apply: [],
  restoreReads: ['waitingForVmauth', 'waitingForVMCluster'],
};

function stateIn(status: unknown): unknown {
  return typeof status === 'object' && status !== null ? (status as { state?: unknown }).state : undefined;
}

/** How the zones of a wave step take turns for `action` (WaveCall.together). */
export function zoneTurnsOf(action: ZoneAction): ZoneTurns {
  const waits = (phase: unknown, state: unknown) =>
    phase === 'Running' && waitsOnlyIn[action].some((s) => s === state);
  return {
    needsTurn: (previous) =>
      action !== 'apply' &&
      !waits(
        typeof previous === 'object' && previous !== null
          ? (previous as { phase?: unknown }).phase
          : undefined,
        stateIn(previous),
      ),
    waitsOnly: (result) => action === 'apply' || waits(result.phase, stateIn(result.status)),
  };
}
