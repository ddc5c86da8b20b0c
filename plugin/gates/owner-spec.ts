// Zone settings by default come from the Rollout that owns the AnalysisRun: its pod template's
// `vmzones.io/spec` document. The run the controller hands over carries no owner references, so the
// AnalysisRun is read from the API server (the controller's service account may read it).

import { CodedError } from '../goplugin/failure-codes.ts';
import { KubeError, type KubeObject, type KubeObjects, namespacedName } from '../kube/objects.ts';
import type { AnalysisRunView } from '../rollouts/types.ts';
import { specFromAnnotations, type ZoneSpecDocument } from '../zones/spec.ts';

export class GateSetupError extends CodedError {
  constructor(problem: string) {
    super('GateSetupInvalid', problem);
    this.name = 'GateSetupError';
  }
}

export interface OwnerSpec {
  readonly rollout: string;
  readonly namespace: string;
  readonly spec: ZoneSpecDocument;
}

const rolloutApiVersion = 'argoproj.io/v1alpha1';

/**
 * The Rollout that owns each AnalysisRun, by the run's uid. The controller sets an AnalysisRun's owner when it
 * creates the run, so the run is read once for it, not on every gate call (with 50 AnalysisRuns in flight that read
 * was a third of the gates' API requests, docs/scale.md); the Rollout, whose spec document can change, is read on
 * every call. Bounded: cleared when full, which costs one read per run again.
 */
export class RunOwners {
  readonly #byRun = new Map<string, string>();
  readonly #max: number;

  constructor(max = 1000) {
    this.#max = max;
  }

  get(key: string): string | undefined {
    return this.#byRun.get(key);
  }

  set(key: string, owner: string): void {
    if (this.#byRun.size >= this.#max) this.#byRun.clear();
    this.#byRun.set(key, owner);
  }
}

/** The spec document of the Rollout owning `run`; GateSetupError when there is none or it is invalid. */
export async function ownerSpec(
  kube: KubeObjects,
  run: AnalysisRunView,
  owners?: RunOwners,
): Promise<OwnerSpec> {
  const namespace = run.metadata.namespace ?? '';
  const name = run.metadata.name ?? '';
  // Keyed by the uid too: a run deleted and created again under the same name is another run.
  const key = run.metadata.uid ? `${namespace}/${name}/${run.metadata.uid}` : undefined;
  const known = key === undefined ? undefined : owners?.get(key);
  const ownerName = known ?? (await readOwner(kube, namespace, name));
  if (key !== undefined && known === undefined) owners?.set(key, ownerName);
  return ownerRolloutSpec(kube, namespace, name, ownerName);
}

/** The name of the Rollout that owns the AnalysisRun, read from the API server. */
async function readOwner(kube: KubeObjects, namespace: string, name: string): Promise<string> {
  let analysisRun: KubeObject;
  try {
    analysisRun = await kube.get({ apiVersion: rolloutApiVersion, kind: 'AnalysisRun', namespace, name });
  } catch (error) {
    if (error instanceof KubeError && error.kind === 'notFound') {
      throw new GateSetupError(`AnalysisRun ${namespacedName({ namespace, name })} is not in the API server`);
    }
    throw error;
  }
  const owner =
    analysisRun.metadata.ownerReferences?.find((ref) => ref.kind === 'Rollout' && ref.controller === true) ??
    analysisRun.metadata.ownerReferences?.find((ref) => ref.kind === 'Rollout');
  if (owner === undefined) {
    throw new GateSetupError(
      `AnalysisRun ${namespacedName({ namespace, name })} is not owned by a Rollout, so there is no vmzones.io/spec to take zone ` +
        'settings from; name them in the metric config instead (vmcluster, vmagent, vmauth, namespace)',
    );
  }
  return owner.name;
}

async function ownerRolloutSpec(
  kube: KubeObjects,
  namespace: string,
  name: string,
  ownerName: string,
): Promise<OwnerSpec> {
  const owner = { name: ownerName };
  let rollout: KubeObject;
  try {
    rollout = await kube.get({ apiVersion: rolloutApiVersion, kind: 'Rollout', namespace, name: owner.name });
  } catch (error) {
    if (error instanceof KubeError && error.kind === 'notFound') {
      throw new GateSetupError(
        `Rollout ${namespacedName({ namespace, name: owner.name })}, owner of AnalysisRun ${name}, does not exist`,
      );
    }
    throw error;
  }
  const template = (rollout.spec?.template ?? {}) as { metadata?: { annotations?: Record<string, string> } };
  try {
    return {
      rollout: owner.name,
      namespace,
      spec: specFromAnnotations(template.metadata?.annotations),
    };
  } catch (error) {
    throw new GateSetupError(
      `Rollout ${namespacedName({ namespace, name: owner.name })}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** Reads the owner spec once, on first use; later calls get the same promise. */
export function lazyOwnerSpec(
  kube: KubeObjects,
  run: AnalysisRunView,
  owners?: RunOwners,
): () => Promise<OwnerSpec> {
  let loaded: Promise<OwnerSpec> | undefined;
  return () => {
    loaded ??= ownerSpec(kube, run, owners);
    return loaded;
  };
}
