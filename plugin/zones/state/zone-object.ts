// Reading a zone's VMCluster with its vmzones state, and the guarded writes of that state.

import { KubeError, type KubeObject, type KubeObjects, type ObjectRef } from '../../kube/objects.ts';
import { type ZoneState, zoneState } from './zone-annotations.ts';

export interface LoadedCluster {
  object: KubeObject;
  state: ZoneState;
  resourceVersion: string;
  generation: number;
}

export function loadedCluster(object: KubeObject): LoadedCluster {
  return {
    object,
    state: zoneState(object),
    resourceVersion: object.metadata.resourceVersion ?? '',
    generation: object.metadata.generation ?? 0,
  };
}

export interface ClusterPatch {
  annotations?: Record<string, string | null>;
  labels?: Record<string, string | null>;
  spec?: Record<string, unknown>;
}

/** A guarded write that lost: someone wrote the object since it was read (HTTP 409). */
export function isConflict(err: unknown): boolean {
  return err instanceof KubeError && err.kind === 'conflict';
}

/** One merge patch of metadata (and spec), refused by the API server (409) if the VMCluster changed since read. */
export async function patchCluster(
  kube: KubeObjects,
  ref: ObjectRef,
  patch: ClusterPatch,
  resourceVersion: string | undefined,
  dryRun = false,
): Promise<KubeObject> {
  const metadata: Record<string, unknown> = {};
  if (patch.annotations) metadata.annotations = patch.annotations;
  if (patch.labels) metadata.labels = patch.labels;
  const body: Record<string, unknown> = { metadata };
  if (patch.spec) body.spec = patch.spec;
  return kube.mergePatch(ref, body, resourceVersion, { dryRun });
}
