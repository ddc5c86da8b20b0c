// `vmzones lint --cluster`: for each Rollout of the linted files, its copy in the cluster and its zones' objects, and
// the zones drifted from the stable spec, said as `vmzones status` says them. Nothing is decided here: the zones are
// read by status's reader (plugin/cli/status.ts, readZoneObjects) and judged by the one decision
// (plugin/observe/zone-states.ts over plugin/zones/spec-drift.ts, through status-model.ts rolloutZoneStates).
// Loaded only with --cluster (plugin/cli/lint-command.ts), so that lint without it never evaluates the Kubernetes
// client and still runs offline on Node 20.

import { clusterClients } from '../kube/cluster-registry.ts';
import { KubeError, type KubeObject, type KubeObjects, kubeObjects } from '../kube/objects.ts';
import { driftMessage, type ZoneDrift } from '../observe/zone-states.ts';
import type { ZoneKindName } from '../vm/zone-kinds.ts';
import type { Flags } from './args.ts';
import { kubeConfigFor } from './diff.ts';
import { readZoneObjects, type ZoneClusterClients } from './status.ts';
import { parseStatusRollout, rolloutSpec, rolloutZoneStates, StatusError } from './status-model.ts';

/** Where the live check reads: the user's cluster, the zones' registered clusters, and the namespace of a Rollout
 *  whose manifest sets none. */
export interface LiveTarget {
  kube: KubeObjects;
  clusters: ZoneClusterClients;
  namespace: string;
}

/** A zone of a linted Rollout that serves reads without the spec of the Rollout's stable revision. */
export interface LintDrift {
  zone: string;
  /** The registered cluster of the zone's object; absent = the one lint talks to. */
  cluster?: string;
  kind: ZoneKindName;
  namespace: string;
  name: string;
  drift: ZoneDrift;
  /** The wording of `vmzones status` (driftMessage), with how to walk the zone. */
  message: string;
}

export interface LiveFindings {
  drifted: LintDrift[];
  /** The check could not run (the Rollout or a zone cannot be read): lint fails, as a check not made is no pass. */
  problems: string[];
  /** Said, not failing: a Rollout not in the cluster yet, a registered cluster without TLS verification. */
  warnings: string[];
}

/** The user's kubeconfig and context, as `vmzones status` connects (plugin/cli/status.ts, run). */
export function connect(flags: Flags): LiveTarget {
  const target = flags.kubeTarget();
  const kc = kubeConfigFor(target);
  const kube = kubeObjects(kc);
  return {
    kube,
    clusters: clusterClients({ hub: kube, namespace: flags.string('clusters-namespace') ?? 'argo-rollouts' }),
    namespace: target.namespace ?? (kc.namespace || 'default'),
  };
}

const notInCluster = (id: string) =>
  `Rollout ${id} is not in the cluster: no zone to judge yet; created over running zones, its first revision runs ` +
  'no steps, and zones that do not carry its spec document stay so (docs/step-plugin.md, "Drifted from the stable ' +
  'spec"): run lint --cluster again once it is Healthy';

/** The drifted zones of the Rollout `name` (of the manifest's namespace, else the target's) as it runs now. */
export async function liveDrift(
  target: LiveTarget,
  rollout: { name: string; namespace: string | undefined },
): Promise<LiveFindings> {
  const namespace = rollout.namespace ?? target.namespace;
  const id = `${namespace}/${rollout.name}`;
  const findings: LiveFindings = { drifted: [], problems: [], warnings: [] };
  try {
    let object: KubeObject;
    try {
      object = await target.kube.get({
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Rollout',
        namespace,
        name: rollout.name,
      });
    } catch (err) {
      if (err instanceof KubeError && err.kind === 'notFound') {
        findings.warnings.push(notInCluster(id));
        return findings;
      }
      throw err;
    }
    const spec = rolloutSpec(parseStatusRollout(object));
    const zones = await readZoneObjects(spec, spec.namespace ?? namespace, target.clusters);
    findings.warnings.push(...zones.warnings);
    for (const [zone, message] of Object.entries(zones.zoneErrors))
      findings.problems.push(`in the cluster: zone ${zone} cannot be read: ${message}`);
    const order = Object.keys(spec.zones);
    findings.drifted = rolloutZoneStates(object, spec, zones.byZone)
      .zones.flatMap((row): LintDrift[] =>
        row.drift === undefined
          ? []
          : [
              {
                zone: row.zone,
                ...(row.cluster === undefined ? {} : { cluster: row.cluster }),
                kind: row.kind,
                namespace: row.namespace,
                name: row.vmcluster,
                drift: row.drift,
                message: driftMessage(row.drift),
              },
            ],
      )
      .sort((a, b) => order.indexOf(a.zone) - order.indexOf(b.zone));
  } catch (err) {
    if (!(err instanceof KubeError || err instanceof StatusError)) throw err;
    findings.problems.push(
      `in the cluster: ${err instanceof KubeError ? `Rollout ${id}: ` : ''}${err.message}`,
    );
  }
  return findings;
}
