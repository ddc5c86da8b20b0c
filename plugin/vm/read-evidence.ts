// Whether every vmauth replica serves a read balancer's routing as it is now: the operator took up the VMUser
// (its status is operational at its current generation), then each vmauth pod proves a load of the config
// written at `since` (vmauth-reload.ts says what counts as proof).

import type { KubeObject, KubeObjects, ObjectChange } from '../kube/objects.ts';
import { readsSharedAfter } from '../kube/shared-reads.ts';
import { balancerObjectRef, describeBalancer, type ReadBalancerConfig } from './read-backends.ts';
import { readRouting, routingOfObject } from './read-routing.ts';
import { vmauthPodsOfBalancer } from './vmauth-pods.ts';
import { vmauthReloadEvidence } from './vmauth-reload.ts';
import { vmuserTakenUp } from './vmuser.ts';

export interface ReadEvidence {
  /** `ready`: every replica serves it; `unproven`: no evidence exists for this vmauth and `bestEffort` accepted that. */
  state: 'ready' | 'waiting' | 'unproven';
  message: string;
  /** The latest reload among the pods (by vmauth's clock), when known. */
  reloadedAt?: Date;
  /** While waiting on an object (the VMUser the operator has not taken up): a wait for it to change, from the
   *  client's watch (KubeObjects.changeOf); absent when the answer rests on something no watch sees (vmauth pods). */
  nextChange?: () => ObjectChange | undefined;
}

/** `since`: the time of the routing change to prove (ReadRouting.changedAt). */
export async function readEvidence(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  since: Date,
  /** The balancer's object as just read by the caller (in the same call, after its last write): the answer rests
   *  on that read instead of another. */
  read?: KubeObject,
  /** The caller's mark (kube/shared-reads.ts): reads begun after it, by any waiter, may answer this check, as
   *  for the zones of a wave waiting on one balancer. Absent: reads of its own. */
  sharedAfterMark?: number,
): Promise<ReadEvidence> {
  const reads = sharedAfterMark === undefined ? kube : readsSharedAfter(kube, sharedAfterMark);
  const ref = config.ref;
  let object = read;
  if (ref.kind === 'VMUser') {
    const objectRef = balancerObjectRef(ref);
    const vmuser = object ?? (await reads.get(objectRef));
    object = vmuser;
    const taken = vmuserTakenUp(vmuser);
    if (!taken.ready) {
      return {
        state: 'waiting',
        message: `the operator has not rendered ${describeBalancer(ref)} yet: ${taken.message}`,
        nextChange: () => kube.changeOf?.(objectRef, vmuser.metadata.resourceVersion),
      };
    }
  }
  // The baseline from the same read of the VMUser that showed it taken up; another kind is read here.
  const { baseline } =
    object === undefined ? await readRouting(reads, config) : routingOfObject(object, config);
  const evidence = await vmauthReloadEvidence(
    reads,
    await vmauthPodsOfBalancer(reads, config),
    since,
    baseline,
    // vmauth reads a Secret or ConfigMap balancer itself; a VMUser only through the operator's rendering.
    { startupLoadProves: ref.kind !== 'VMUser' },
  );
  if (evidence.state === 'unreachable' || evidence.state === 'waiting') {
    return { state: 'waiting', message: evidence.message };
  }
  if (evidence.state === 'unsupported') {
    if (config.reloadEvidence === 'bestEffort') {
      return {
        state: 'unproven',
        message: `${evidence.message}; relying on the grace period (vmauth.reloadEvidence: bestEffort)`,
      };
    }
    return {
      state: 'waiting',
      message: `${evidence.message}; upgrade vmauth, or set vmauth.reloadEvidence: bestEffort to rely on the grace period alone`,
    };
  }
  const stamps = evidence.pods.flatMap((pod) =>
    pod.reloadedAt === undefined ? [] : [Date.parse(pod.reloadedAt)],
  );
  return {
    state: 'ready',
    message: `every vmauth pod serves the config written at ${since.toISOString()}`,
    ...(stamps.length === 0 ? {} : { reloadedAt: new Date(Math.max(...stamps)) }),
  };
}
