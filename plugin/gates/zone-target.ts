// Which objects a gate looks at: named in the metric config, or taken from the zone in the owning Rollout's
// spec document. The spec is read only when the config leaves something out.

import { NamespaceAllowanceError, requireNamespaceAllowed } from '../kube/allowed-namespaces.ts';
import { ClusterRegistryError, requireClusterNamespace } from '../kube/cluster-registry.ts';
import { parseGoDurationMs } from '../kube/go-duration.ts';
import { type KubeObjects, namespacedName } from '../kube/objects.ts';
import type { ZoneKind } from '../vm/zone-kinds.ts';
import { resolveZone, SpecError, type ZoneSpecDocument } from '../zones/spec.ts';
import { GateConfigError } from './config.ts';
import type { GateContext } from './gate-reading.ts';
import { GateSetupError } from './owner-spec.ts';

export interface SpecZone {
  readonly zone: string;
  /** The registered cluster of the zone's object; undefined = the controller's own. */
  readonly cluster: string | undefined;
  readonly namespace: string;
  /** The zone's object, of `kind`. */
  readonly vmcluster: string;
  readonly kind: ZoneKind;
  /** The zone's `vminsertHosts`: how the vmagents' remote-write URLs name it, when not by its write Service. */
  readonly vminsertHosts: readonly string[] | undefined;
  readonly spec: ZoneSpecDocument;
  readonly rollout: string;
  readonly readyTimeoutMs: number;
}

/** The zone as the owner's spec document describes it; `zone` must be set in the config. */
export async function zoneFromSpec(
  context: GateContext,
  zone: string | undefined,
  needed: string,
): Promise<SpecZone> {
  if (zone === undefined) {
    throw new GateConfigError([
      `zone: required to find ${needed} in the Rollout's vmzones.io/spec (or name ${needed} in the config)`,
    ]);
  }
  const owner = await context.ownerSpec();
  try {
    const resolved = resolveZone(owner.spec, zone, owner.namespace);
    return {
      zone,
      cluster: resolved.cluster,
      namespace: resolved.namespace,
      vmcluster: resolved.vmcluster,
      kind: resolved.kind,
      vminsertHosts: owner.spec.zones[zone]?.vminsertHosts,
      spec: owner.spec,
      rollout: owner.rollout,
      readyTimeoutMs: parseGoDurationMs(owner.spec.readyTimeout),
    };
  } catch (error) {
    if (error instanceof SpecError)
      throw new GateSetupError(
        `Rollout ${namespacedName({ namespace: owner.namespace, name: owner.rollout })}: ${error.message}`,
      );
    throw error;
  }
}

/** The AnalysisRun's namespace: the default, and the only one allowed unless the plugin's registration says more. */
function runNamespace(context: GateContext): string {
  return context.run.metadata.namespace ?? 'default';
}

/** The namespace of explicitly named objects: the config's, else the AnalysisRun's. */
export function explicitNamespace(context: GateContext, namespace: string | undefined): string {
  return namespace ?? runNamespace(context);
}

/**
 * Every object a gate reads (the VMCluster, VMAgents, pods to scrape, Secrets with their credentials) is in
 * `namespace`; refuses one outside the AnalysisRun's namespace unless the plugin's registration allows it. The
 * namespace may come from the gate config or the Rollout's spec document: both are written by the Rollout author.
 */
export function allowedGateNamespace(context: GateContext, namespace: string): string {
  try {
    requireNamespaceAllowed(
      context.allowance,
      { describe: `AnalysisRun ${namespacedName(context.run.metadata)}`, namespace: runNamespace(context) },
      namespace,
      "the gate's target",
    );
  } catch (error) {
    if (error instanceof NamespaceAllowanceError) throw new GateSetupError(error.message);
    throw error;
  }
  return namespace;
}

/** The client of a registered cluster (undefined = the controller's own), after checking that its registration
 *  lets vmzones act in `namespace` there; an unknown cluster is a setup error naming it. */
export async function clusterKube(
  context: GateContext,
  cluster: string | undefined,
  namespace: string,
  what: string,
): Promise<KubeObjects> {
  if (cluster === undefined) return context.kube;
  try {
    requireClusterNamespace(await context.clusters.registration(cluster), namespace, what);
    return await context.clusters.client(cluster);
  } catch (error) {
    if (error instanceof ClusterRegistryError) throw new GateSetupError(error.message);
    throw error;
  }
}
