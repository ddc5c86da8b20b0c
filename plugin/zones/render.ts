// `vmzones render`: the Rollout canary steps that walk the zones of a spec document, one zone at a time, so
// that nobody writes (or mistypes) the per-zone step list by hand.

import { parseGoDurationMs } from '../goplugin/go-duration.ts';
import { stepPluginName, type ZoneAction } from './actions.ts';
import type { ZoneSpecDocument } from './spec.ts';

export const defaultHealthTemplate = 'vmzones-zone-healthy';

export interface RenderOptions {
  /** Zones in rollout order; defaults to the order of the spec document. */
  order?: readonly string[];
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

export function renderSteps(spec: ZoneSpecDocument, options: RenderOptions = {}): CanaryStep[] {
  const known = Object.keys(spec.zones);
  const order = options.order ?? known;
  const unknown = order.filter((z) => !known.includes(z));
  if (unknown.length > 0)
    throw new Error(`unknown zone(s) ${unknown.join(', ')} (known: ${known.join(', ')})`);
  const duplicates = order.filter((z, i) => order.indexOf(z) !== i);
  if (duplicates.length > 0) throw new Error(`zone(s) listed twice: ${duplicates.join(', ')}`);

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
