// Whether a zone's object carries a spec document: applying the zone's patch (the global overrideSpec, then the
// zone's) to the object's spec as it is now would change nothing. A zone can be left without the spec of its
// Rollout's stable revision by walks that never ran its steps: a Rollout created over running zones (its first
// revision runs no steps), `promote --full` past the zone, a Rollout deleted and created again
// (docs/step-plugin.md, "Drifted from the stable spec"). Which document is the stable one, and when to ask, is the
// caller's (plugin/observe/zone-states.ts); this only compares.

import type { KubeObject } from '../kube/objects.ts';
import { resolveZone, type ZoneSpecDocument } from './spec.ts';
import { diffMergePatch, isJsonObject, type JsonObject } from './state/merge-patch.ts';

/** The fields (`spec.a.b`) of the zone's patch that its object does not hold as the document says; [] = carried.
 *  Names only: a value of the spec may be a secret's place, and the field names say enough to act. */
export function fieldsNotCarried(
  spec: ZoneSpecDocument,
  zone: string,
  defaultNamespace: string,
  object: KubeObject,
): string[] {
  const { patch } = resolveZone(spec, zone, defaultNamespace);
  const live = (object.spec ?? {}) as JsonObject;
  return (
    diffMergePatch(live, patch)
      // A patch that only deletes keys under an absent object (`extraArgs: {x: null}`) would create it empty:
      // the zone already runs without those keys, so that is no difference.
      .filter(
        (change) =>
          !(
            change.before === undefined &&
            isJsonObject(change.after) &&
            Object.keys(change.after).length === 0
          ),
      )
      .map((change) => ['spec', ...change.path].join('.'))
  );
}
