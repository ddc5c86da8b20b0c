// Turns the RPC services' call events (rollouts/rpc-observer.ts) into metrics: every call's latency and outcome;
// a step's whole duration when it ends (from the start the Rollout records for it); a measurement's duration
// when it ends (from the start the gate keeps in its metadata); the drain gate's queue figures on every reading;
// how long vmauth took to serve a changed routing, as the drain/restore steps and the reload gate report it; and what
// ended each drain (the zone's reading of queries in flight, or the grace period).

import { gateNames } from '../gates/config.ts';
import { metadataKeys } from '../gates/provider.ts';
import { isFailureCode } from '../goplugin/failure-codes.ts';
import type {
  MeasurementCallEvent,
  RpcCallEvent,
  RpcObserver,
  StepCallEvent,
} from '../rollouts/rpc-observer.ts';
import type { ObserveMetrics } from './metrics.ts';

const stepActions = new Set(['drainReads', 'apply', 'restoreReads']);
const completedPhases = new Set(['Successful', 'Failed', 'Error', 'Inconclusive']);

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function seconds(from: unknown, to: unknown): number | undefined {
  if (typeof from !== 'string' || typeof to !== 'string') return undefined;
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isNaN(ms) || ms < 0 ? undefined : ms / 1000;
}

/** A label from a bounded set: anything else becomes "other". */
function bounded(value: unknown, known: ReadonlySet<string>): string {
  return typeof value === 'string' && known.has(value) ? value : 'other';
}

const knownGates = new Set<string>(gateNames);

/** A failure code from a status or metadata field; anything that is not a declared code (a bounded label) is
 *  `Unexpected`. */
function failureCode(value: unknown): string {
  return isFailureCode(value) ? value : 'Unexpected';
}

function onStepFailure(metrics: ObserveMetrics, event: StepCallEvent): void {
  const { result } = event;
  if (result !== undefined && result.phase !== 'Failed') return;
  const action = bounded(record(event.context.config)?.action, stepActions);
  metrics.stepFailures.inc({
    action,
    method: event.method,
    phase: result === undefined ? 'Error' : 'Failed',
    code: failureCode(result === undefined ? event.thrown : result.status?.code),
  });
}

function onStep(metrics: ObserveMetrics, event: StepCallEvent): void {
  onStepFailure(metrics, event);
  const result = event.result;
  if (event.method !== 'Run' || result === undefined || result.phase === 'Running') return;
  const action = bounded(record(event.context.config)?.action, stepActions);
  const { rollout } = event;
  const index = rollout.status.currentStepIndex ?? 0;
  const started = rollout.status.canary?.stepPluginStatuses?.find(
    (s) => (s.index ?? 0) === index && s.operation === 'Run',
  )?.startedAt;
  const whole = started === undefined ? undefined : (event.endedAt - Date.parse(started)) / 1000;
  const duration = whole !== undefined && whole >= 0 ? whole : event.durationMs / 1000;
  metrics.stepDuration.observe({ action, phase: result.phase }, duration);

  if (result.phase !== 'Successful') return;
  // drainReads: from taking the zone out to vmauth serving that; restoreReads: from putting it back to release.
  // A step over a wave keeps each zone's status under `zones.<zone>` (zones/step/wave.ts): one wait per zone.
  const status = result.status ?? {};
  const waveZones = record(status.zones);
  const statuses: Record<string, unknown>[] = Array.isArray(record(event.context.config)?.zones)
    ? Object.values(waveZones ?? {}).flatMap((zone): Record<string, unknown>[] => {
        const found = record(zone);
        return found === undefined ? [] : [found];
      })
    : [status];
  for (const zone of statuses) {
    const wait =
      action === 'drainReads' && zone.state === 'drained'
        ? seconds(zone.drainedAt, zone.reloadedAt)
        : action === 'restoreReads' && zone.state === 'restored'
          ? seconds(zone.restoredAt, zone.releasedAt)
          : undefined;
    if (wait !== undefined) metrics.vmauthReloadWait.observe({ source: action }, wait);
    if (action === 'drainReads' && zone.state === 'drained')
      metrics.drainEndings.inc({ ended: drainEnding(zone) });
  }
}

