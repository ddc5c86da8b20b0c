// The Rollout as the API server returns it (JSON), reduced to what vmzones reads back in the background: which
// revision is current and which is stable, whether it is aborted, and where its steps stand. Parsed through a
// schema because it comes from outside this process; unknown fields are ignored.

import { z } from 'zod';

const pluginStep = z.object({
  plugin: z.object({ name: z.string(), config: z.unknown().optional() }).optional(),
});

export const rolloutObjectSchema = z.object({
  metadata: z.object({ name: z.string(), namespace: z.string(), uid: z.string() }),
  spec: z
    .object({
      template: z
        .object({
          metadata: z.object({ annotations: z.record(z.string(), z.string()).optional() }).optional(),
        })
        .optional(),
      strategy: z
        .object({ canary: z.object({ steps: z.array(pluginStep).optional() }).optional() })
        .optional(),
    })
    .optional(),
  status: z
    .object({
      currentPodHash: z.string().optional(),
      stableRS: z.string().optional(),
      abort: z.boolean().optional(),
      currentStepIndex: z.number().int().optional(),
      phase: z.string().optional(),
    })
    .optional(),
});

export type RolloutObject = z.infer<typeof rolloutObjectSchema>;

export interface RolloutProgress {
  uid: string;
  currentRevision: string;
  stableRevision: string;
  aborted: boolean;
  /** Index of the step being run; the number of steps once the walk is over. */
  currentStepIndex: number;
  steps: { plugin?: { name: string; config?: unknown } }[];
  /** The pod template's annotations (where a step plugin's own configuration may live). */
  templateAnnotations: Record<string, string>;
}

/** The progress of a Rollout object, or a message saying why it cannot be read. */
export function rolloutProgress(value: unknown): RolloutProgress | string {
  const parsed = rolloutObjectSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `the Rollout is not what Argo Rollouts writes (${issue?.path.join('.') ?? ''}: ${issue?.message ?? ''})`;
  }
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
