// net/rpc service "Plugin" of a dispensed RpcStepPlugin: decodes the controller's arguments into views,
// calls the StepPlugin, and encodes replies in the Go shapes the controller's client expects.

import { type FailureCode, failureCodeOf } from '../goplugin/failure-codes.ts';
import type { GobValue } from '../goplugin/gob/index.ts';
import type { RpcReply, RpcService } from '../goplugin/index.ts';
import { notify, observed, type RpcObserver } from './rpc-observer.ts';
import { rpcErrorSchema, stepResponseSchema, stringSchema } from './schemas.ts';
import { errorMessage, initFailureReply, rpcErrorOutcome, type ServiceHooks } from './service-replies.ts';
import type { RolloutView, StepContext, StepPlugin, StepResult } from './types.ts';
import { rolloutView } from './views.ts';
import { unwrapInterface } from './wire-read.ts';

export const stepDispenseName = 'RpcStepPlugin';

const validPhases = new Set(['Running', 'Successful', 'Failed']);

export function stepService(plugin: StepPlugin, hooks: ServiceHooks, observer?: RpcObserver): RpcService {
  const call =
    (method: 'Run' | 'Terminate' | 'Abort', argsName: string, op: (p: StepPlugin) => StepPlugin['run']) =>
    async (body: GobValue): Promise<RpcReply> => {
      const started = performance.now();
      let result: StepResult | undefined;
      let decoded: { rollout: RolloutView; context: StepContext } | undefined;
      let thrown: FailureCode | undefined;
      const report = () => {
        if (observer === undefined) return;
        const base = {
          service: 'step' as const,
          method,
          outcome: result?.phase ?? 'error',
          durationMs: performance.now() - started,
          endedAt: Date.now(),
        };
        notify(
          observer,
          decoded === undefined
            ? { ...base, kind: 'other' }
            : { ...base, kind: 'step', ...decoded, result, ...(thrown === undefined ? {} : { thrown }) },
        );
      };
      try {
        const args = unwrapInterface(body, argsName);
        const context = args.struct('Context');
        const stepContext: StepContext = {
          pluginName: context.string('PluginName') ?? '',
          config: context.json('Config'),
          status: context.json('Status'),
        };
        decoded = { rollout: rolloutView(args.struct('Rollout')), context: stepContext };
        const value = await op(plugin).call(plugin, decoded.rollout, stepContext);
        validateStepResult(value);
        result = value;
      } catch (err) {
        thrown = failureCodeOf(err);
        report();
        return {
          schema: stepResponseSchema,
          value: { Result: {}, Error: { ErrorString: errorMessage(err) } },
        };
      }
      report();
      return { schema: stepResponseSchema, value: { Result: encodeStepResult(result), Error: {} } };
    };

  return {
    InitPlugin: observed(
      observer,
      'step',
      'InitPlugin',
      async (): Promise<RpcReply> => {
        try {
          await plugin.init();
          return { schema: rpcErrorSchema, value: {} };
        } catch (err) {
          return initFailureReply(err, hooks);
        }
      },
      rpcErrorOutcome,
    ),
    Run: call('Run', 'step.RunArgs', (p) => p.run),
    Terminate: call('Terminate', 'step.TerminateArgs', (p) => p.terminate),
    Abort: call('Abort', 'step.AbortArgs', (p) => p.abort),
    Type: observed(observer, 'step', 'Type', async () => ({ schema: stringSchema, value: plugin.type() })),
  };
}

function validateStepResult(result: StepResult): void {
  if (!validPhases.has(result.phase)) {
    throw new Error(
      `plugin bug: step phase ${JSON.stringify(result.phase)} is not Running, Successful or Failed`,
    );
  }
  const s = result.status;
  if (s !== undefined && (typeof s !== 'object' || s === null || Array.isArray(s))) {
    throw new Error('plugin bug: step status must be a JSON object');
  }
}

function encodeStepResult(result: StepResult): Record<string, unknown> {
  const ms = result.requeueAfterMs ?? 0;
  return {
    Phase: result.phase,
    Message: result.message ?? '',
    RequeueAfter: BigInt(Math.round(ms)) * 1_000_000n,
    Status:
      result.status === undefined
        ? new Uint8Array()
        : new TextEncoder().encode(JSON.stringify(result.status)),
  };
}
