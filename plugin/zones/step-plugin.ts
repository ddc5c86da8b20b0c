// The vmzones/step plugin. The zone actions (drainReads, apply, restoreReads) arrive with the step-plugin
// issue; until then every action is refused with a clear, retryable error so that nothing is changed.

import type { RolloutView, StepContext, StepPlugin, StepResult } from '../rollouts/types.ts';

export const stepPluginType = 'vmzones/step';

function notImplemented(operation: string, context: StepContext): never {
  throw new Error(
    `vmzones/step ${operation} is not implemented yet (step config ${JSON.stringify(context.config ?? null)}); nothing was changed`,
  );
}

export function createZoneStepPlugin(): StepPlugin {
  return {
    async init() {},
    async run(_rollout: RolloutView, context: StepContext): Promise<StepResult> {
      return notImplemented('Run', context);
    },
    async terminate(_rollout, context) {
      return notImplemented('Terminate', context);
    },
    async abort(_rollout, context) {
      return notImplemented('Abort', context);
    },
    type: () => stepPluginType,
  };
}
