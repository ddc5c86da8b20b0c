// The Rollout as the API server returns it (JSON), reduced to what vmzones reads back: the one schema of it for
// the reconciler, /status and `vmzones status`. Parsed through a schema because it comes from outside this
// process; unknown fields are ignored. Steps stay unknown here (readers of the user's own steps, such as an
// analysis step, must see them whole); `canaryPluginStepSchema` reads a step plugin's name and config.

import { z } from 'zod';

/** A canary step as a step-plugin reader sees it: a step of another kind parses to {}. */
export const canaryPluginStepSchema = z.object({
  plugin: z.object({ name: z.string(), config: z.unknown().optional() }).optional(),
});

/** One entry of status.canary.stepPluginStatuses, as Argo Rollouts writes it. */
export const stepPluginStatusSchema = z.object({
  index: z.number().int().optional(),
  name: z.string().optional(),
  operation: z.string().optional(),
  phase: z.string().optional(),
  message: z.string().optional(),
  startedAt: z.string().optional(),
  updatedAt: z.string().optional(),
});
export type StepPluginStatus = z.infer<typeof stepPluginStatusSchema>;

const metadataSchema = z.object({
  name: z.string(),
  namespace: z.string(),
  uid: z.string().optional(),
  generation: z.number().optional(),
});

function rolloutSchemaWithSteps<Step extends z.ZodType>(step: Step) {
  return z.object({
    metadata: metadataSchema,
    spec: z
      .object({
        template: z
          .object({
            metadata: z.object({ annotations: z.record(z.string(), z.string()).optional() }).optional(),
          })
          .optional(),
        strategy: z.object({ canary: z.object({ steps: z.array(step).optional() }).optional() }).optional(),
      })
      .optional(),
    status: z
      .object({
        currentPodHash: z.string().optional(),
        stableRS: z.string().optional(),
        abort: z.boolean().optional(),
        currentStepIndex: z.number().int().optional(),
        phase: z.string().optional(),
        message: z.string().optional(),
        /** Argo Rollouts writes the generation it acted on as a string. */
        observedGeneration: z.union([z.string(), z.number()]).optional(),
        canary: z.object({ stepPluginStatuses: z.array(stepPluginStatusSchema).optional() }).optional(),
      })
      .optional(),
  });
}

export const rolloutObjectSchema = rolloutSchemaWithSteps(z.unknown());
export type RolloutObject = z.infer<typeof rolloutObjectSchema>;

/** What the reconciler needs: the uid (a Rollout deleted and recreated under its name is another one), plugin steps. */
const progressSchema = rolloutSchemaWithSteps(canaryPluginStepSchema).extend({
  metadata: metadataSchema.extend({ uid: z.string() }),
});

/** The message for a Rollout that does not parse, naming the first field that is off. */
export function rolloutShapeProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  return `the Rollout is not what Argo Rollouts writes (${issue?.path.join('.') ?? ''}: ${issue?.message ?? ''})`;
}

export interface RolloutProgress {
  uid: string;
  currentRevision: string;
  stableRevision: string;
  aborted: boolean;
  /** Index of the step being run; the number of steps once the walk is over. */
  currentStepIndex: number;
  steps: z.infer<typeof canaryPluginStepSchema>[];
  /** The pod template's annotations (where a step plugin's own configuration may live). */
  templateAnnotations: Record<string, string>;
}

/** The progress of a Rollout object, or a message saying why it cannot be read. */
export function rolloutProgress(value: unknown): RolloutProgress | string {
  const parsed = progressSchema.safeParse(value);
  if (!parsed.success) return rolloutShapeProblem(parsed.error);
  const rollout = parsed.data;
  const steps = rollout.spec?.strategy?.canary?.steps ?? [];
  return {
    uid: rollout.metadata.uid,
    currentRevision: rollout.status?.currentPodHash ?? '',
    stableRevision: rollout.status?.stableRS ?? '',
    aborted: rollout.status?.abort ?? false,
    currentStepIndex: rollout.status?.currentStepIndex ?? 0,
    steps,
    templateAnnotations: rollout.spec?.template?.metadata?.annotations ?? {},
  };
}
