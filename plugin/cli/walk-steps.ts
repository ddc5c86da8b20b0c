// How the CLI reads a Rollout's canary steps: which belong to the vmzones walk (vmzones/step actions, the gate
// analysis of a zone, pauses) and which are the user's own (anything else: setWeight, other plugins...).

import { stepPluginName } from '../rollouts/plugin-names.ts';
import { isJsonObject } from '../zones/state/merge-patch.ts';
import { type ZoneAction, zoneActions } from '../zones/step/actions.ts';

export type WalkStep =
  | { kind: 'action'; zone: string; action: ZoneAction }
  /** An analysis step with an arg `zone`: the gate `vmzones render` puts between apply and restoreReads. */
  | { kind: 'gate'; zone: string; templates: string[] }
  | { kind: 'pause' }
  /** A vmzones/step step whose config the plugin would refuse. */
  | { kind: 'invalid'; problem: string }
  | { kind: 'other' };

export function classifyStep(step: unknown): WalkStep {
  if (!isJsonObject(step)) return { kind: 'other' };
  if (isJsonObject(step.plugin) && step.plugin.name === stepPluginName) {
    const config = step.plugin.config;
    if (!isJsonObject(config)) return { kind: 'invalid', problem: 'a vmzones/step step without config' };
    const { zone, action } = config;
    if (typeof zone !== 'string' || zone === '')
      return { kind: 'invalid', problem: 'a vmzones/step step without config.zone' };
    if (typeof action !== 'string' || !(zoneActions as readonly string[]).includes(action))
      return {
        kind: 'invalid',
        problem: `config.action ${JSON.stringify(action)} is not one of ${zoneActions.join(', ')}`,
      };
    return { kind: 'action', zone, action: action as ZoneAction };
  }
  if (isJsonObject(step.analysis)) {
    const args = Array.isArray(step.analysis.args) ? step.analysis.args : [];
    const zoneArg = args.find((a) => isJsonObject(a) && a.name === 'zone');
    if (isJsonObject(zoneArg) && typeof zoneArg.value === 'string') {
      const templates = (Array.isArray(step.analysis.templates) ? step.analysis.templates : [])
        .map((t) => (isJsonObject(t) && typeof t.templateName === 'string' ? t.templateName : ''))
        .filter((t) => t !== '');
      return { kind: 'gate', zone: zoneArg.value, templates };
    }
  }
  if ('pause' in step) return { kind: 'pause' };
  return { kind: 'other' };
}

/** How problems point at a step of the Rollout. */
export function stepRef(index: number): string {
  return `spec.strategy.canary.steps[${index}]`;
}
