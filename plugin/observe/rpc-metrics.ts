// Turns the RPC services' call events (rollouts/rpc-observer.ts) into metrics: every call's latency and outcome;
// a step's whole duration when it ends (from the start the Rollout records for it); a measurement's duration
// when it ends (from the start the gate keeps in its metadata); the drain gate's queue figures on every reading;
// and how long vmauth took to serve a changed routing, as the drain/restore steps and the reload gate report it.

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
  const status = result.status ?? {};
  // drainReads: from taking the zone out to vmauth serving that; restoreReads: from putting it back to release.
  const wait =
    action === 'drainReads' && status.state === 'drained'
      ? seconds(status.drainedAt, status.reloadedAt)
      : action === 'restoreReads' && status.state === 'restored'
        ? seconds(status.restoredAt, status.releasedAt)
        : undefined;
  if (wait !== undefined) metrics.vmauthReloadWait.observe({ source: action }, wait);
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

  if (gate === 'vmagentQueueDrained' && figures !== undefined && event.method !== 'Terminate') {
    const namespace = typeof figures.namespace === 'string' ? figures.namespace : '';
    const zone =
      typeof figures.zone === 'string'
        ? figures.zone
        : typeof figures.vmcluster === 'string'
          ? figures.vmcluster
          : '';
    for (const [vmagent, value] of Object.entries(record(figures.agents) ?? {})) {
      const agent = record(value);
      const labels = { namespace, zone, vmagent };
      if (typeof agent?.pendingDataBytes === 'number')
        metrics.queuePendingBytes.set(labels, agent.pendingDataBytes);
      if (typeof agent?.onDiskPendingBytes === 'number')
        metrics.queueOnDiskPendingBytes.set(labels, agent.onDiskPendingBytes);
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
  if (gate === 'vmauthReloaded' && result.phase === 'Successful' && typeof figures?.since === 'string') {
    const wait = (event.endedAt - Date.parse(figures.since)) / 1000;
    if (!Number.isNaN(wait) && wait >= 0)
      metrics.vmauthReloadWait.observe({ source: 'vmauthReloaded' }, wait);
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
