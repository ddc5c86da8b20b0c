// A step over a wave (`config: {zones: [...], action}`, docs/step-plugin.md "Waves"): the action runs for each zone
// of the wave, each zone with its own lease, evidence and rollback record, and one result says how the wave stands.
// Each zone's status is kept under `zones.<zone>` and handed back to that zone's next call, as the controller hands
// a one-zone step its own.

import { type FailureCode, isFailureCode } from '../../goplugin/failure-codes.ts';
import type { StepResult } from '../../rollouts/types.ts';
import type { ZoneAction } from './actions.ts';
import { failed, running, type StatusDocument, successful } from './outcome.ts';

/** The status a zone's previous call returned, from the wave's status; undefined on its first call. */
export function zoneStatusIn(previous: unknown, zone: string): unknown {
  if (typeof previous !== 'object' || previous === null) return undefined;
  const zones = (previous as { zones?: unknown }).zones;
  if (typeof zones !== 'object' || zones === null) return undefined;
  return (zones as Record<string, unknown>)[zone];
}

export interface WaveCall {
  /** Run stops at the first zone that failed: a wave that fails aborts, and Abort undoes what was done. Abort and
   *  Terminate go through every zone: the controller calls them once. */
  stopAtFailure: boolean;
}

/**
 * Calls `each` for the zones one after another (a drain checks the disruption budget for the whole wave against
 * the routing the previous zone's drain left, so a wave is admitted whole or not at all; a restore writes the
 * balancer the previous one wrote), then sums the results:
 * Failed if a zone failed, Running while a zone waits, Successful when every zone is.
 */
export async function overWave(
  zones: readonly string[],
  action: ZoneAction,
  call: WaveCall,
  each: (zone: string) => Promise<StepResult>,
): Promise<StepResult> {
  const results: { zone: string; result: StepResult }[] = [];
  for (const zone of zones) {
    const result = await each(zone);
    results.push({ zone, result });
    if (call.stopAtFailure && result.phase === 'Failed') break;
  }
  const status: StatusDocument = {
    action,
    zones: Object.fromEntries(
      results.map(({ zone, result }) => [zone, { phase: result.phase, ...result.status }]),
    ),
  };
  const say = (list: typeof results) => list.map(({ result }) => result.message ?? '').join('; ');
  const failures = results.filter(({ result }) => result.phase === 'Failed');
  const wave = `wave ${zones.join(', ')}`;
  if (failures.length > 0) {
    const notStarted = zones.slice(results.length);
    // The wave fails with its first failed zone's code: the one a user alerting on codes acts on first.
    const firstCode = failures[0]?.result.status?.code;
    const code: FailureCode = isFailureCode(firstCode) ? firstCode : 'Unexpected';
    return failed(
      `${wave}: ${failures.map(({ zone }) => zone).join(', ')} failed: ${say(failures)}${notStarted.length === 0 ? '' : ` (not started: ${notStarted.join(', ')})`}`,
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
