// The Rollout that holds a zone (its lease, handoff or rollback record) as it is now: whether that Rollout (that
// uid) still exists. A record names its holder; only the Rollout itself says whether the holder is live, which
// decides whether another walk waits for it or takes the zone over (zones/moves/take-out.ts) and whether its
// namespace hears of a transition (state/events.ts).

import { KubeError, type KubeObjects } from '../../kube/objects.ts';
import { type RolloutProgress, rolloutProgress } from '../../rollouts/rollout-object.ts';
import type { RolloutIdentity } from './zone-annotations.ts';

const rolloutApi = { apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout' } as const;

/** The holder's Rollout now: its progress, or `undefined` when it (that uid) no longer exists. */
export async function holderProgress(
  kube: KubeObjects,
  holder: RolloutIdentity,
): Promise<RolloutProgress | undefined> {
  const [namespace = '', name = ''] = holder.rollout.split('/');
  try {
    const progress = rolloutProgress(await kube.get({ ...rolloutApi, namespace, name }));
    if (typeof progress === 'string')
      throw new KubeError('invalid', `Rollout ${holder.rollout}: ${progress}`);
    return progress.uid === holder.uid ? progress : undefined;
  } catch (err) {
    if (err instanceof KubeError && err.kind === 'notFound') return undefined;
    throw err;
  }
}

/** Whether the Rollout that holds a lease still exists (same uid); a lease of a deleted Rollout is stale. */
export async function holderExists(kube: KubeObjects, holder: RolloutIdentity): Promise<boolean> {
  return (await holderProgress(kube, holder)) !== undefined;
}
