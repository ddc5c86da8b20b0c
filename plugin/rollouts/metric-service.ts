// net/rpc service "Plugin" of a dispensed RpcMetricProviderPlugin.

import { GobOpaque, type GobValue } from '../goplugin/gob/index.ts';
import type { RpcReply, RpcService } from '../goplugin/index.ts';
import { notify, observed, type RpcObserver } from './rpc-observer.ts';
import { measurementSchema, rpcErrorSchema, stringMapSchema, stringSchema } from './schemas.ts';
import { errorMessage, initFailureReply, rpcErrorOutcome, type ServiceHooks } from './service-replies.ts';
import { nowRfc3339, rfc3339ToGoTimeBytes } from './time.ts';
import type {
  AnalysisRunView,
  MeasurementResult,
  MeasurementView,
  MetricProvider,
  MetricView,
} from './types.ts';
import { analysisRunView, measurementView, metricView } from './views.ts';
import { unwrapInterface } from './wire-read.ts';

export const metricDispenseName = 'RpcMetricProviderPlugin';

const completedPhases = new Set(['Successful', 'Failed', 'Error', 'Inconclusive']);
const validPhases = new Set([...completedPhases, 'Pending', 'Running']);
/** Used only when a provider forgets ResumeAt on Running: without it nothing would ever resume the measurement. */
const fallbackResumeMs = 10_000;

export function metricService(
  provider: MetricProvider,
  hooks: ServiceHooks,
  observer?: RpcObserver,
): RpcService {
  const measure =
    (method: 'Run' | 'Resume' | 'Terminate', argsName: string, op: 'run' | 'resume' | 'terminate') =>
    async (body: GobValue): Promise<RpcReply> => {
      const started = performance.now();
      let previous: MeasurementView | undefined;
      let previousStartedAt: Uint8Array | undefined;
      let result: MeasurementResult;
      let decoded: { run: AnalysisRunView; metric: MetricView } | undefined;
      try {
        const args = unwrapInterface(body, argsName);
        const run = analysisRunView(args.struct('AnalysisRun'));
        const metric = metricView(args.struct('Metric'));
        decoded = { run, metric };
        if (op === 'run') {
          result = await provider.run(run, metric);
        } else {
          const measurement = args.struct('Measurement');
          previous = measurementView(measurement);
          // Echo the start time exactly (nanoseconds and zone), not the view's whole seconds.
          const started = measurement.raw('StartedAt');
          if (started instanceof GobOpaque) previousStartedAt = started.bytes;
          result = await provider[op](run, metric, previous);
        }
        if (!validPhases.has(result.phase))
          throw new Error(`plugin bug: measurement phase ${JSON.stringify(result.phase)}`);
      } catch (err) {
        result = { phase: 'Error', message: errorMessage(err) };
      }
      if (observer !== undefined) {
        const base = {
          service: 'metricprovider' as const,
          method,
          outcome: result.phase,
          durationMs: performance.now() - started,
          endedAt: Date.now(),
        };
        notify(
          observer,
          decoded === undefined
            ? { ...base, kind: 'other' }
            : { ...base, kind: 'measurement', ...decoded, previous, result },
        );
      }
      return { schema: measurementSchema, value: encodeMeasurement(result, previousStartedAt) };
    };

  return {
    InitPlugin: observed(
      observer,
      'metricprovider',
      'InitPlugin',
      async (): Promise<RpcReply> => {
        try {
          await provider.init();
          return { schema: rpcErrorSchema, value: {} };
        } catch (err) {
          return initFailureReply(err, hooks);
        }
      },
      rpcErrorOutcome,
    ),
    Run: measure('Run', 'RunArgs', 'run'),
    Resume: measure('Resume', 'TerminateAndResumeArgs', 'resume'),
    Terminate: measure('Terminate', 'TerminateAndResumeArgs', 'terminate'),
    GarbageCollect: observed(
      observer,
      'metricprovider',
      'GarbageCollect',
      async (body: GobValue): Promise<RpcReply> => {
        try {
          const args = unwrapInterface(body, 'GarbageCollectArgs');
          await provider.garbageCollect(
            analysisRunView(args.struct('AnalysisRun')),
            metricView(args.struct('Metric')),
            args.int('Limit') ?? 0,
          );
          return { schema: rpcErrorSchema, value: {} };
        } catch (err) {
          return { schema: rpcErrorSchema, value: { ErrorString: errorMessage(err) } };
        }
      },
      rpcErrorOutcome,
    ),
    GetMetadata: observed(
      observer,
      'metricprovider',
      'GetMetadata',
      async (body: GobValue): Promise<RpcReply> => {
        let metadata: Record<string, string>;
        try {
          const args = unwrapInterface(body, 'GetMetadataArgs');
          metadata = await provider.getMetadata(metricView(args.struct('Metric')));
        } catch (err) {
          // The controller reports a metadata map with key "error" as a failure.
          metadata = { error: errorMessage(err) };
        }
        return { schema: stringMapSchema, value: new Map(Object.entries(metadata)) };
      },
      (reply) => ((reply.value as Map<string, string>).has('error') ? 'error' : 'ok'),
    ),
    Type: observed(observer, 'metricprovider', 'Type', async () => ({
      schema: stringSchema,
      value: provider.type(),
    })),
  };
}

function encodeMeasurement(
  m: MeasurementResult,
  previousStartedAt: Uint8Array | undefined,
): Record<string, unknown> {
  const completed = completedPhases.has(m.phase);
  const finishedAt = m.finishedAt ?? (completed ? nowRfc3339() : undefined);
  const resumeAt =
    m.resumeAt ?? (completed ? undefined : new Date(Date.now() + fallbackResumeMs).toISOString());
  return {
    Phase: m.phase,
    Message: m.message ?? '',
    StartedAt:
      m.startedAt !== undefined
        ? rfc3339ToGoTimeBytes(m.startedAt)
        : (previousStartedAt ?? rfc3339ToGoTimeBytes(nowRfc3339())),
    FinishedAt: finishedAt === undefined ? undefined : rfc3339ToGoTimeBytes(finishedAt),
    Value: m.value ?? '',
    Metadata: m.metadata === undefined ? undefined : new Map(Object.entries(m.metadata)),
    ResumeAt: resumeAt === undefined ? undefined : rfc3339ToGoTimeBytes(resumeAt),
  };
}
