// What one step acts on, resolved from the Rollout (its spec document) and the step config, before anything is
// touched: the zone, its VMCluster, its read balancer and the timings. Every problem here is a SpecError, which
// the actions answer with Failed and nothing changed.

import { type NamespaceAllowance, requireNamespaceAllowed } from '../../kube/allowed-namespaces.ts';
import { parseGoDurationMs } from '../../kube/go-duration.ts';
import { dns1123Label } from '../../kube/names.ts';
import type { ObjectRef } from '../../kube/objects.ts';
import type { RolloutView } from '../../rollouts/types.ts';
import type { ReadBalancerConfig, ReadBalancerRef } from '../../vm/read-backends.ts';
import { defaultVmselectHosts, type ZoneReadBackend } from '../../vm/read-backends.ts';
import type { DisruptionBudget } from '../../vm/read-safety.ts';
import { defaultZoneKind, zoneObjectRef } from '../../vm/zone-kinds.ts';
import {
  drainGracePeriodOf,
  drainQueryCheckOf,
  type ResolvedZone,
  resolveZone,
  SpecError,
  specDisruptionBudget,
  specFromAnnotations,
  type VmauthSource,
  vmauthSources,
  waveBudgetProblem,
  type ZoneSpecDocument,
  zoneWorkload,
  zoneWriters,
} from '../spec.ts';
import { type RolloutIdentity, rolloutIdentity } from '../state/zone-annotations.ts';
import { type ZoneAction, zoneActions } from './actions.ts';

export interface StepConfig {
  zone: string;
  action: ZoneAction;
}

/** The step's `plugin.config`: `{zone, action}`. */
export function parseStepConfig(config: unknown): StepConfig {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new SpecError([
      `step config: must be an object {zone, action} (got ${config === undefined ? 'none' : JSON.stringify(config)})`,
    ]);
  }
  const { zone, action, ...rest } = config as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof zone !== 'string' || !dns1123Label.test(zone) || zone.length > 63) {
    problems.push(
      `step config.zone: must be a zone name of the spec document (a DNS label: lowercase letters, digits, "-"; got ${JSON.stringify(zone)})`,
    );
  }
  if (typeof action !== 'string' || !(zoneActions as readonly string[]).includes(action)) {
    problems.push(
      `step config.action: must be one of ${zoneActions.join(', ')} (got ${JSON.stringify(action)})`,
    );
  }
  for (const key of Object.keys(rest)) problems.push(`step config.${key}: unknown field`);
  if (problems.length > 0) throw new SpecError(problems);
  return { zone: zone as string, action: action as ZoneAction };
}

/** The step's `plugin.config` for a wave: `{zones: [...], action}`; `{zone, action}` is a wave of one. */
export function parseWaveConfig(config: unknown): { zones: string[]; action: ZoneAction } {
  if (typeof config !== 'object' || config === null || !('zones' in config)) {
    const one = parseStepConfig(config);
    return { zones: [one.zone], action: one.action };
  }
  const { zones, ...rest } = config as Record<string, unknown>;
  const problems: string[] = [];
  if ('zone' in rest) problems.push('step config: give zone (one zone) or zones (a wave), not both');
  if (!Array.isArray(zones) || zones.length === 0) {
    problems.push(`step config.zones: must be a list of zone names (got ${JSON.stringify(zones)})`);
  } else {
    zones.forEach((zone, index) => {
      try {
        parseStepConfig({ zone, action: 'apply' });
      } catch (err) {
        if (!(err instanceof SpecError)) throw err;
        problems.push(...err.problems.map((p) => p.replace('config.zone:', `config.zones[${index}]:`)));
      }
    });
    const twice = zones.filter((z, i) => zones.indexOf(z) !== i);
    if (twice.length > 0) problems.push(`step config.zones: zone(s) listed twice: ${twice.join(', ')}`);
  }
  try {
    parseStepConfig({ zone: 'zone', ...rest });
  } catch (err) {
    if (!(err instanceof SpecError)) throw err;
    problems.push(...err.problems.filter((p) => !p.includes('config.zone:')));
  }
  if (problems.length > 0) throw new SpecError(problems);
  return { zones: zones as string[], action: (rest as { action: ZoneAction }).action };
}

export interface ZoneTarget {
  config: StepConfig;
  spec: ZoneSpecDocument;
  zone: ResolvedZone;
  cluster: ObjectRef;
  /** The balancers that serve the zones' reads (at least one); the zone is drained from each that routes to it. */
  reads: ReadBalancerConfig[];
  /** The longest of the balancers' drain grace periods. */
  drainGracePeriod: string;
  drainGraceMs: number;
  /** Whether the drain ends once the zone's query pods are idle (inFlight) or after the whole grace (grace). */
  drainQueryCheck: 'inFlight' | 'grace';
  readyTimeoutMs: number;
  /** The spec's zone disruption budget, checked before the zone is drained. */
  budget: DisruptionBudget;
  /** Every zone of the step's wave (`config.zones`; the zone alone for a step of one zone): the budget admits a
   *  wave whole, so each zone's drain is checked as if all of them left together. */
  wave: readonly string[];
  /** The agents that write to the zone (VMAgents, or VLAgents for a VLCluster zone: the zone kind says which), and
   *  the cluster they run in (undefined = the controller's own). Records keep the field name vmagents. */
  vmagents: string[];
  vmagentsCluster: string | undefined;
  /** The zone's vminsertHosts (docs/multicluster.md), carried in the records for the reconciler's queue check. */
  vminsertHosts: string[] | undefined;
  who: RolloutIdentity;
  /** The Rollout's `status.stableRS`: the revision a rollback goes back to. */
  stableRevision: string | undefined;
}