/** What ended a zone's drain, from its drainReads status: `queriesDoneAt` is set when the zone's own reading of
 *  queries in flight ended it; `queries` alone says the reading was made and the grace period ended it anyway. */
function drainEnding(zone: Record<string, unknown>): 'queries' | 'graceFallback' | 'grace' {
  if (typeof zone.queriesDoneAt === 'string') return 'queries';
  return typeof zone.queries === 'string' ? 'graceFallback' : 'grace';
}

/** Each zone's figures of a gate reading: a gate over a wave keeps them under `zones.<zone>`
 *  (gates/wave-reading.ts), each named by its zone; a one-zone reading is its own. */
function zoneFigures(
  figures: Record<string, unknown>,
): { zone: string | undefined; figures: Record<string, unknown> }[] {
  const zones = record(figures.zones);
  if (zones === undefined || figures.agents !== undefined) return [{ zone: undefined, figures }];
  return Object.entries(zones).flatMap(([zone, value]) => {
    const found = record(value);
    return found === undefined ? [] : [{ zone, figures: found }];
  });
}

function onMeasurement(metrics: ObserveMetrics, event: MeasurementCallEvent): void {
  const { result } = event;
  const metadata = result.metadata ?? event.previous?.metadata ?? {};
  const gate = bounded(metadata[metadataKeys.gate], knownGates);
  let figures: Record<string, unknown> | undefined;
  try {
    figures = record(JSON.parse(result.value ?? ''));
  } catch {
    figures = undefined;
  }

  const readings = figures === undefined ? [] : zoneFigures(figures);
  if (gate === 'vmagentQueueDrained' && event.method !== 'Terminate') {
    for (const { zone: waveZone, figures: zoneReading } of readings) {
      const namespace = typeof zoneReading.namespace === 'string' ? zoneReading.namespace : '';
      const zone =
        typeof zoneReading.zone === 'string'
          ? zoneReading.zone
          : typeof zoneReading.vmcluster === 'string'
            ? zoneReading.vmcluster
            : (waveZone ?? '');
      for (const [vmagent, value] of Object.entries(record(zoneReading.agents) ?? {})) {
        const agent = record(value);
        const labels = { namespace, zone, vmagent };
        if (typeof agent?.pendingDataBytes === 'number')
          metrics.queuePendingBytes.set(labels, agent.pendingDataBytes);
        if (typeof agent?.onDiskPendingBytes === 'number')
          metrics.queueOnDiskPendingBytes.set(labels, agent.onDiskPendingBytes);
      }
    }
  }

  if (!completedPhases.has(result.phase)) return;
  if (result.phase === 'Failed' || result.phase === 'Error') {
    metrics.gateFailures.inc({
      gate,
      phase: result.phase,
      code: failureCode(result.metadata?.[metadataKeys.failureCode]),
    });
  }
  const started = metadata[metadataKeys.startedAt] ?? event.previous?.startedAt ?? result.startedAt;
  const whole = started === undefined ? Number.NaN : (event.endedAt - Date.parse(started)) / 1000;
  metrics.gateDuration.observe(
    { gate, phase: result.phase },
    Number.isNaN(whole) || whole < 0 ? event.durationMs / 1000 : whole,
  );
  if (gate === 'vmauthReloaded' && result.phase === 'Successful') {
    for (const { figures: zoneReading } of readings) {
      if (typeof zoneReading.since !== 'string') continue;
      const wait = (event.endedAt - Date.parse(zoneReading.since)) / 1000;
      if (!Number.isNaN(wait) && wait >= 0)
        metrics.vmauthReloadWait.observe({ source: 'vmauthReloaded' }, wait);
    }
  }
}

export function rpcMetrics(metrics: ObserveMetrics): RpcObserver {
  return {
    call(event: RpcCallEvent) {
      metrics.rpcDuration.observe(
        { service: event.service, method: event.method, outcome: event.outcome },
        event.durationMs / 1000,
      );
      if (event.kind === 'step') onStep(metrics, event);
      else if (event.kind === 'measurement') onMeasurement(metrics, event);
    },
  };
}
