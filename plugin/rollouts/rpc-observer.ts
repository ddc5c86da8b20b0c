// An optional listener for the step and metric RPC services: one event per call, after the reply is built, with
// what the call decoded and returned. The observe layer turns these into RPC, step and gate metrics; the services
// stay unaware of metrics. A listener that throws is ignored (an observer never changes a reply).

import type { FailureCode } from '../goplugin/failure-codes.ts';
import type {
  AnalysisRunView,
  MeasurementResult,
  MeasurementView,
  MetricView,
  RolloutView,
  StepContext,
  StepResult,
} from './types.ts';

export type RpcServiceName = 'step' | 'metricprovider';

interface CallBase {
  service: RpcServiceName;
  /** The net/rpc method without the service prefix: Run, Resume, Abort, InitPlugin, ... */
  method: string;
  /** Step calls: Running | Successful | Failed | error; measurements: the phase; other calls: ok | error. */
  outcome: string;
  durationMs: number;
  /** When the call ended (ms since the epoch). */
  endedAt: number;
}

/** A step Run/Terminate/Abort whose arguments decoded; `result` is absent when the plugin threw. */
export interface StepCallEvent extends CallBase {
  kind: 'step';
  rollout: RolloutView;
  context: StepContext;
  result: StepResult | undefined;
  /** When the plugin threw (the controller records Error and retries): the error's failure code. */
  thrown?: FailureCode;
}

/** A measurement Run/Resume/Terminate whose arguments decoded. */
export interface MeasurementCallEvent extends CallBase {
  kind: 'measurement';
  run: AnalysisRunView;
  metric: MetricView;
  previous: MeasurementView | undefined;
  result: MeasurementResult;
}

/** Any other call, or one whose arguments did not decode. */
export interface OtherCallEvent extends CallBase {
  kind: 'other';
}

export type RpcCallEvent = StepCallEvent | MeasurementCallEvent | OtherCallEvent;

export interface RpcObserver {
  call(event: RpcCallEvent): void;
}

/** Calls the observer, never letting it fail the RPC. */
export function notify(observer: RpcObserver | undefined, event: RpcCallEvent): void {
  if (observer === undefined) return;
  try {
    observer.call(event);
  } catch {
    // An observer's bug must not turn into a failed step or measurement.
  }
}

/** Times `work` and reports it as an `other` call (InitPlugin, GarbageCollect, GetMetadata, Type). */
export function observed<A extends unknown[], T>(
  observer: RpcObserver | undefined,
  service: RpcServiceName,
  method: string,
  work: (...args: A) => Promise<T>,
  outcomeOf: (value: T) => string = () => 'ok',
): (...args: A) => Promise<T> {
  if (observer === undefined) return work;
  return async (...args: A) => {
    const started = performance.now();
    let outcome = 'error';
    try {
      const value = await work(...args);
      outcome = outcomeOf(value);
      return value;
    } finally {
      notify(observer, {
        kind: 'other',
        service,
        method,
        outcome,
        durationMs: performance.now() - started,
        endedAt: Date.now(),
      });
    }
  };
}