function balancerRef(vmauth: VmauthSource, namespace: string): ReadBalancerRef {
  if (vmauth.vmuser !== undefined) {
    return {
      kind: 'VMUser',
      namespace,
      name: vmauth.vmuser,
      ...(vmauth.vmauths === undefined ? {} : { vmauths: vmauth.vmauths }),
    };
  }
  const source = vmauth.secret ?? vmauth.configMap;
  if (source === undefined)
    throw new SpecError(['vmauth: exactly one of vmuser, secret, configMap must be set']);
  return { kind: vmauth.secret ? 'Secret' : 'ConfigMap', namespace, name: source.name, key: source.key };
}

export function readBackends(spec: ZoneSpecDocument, namespace: string): ZoneReadBackend[] {
  return Object.entries(spec.zones).map(([name, zone]) => {
    const { kind, name: object } = zoneWorkload(zone);
    return {
      zone: name,
      ...(zone.cluster === undefined ? {} : { cluster: zone.cluster }),
      namespace,
      vmcluster: object,
      ...(kind === defaultZoneKind ? {} : { kind: kind.kind }),
      hosts: (zone.vmselectHosts ?? defaultVmselectHosts(object, namespace, kind)).map((h) =>
        h.toLowerCase(),
      ),
    };
  });
}

/** Every read balancer of the document (one, or e.g. a vmauth in each cluster), each with the zones' backends. */
export function readBalancerConfigs(spec: ZoneSpecDocument, namespace: string): ReadBalancerConfig[] {
  const zones = readBackends(spec, namespace);
  return vmauthSources(spec).map((vmauth) => ({
    ref: balancerRef(vmauth, namespace),
    ...(vmauth.pods === undefined
      ? {}
      : {
          pods: vmauth.pods.map((p) => ({
            namespace,
            labelSelector: p.labelSelector,
            port: p.port,
            ...(p.scheme === undefined ? {} : { scheme: p.scheme }),
          })),
        }),
    zones,
    reloadEvidence: vmauth.reloadEvidence,
    ...(vmauth.cluster === undefined ? {} : { cluster: vmauth.cluster }),
  }));
}

/** Resolves the step against the Rollout's spec document; throws SpecError naming every problem. */
export function resolveTarget(
  rollout: RolloutView,
  rawConfig: unknown,
  namespaces: NamespaceAllowance = { all: false, extra: [] },
): ZoneTarget {
  const config = parseStepConfig(rawConfig);
  const spec = specFromAnnotations(rollout.spec.template.metadata.annotations);
  const rolloutNamespace = rollout.metadata.namespace ?? '';
  const zone = resolveZone(spec, config.zone, rolloutNamespace);
  const writers = zoneWriters(spec, zone.kind);
  // The plugin acts with the controller's rights: a Rollout author may not reach another namespace's zones.
  requireNamespaceAllowed(
    namespaces,
    { describe: `Rollout ${rolloutNamespace}/${rollout.metadata.name ?? ''}`, namespace: rolloutNamespace },
    zone.namespace,
    `the spec document's namespace (${zone.kind.kind} ${zone.vmcluster} of zone ${config.zone})`,
  );
  return {
    config,
    spec,
    zone,
    cluster: zoneObjectRef(zone.kind, zone.namespace, zone.vmcluster),
    reads: readBalancerConfigs(spec, zone.namespace),
    drainGracePeriod: drainGracePeriodOf(spec),
    drainGraceMs: parseGoDurationMs(drainGracePeriodOf(spec)),
    drainQueryCheck: drainQueryCheckOf(spec),
    readyTimeoutMs: parseGoDurationMs(spec.readyTimeout),
    budget: specDisruptionBudget(spec),
    wave: [config.zone],
    vmagents: writers.names,
    vmagentsCluster: writers.cluster,
    vminsertHosts: spec.zones[config.zone]?.vminsertHosts,
    who: rolloutIdentity(rollout),
    stableRevision: rollout.status.stableRS,
  };
}

/**
 * The targets of a step over a wave, one per zone, each with its own lease, evidence and rollback record. A wave
 * wider than the spec's disruption budget could never drain whole: refused before anything is touched.
 */
export function resolveWave(
  rollout: RolloutView,
  rawConfig: unknown,
  namespaces: NamespaceAllowance = { all: false, extra: [] },
): ZoneTarget[] {
  const { zones, action } = parseWaveConfig(rawConfig);
  const targets = zones.map((zone) => ({
    ...resolveTarget(rollout, { zone, action }, namespaces),
    wave: zones,
  }));
  const first = targets[0];
  const problem =
    first === undefined
      ? undefined
      : waveBudgetProblem(
          // The budget's maxZonesOut as resolved (default: the widest wave); minZonesServing only as written.
          {
            maxZonesOut: first.budget.maxZonesOut,
            minZonesServing: first.spec.disruptionBudget.minZonesServing,
          },
          Object.keys(first.spec.zones).length,
          zones.length,
        );
  if (problem !== undefined) {
    throw new SpecError([
      `step config.zones: a wave of ${zones.length} zones (${zones.join(', ')}) ${problem.field === 'maxZonesOut' ? `exceeds the spec's disruptionBudget.maxZonesOut ${first?.budget.maxZonesOut}` : `can never drain: the spec's disruptionBudget.minZonesServing ${problem.message}`}`,
    ]);
  }
  return targets;
}
