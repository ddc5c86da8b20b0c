// `vmzones render`: the Rollout canary steps that walk the zones of a spec document, one zone at a time, so
// that nobody writes (or mistypes) the per-zone step list by hand.

import { parseGoDurationMs } from '../kube/go-duration.ts';
import { stepPluginName } from '../rollouts/plugin-names.ts';
import type { ZoneSpecDocument } from './spec.ts';
import type { ZoneAction } from './step/actions.ts';

export const defaultHealthTemplate = 'vmzones-zone-healthy';

export interface RenderOptions {
  /** Every zone of the spec, in rollout order; defaults to the order of the spec document. */
  order?: readonly string[];
  /** A subset of the zones, in rollout order, for a walk that deliberately leaves the others out. */
  only?: readonly string[];
  /** Between zones: a Go duration to wait, 'manual' for an approval (`pause: {}`), or 'none'. */
  pauseBetweenZones?: string;
  /** ClusterAnalysisTemplate run after apply, with the arg `zone`; '' leaves the gate out. */
  healthTemplate?: string;
}

export type CanaryStep =
  | { plugin: { name: string; config: { zone: string; action: ZoneAction } } }
  | {
      analysis: {
        templates: { templateName: string; clusterScope: true }[];
        args: { name: string; value: string }[];
      };
    }
  | { pause: { duration?: string } };

/** A zone list that would walk a zone twice, an unknown zone, or (without `only`) not every zone. */
export class ZoneOrderError extends Error {
  override readonly name = 'ZoneOrderError';
}

export interface ZoneWalk {
  /** The zones walked, in order. */
  zones: string[];
  /** The spec's zones the walk leaves out (only with `only`). */
  leftOut: string[];
}

/** Which zones a walk visits. A walk that skips a zone must say so with `only`: `order` lists every zone. */
export function zoneWalk(
  spec: ZoneSpecDocument,
  options: Pick<RenderOptions, 'order' | 'only'> = {},
): ZoneWalk {
  const known = Object.keys(spec.zones);
  if (options.order !== undefined && options.only !== undefined)
    throw new ZoneOrderError('give either order (every zone) or only (a subset), not both');
  const order = options.only ?? options.order ?? known;
  const unknown = order.filter((z) => !known.includes(z));
  if (unknown.length > 0)
    throw new ZoneOrderError(`unknown zone(s) ${unknown.join(', ')} (known: ${known.join(', ')})`);
  const duplicates = order.filter((z, i) => order.indexOf(z) !== i);
  if (duplicates.length > 0) throw new ZoneOrderError(`zone(s) listed twice: ${duplicates.join(', ')}`);
  if (order.length === 0) throw new ZoneOrderError('no zone to walk');
  const leftOut = known.filter((z) => !order.includes(z));
  if (options.only === undefined && leftOut.length > 0)
    throw new ZoneOrderError(
      `the order leaves out ${leftOut.join(', ')}: list every zone, or walk a subset explicitly`,
    );
  return { zones: [...order], leftOut };
}

export function renderSteps(spec: ZoneSpecDocument, options: RenderOptions = {}): CanaryStep[] {
  const order = zoneWalk(spec, options).zones;

  const pause = options.pauseBetweenZones ?? '1m';
  if (pause !== 'manual' && pause !== 'none') parseGoDurationMs(pause); // throws with the offending text
  const template = options.healthTemplate ?? defaultHealthTemplate;

  const step = (zone: string, action: ZoneAction): CanaryStep => ({
    plugin: { name: stepPluginName, config: { zone, action } },
  });
  const steps: CanaryStep[] = [];
  order.forEach((zone, i) => {
    steps.push(step(zone, 'drainReads'), step(zone, 'apply'));
    if (template !== '') {
      steps.push({
        analysis: {
          templates: [{ templateName: template, clusterScope: true }],
          args: [{ name: 'zone', value: zone }],
        },
      });
    }
    steps.push(step(zone, 'restoreReads'));
    const last = i === order.length - 1;
    if (!last && pause === 'manual') steps.push({ pause: {} });
    else if (!last && pause !== 'none') steps.push({ pause: { duration: pause } });
  });
  return steps;
}
