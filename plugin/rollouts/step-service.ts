// net/rpc service "Plugin" of a dispensed RpcStepPlugin: decodes the controller's arguments into views,
// calls the StepPlugin, and encodes replies in the Go shapes the controller's client expects.

import type { GobValue } from '../goplugin/gob/index.ts';
import type { RpcReply, RpcService } from './rpc-types.ts';
import { rpcErrorSchema, stepResponseSchema, stringSchema } from './schemas.ts';
import type { StepContext, StepPlugin, StepResult } from './types.ts';
import { rolloutView } from './views.ts';
import { unwrapInterface } from './wire-read.ts';

export const stepDispenseName = 'RpcStepPlugin';

const validPhases = new Set(['Running', 'Successful', 'Failed']);

export interface ServiceHooks {
  /** Called after InitPlugin failed and its error was sent: the controller never retries InitPlugin on the same process. */
  onInitFailure(error: Error): void;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function stepService(plugin: StepPlugin, hooks: ServiceHooks): RpcService {
  const call =
    (argsName: string, op: (p: StepPlugin) => StepPlugin['run']) =>
    async (body: GobValue): Promise<RpcReply> => {
      let result: StepResult;
      try {
        const args = unwrapInterface(body, argsName);
        const context = args.struct('Context');
        const stepContext: StepContext = {
          pluginName: context.string('PluginName') ?? '',
          config: context.json('Config'),
          status: context.json('Status'),
        };
        result = await op(plugin).call(plugin, rolloutView(args.struct('Rollout')), stepContext);
        validateStepResult(result);
      } catch (err) {
        return {
          schema: stepResponseSchema,
          value: { Result: {}, Error: { ErrorString: errorMessage(err) } },
        };
      }
      return { schema: stepResponseSchema, value: { Result: encodeStepResult(result), Error: {} } };
    };

  return {
    InitPlugin: async () => {
      try {
        await plugin.init();
        return { schema: rpcErrorSchema, value: {} };
      } catch (err) {
        queueMicrotask(() => hooks.onInitFailure(err instanceof Error ? err : new Error(String(err))));
        return { schema: rpcErrorSchema, value: { ErrorString: errorMessage(err) } };
      }
    },
    Run: call('step.RunArgs', (p) => p.run),
    Terminate: call('step.TerminateArgs', (p) => p.terminate),
    Abort: call('step.AbortArgs', (p) => p.abort),
    Type: async () => ({ schema: stringSchema, value: plugin.type() }),
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
