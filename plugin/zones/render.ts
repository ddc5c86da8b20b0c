// `vmzones render`: the Rollout canary steps that walk the zones of a spec document, one wave at a time (one zone
// per wave unless the spec says otherwise), so that nobody writes (or mistypes) the per-zone step list by hand.

import { CodedError } from '../goplugin/failure-codes.ts';
import { parseGoDurationMs } from '../kube/go-duration.ts';
import { stepPluginName } from '../rollouts/plugin-names.ts';
import { chunkWaves, specWaves, type ZoneSpecDocument, zoneListProblem } from './spec.ts';
import type { ZoneAction } from './step/actions.ts';

/** The gates between apply and restoreReads: ready, queues drained, and the zone answering queries as a serving zone
 *  does (analysis-templates/vmzones-zone-healthy.yaml; docs/gates.md). */
export const defaultHealthTemplate = 'vmzones-zone-healthy';

/**
 * No pause between zones unless asked for: each zone's gate already waits for the evidence (operational, queue
 * delivered, reads back), and a fixed pause observes nothing. A soak (`--pause 10m`) or an approval
 * (`--pause manual`) is the user's choice (docs/step-plugin.md, "Between zones").
 */
export const defaultPauseBetweenZones = 'none';

export interface RenderOptions {
  /** Every zone of the spec, in rollout order; defaults to the order of the spec document. */
  order?: readonly string[];
  /** A subset of the zones, in rollout order, for a walk that deliberately leaves the others out. */
  only?: readonly string[];
  /** Between waves (zones, without waves): a Go duration to wait, 'manual' for an approval (`pause: {}`), or 'none' (the default). */
  pauseBetweenZones?: string;
  /** ClusterAnalysisTemplate run after apply, with the arg `zone`; '' leaves the gate out. */
  healthTemplate?: string;
}

/** A step's config: one zone, or the zones of a wave. */
export type WaveStepConfig =
  | { zone: string; zones?: never; action: ZoneAction }
  | { zone?: never; zones: string[]; action: ZoneAction };

export type CanaryStep =
  | { plugin: { name: string; config: WaveStepConfig } }
  | {
      analysis: {
        templates: { templateName: string; clusterScope: true }[];
        args: { name: string; value: string }[];
      };
    }
  | { pause: { duration?: string } };

/** A zone list that would walk a zone twice, an unknown zone, or (without `only`) not every zone. */
export class ZoneOrderError extends CodedError {
  constructor(message: string) {
    super('SpecInvalid', message);
  }
  override readonly name = 'ZoneOrderError';
}

export interface ZoneWalk {
  /** The zones walked, in order. */
  zones: string[];
  /** The spec's zones the walk leaves out (only with `only`). */
  leftOut: string[];
}

/**
 * Which zones a walk visits, in which waves. A walk that skips a zone must say so with `only` (each wave keeps the
 * zones `only` names); `order` lists every zone, and sets the order the spec's maxParallelZones cuts into waves.
 */
export function zoneWalk(
  spec: ZoneSpecDocument,
  options: Pick<RenderOptions, 'order' | 'only'> = {},
): ZoneWalk {
  const { zones, leftOut } = walkInWaves(spec, options);
  return { zones, leftOut };
}

/** zoneWalk, with the zones walked wave by wave (one zone per wave for a spec without waves). */
export function walkInWaves(
  spec: ZoneSpecDocument,
  options: Pick<RenderOptions, 'order' | 'only'> = {},
): ZoneWalk & { waves: string[][] } {
  const known = Object.keys(spec.zones);
  if (options.order !== undefined && options.only !== undefined)
    throw new ZoneOrderError('give either order (every zone) or only (a subset), not both');
  if (options.order !== undefined && spec.waves !== undefined)
    throw new ZoneOrderError(
      'the spec document lists its waves, which give the order: change the waves rather than the order',
    );
  const order = options.only ?? options.order ?? specWaves(spec).flat();
  const problem = zoneListProblem(known, order, {
    what: 'the order',
    subset: options.only !== undefined,
  });
  if (problem !== undefined) throw new ZoneOrderError(problem);
  const leftOut = known.filter((z) => !order.includes(z));
  const waves =
    options.order !== undefined
      ? chunkWaves(options.order, spec.maxParallelZones ?? 1)
      : options.only !== undefined && spec.waves === undefined && spec.maxParallelZones === undefined
        ? chunkWaves(options.only, 1)
        : specWaves(spec)
            .map((wave) => wave.filter((z) => order.includes(z)))
            .filter((wave) => wave.length > 0);
  return { zones: waves.flat(), waves, leftOut };
}

/** The step config of an action over a wave: `zone` for a wave of one (the walk without waves), else `zones`. */
export function waveStepConfig(wave: readonly string[], action: ZoneAction): WaveStepConfig {
  return wave.length === 1 ? { zone: wave[0] as string, action } : { zones: [...wave], action };
}

/** The gate's arg `zone`: the wave's zones, comma-separated (plugin/gates read each). */
export function waveZoneArg(wave: readonly string[]): string {
  return wave.join(',');
}

export function renderSteps(spec: ZoneSpecDocument, options: RenderOptions = {}): CanaryStep[] {
  const { waves } = walkInWaves(spec, options);

  const pause = options.pauseBetweenZones ?? defaultPauseBetweenZones;
  if (pause !== 'manual' && pause !== 'none') parseGoDurationMs(pause); // throws with the offending text
  const template = options.healthTemplate ?? defaultHealthTemplate;

  const steps: CanaryStep[] = [];
  waves.forEach((wave, i) => {
    const step = (action: ZoneAction): CanaryStep => ({
      plugin: { name: stepPluginName, config: waveStepConfig(wave, action) },
    });
    steps.push(step('drainReads'), step('apply'));
    if (template !== '') {
      steps.push({
        analysis: {
          templates: [{ templateName: template, clusterScope: true }],
          args: [{ name: 'zone', value: waveZoneArg(wave) }],
        },
      });
    }
    steps.push(step('restoreReads'));
    const last = i === waves.length - 1;
    if (!last && pause === 'manual') steps.push({ pause: {} });
    else if (!last && pause !== 'none') steps.push({ pause: { duration: pause } });
  });
  return steps;
}
