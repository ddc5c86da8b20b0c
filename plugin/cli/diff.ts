// `vmzones diff --spec FILE`: before a commit is merged, what each zone's VMCluster spec would become. For every
// zone the merged overrides (global overrideSpec, then the zone's) go to the API server as a server-side dry run
// against the live VMCluster: admission, schema validation and pruning run, nothing is stored. Printed per zone:
// the fields that change (what apply would record for rollback), the fields the API server would drop (pruned:
// unknown to the CRD schema) or store differently, and a refusal with the server's message.
// Exit status (diffExitCode): 0 when every zone would take its change as written, 1 when a zone would be
// refused, is missing, or would lose fields to pruning (a change that silently does not happen).
//
// Zones in registered clusters are diffed in their clusters (docs/multicluster.md); one that cannot be reached is
// said for that zone (exit 1), the others are still diffed.
// `run` is a CommandModule (plugin/cli/commands.ts), loaded on demand: it evaluates the Kubernetes client, which
// the offline commands must not.

import {
  type ClusterClients,
  ClusterRegistryError,
  clusterClients,
  hubOnly,
} from '../kube/cluster-registry.ts';
import {
  defaultKubeconfigPaths,
  type KubeConnection,
  kubeconfigConnection,
  loadKubeConnection,
} from '../kube/kube-config.ts';
import { KubeError, type KubeObjects, kubeObjects } from '../kube/objects.ts';
import { showFieldValue } from '../kube/redact.ts';
import { zoneObjectRef } from '../vm/zone-kinds.ts';
import { resolveZone, type ZoneSpecDocument } from '../zones/spec.ts';
import {
  deepEqual,
  diffMergePatch,
  type FieldChange,
  isJsonObject,
  type JsonObject,
  type JsonValue,
} from '../zones/state/merge-patch.ts';
import { type Flags, type KubeTarget, UsageError } from './args.ts';
import type { CommandContext } from './command-context.ts';
import { readInput } from './io.ts';
import { fileLabel, oneSpec, readManifests } from './manifests.ts';

export interface StoredDifference {
  path: string[];
  /** What the patch asks for. */
  wanted: JsonValue;
  /** What the API server would store; undefined = pruned. */
  stored: JsonValue | undefined;
}

interface ZoneObject {
  zone: string;
  /** The zone object's kind (VMCluster, VMSingle, VLCluster). */
  kind: string;
  vmcluster: string;
  namespace: string;
  /** The registered cluster it lives in; absent = the kubeconfig's. */
  cluster?: string;
}

export type ZoneDiff =
  | (ZoneObject & {
      outcome: 'ok';
      generation: number | undefined;
      changes: FieldChange[];
      /** Fields of the patch that the API server would drop or store otherwise. */
      differences: StoredDifference[];
    })
  | (ZoneObject & { outcome: 'refused' | 'missing' | 'unreachable'; message: string });

export interface DiffOptions {
  spec: ZoneSpecDocument;
  /** Namespace of the objects when the spec document names none (the Rollout's). */
  namespace: string;
  kube: KubeObjects;
  /** The zones' registered clusters (docs/multicluster.md); default: every zone in `kube`'s cluster. */
  clusters?: Pick<ClusterClients, 'client'>;
}

function valueAt(root: JsonValue | undefined, path: readonly string[]): JsonValue | undefined {
  let node = root;
  for (const key of path) {
    if (!isJsonObject(node ?? null)) return undefined;
    node = (node as JsonObject)[key];
  }
  return node;
}

/** Leaves of `wanted` (at `path`) that `stored` lacks or holds differently. */
function storedDifferences(
  wanted: JsonValue,
  stored: JsonValue | undefined,
  path: string[],
): StoredDifference[] {
  if (isJsonObject(wanted) && isJsonObject(stored ?? null)) {
    return Object.entries(wanted).flatMap(([key, value]) =>
      storedDifferences(value, (stored as JsonObject)[key], [...path, key]),
    );
  }
  return deepEqual(wanted, stored) ? [] : [{ path, wanted, stored }];
}

/** One server-side dry run per zone, in the spec document's zone order; nothing is written. */
export async function diffZones(options: DiffOptions): Promise<ZoneDiff[]> {
  const diffs: ZoneDiff[] = [];
  for (const zoneName of Object.keys(options.spec.zones)) {
    const zone = resolveZone(options.spec, zoneName, options.namespace);
    const ref = zoneObjectRef(zone.kind, zone.namespace, zone.vmcluster);
    const base: ZoneObject = {
      zone: zoneName,
      kind: zone.kind.kind,
      vmcluster: zone.vmcluster,
      namespace: zone.namespace,
      ...(zone.cluster === undefined ? {} : { cluster: zone.cluster }),
    };
    let live: JsonObject;
    let generation: number | undefined;
    let kube: KubeObjects;
    try {
      kube = await (options.clusters ?? hubOnly(options.kube)).client(zone.cluster);
    } catch (err) {
      if (!(err instanceof ClusterRegistryError)) throw err;
      diffs.push({ ...base, outcome: 'unreachable', message: err.message });
      continue;
    }
    try {
      const object = await kube.get(ref);
      live = (object.spec ?? {}) as JsonObject;
      generation = object.metadata.generation;
    } catch (err) {
      if (err instanceof KubeError && err.kind === 'notFound') {
        diffs.push({
          ...base,
          outcome: 'missing',
          message: `${zone.kind.kind} ${zone.namespace}/${zone.vmcluster} does not exist`,
        });
        continue;
      }
      // A zone cluster that does not answer is said for that zone; the others are still diffed.
      if (zone.cluster !== undefined && err instanceof KubeError) {
        diffs.push({ ...base, outcome: 'unreachable', message: `cluster ${zone.cluster}: ${err.message}` });
        continue;
      }
      throw err;
    }
    const changes = diffMergePatch(live, zone.patch);
    if (changes.length === 0) {
      diffs.push({ ...base, outcome: 'ok', generation, changes, differences: [] });
      continue;
    }
    let stored: JsonObject;
    try {
      const result = await kube.mergePatch(ref, { spec: zone.patch }, undefined, { dryRun: true });
      stored = (result.spec ?? {}) as JsonObject;
    } catch (err) {
      if (err instanceof KubeError && (err.kind === 'invalid' || err.kind === 'forbidden')) {
        diffs.push({ ...base, outcome: 'refused', message: err.message });
        continue;
      }
      throw err;
    }
    const differences = changes.flatMap((change) =>
      change.after === undefined
        ? []
        : storedDifferences(change.after, valueAt(stored, change.path), change.path),
    );
    diffs.push({ ...base, outcome: 'ok', generation, changes, differences });
  }
  return diffs;
}

function field(path: readonly string[]): string {
  return ['spec', ...path].join('.');
}

/** A value as the diff shows it: quoted JSON, but never a secret-looking or long one (plugin/kube/redact.ts). */
function show(path: readonly string[], value: JsonValue | undefined): string {
  return showFieldValue(path, value, true);
}

/** A human diff, one block per zone. */
export function formatZoneDiffs(diffs: readonly ZoneDiff[]): string {
  const lines: string[] = [];
  for (const diff of diffs) {
    const where = diff.cluster === undefined ? '' : ` in cluster ${diff.cluster}`;
    const head = `zone ${diff.zone}: ${diff.kind} ${diff.namespace}/${diff.vmcluster}${where}`;
    if (diff.outcome !== 'ok') {
      lines.push(`${head}: ${diff.outcome.toUpperCase()}: ${diff.message}`);
      continue;
    }
    if (diff.changes.length === 0) {
      lines.push(`${head}: no change (generation ${diff.generation ?? '?'})`);
      continue;
    }
    lines.push(`${head}: ${diff.changes.length} field(s) change (live generation ${diff.generation ?? '?'})`);
    for (const change of diff.changes) {
      const mark = change.before === undefined ? '+' : change.after === undefined ? '-' : '~';
      const value =
        mark === '+'
          ? show(change.path, change.after)
          : mark === '-'
            ? show(change.path, change.before)
            : `${show(change.path, change.before)} → ${show(change.path, change.after)}`;
      lines.push(`  ${mark} ${field(change.path)}: ${value}`);
    }
    for (const d of diff.differences) {
      lines.push(
        d.stored === undefined
          ? `  ! ${field(d.path)}: PRUNED by the API server (not in the ${diff.kind} schema); ${show(d.path, d.wanted)} would not be stored`
          : `  ! ${field(d.path)}: the API server would store ${show(d.path, d.stored)}, not ${show(d.path, d.wanted)}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

export function diffExitCode(diffs: readonly ZoneDiff[]): number {
  const bad = diffs.some((d) => d.outcome !== 'ok' || d.differences.some((x) => x.stored === undefined));
  return bad ? 1 : 0;
}

/** The user's kubeconfig (--kubeconfig, else KUBECONFIG / ~/.kube/config) and context (--context, else current). */
export function kubeConfigFor(target: KubeTarget): KubeConnection {
  if (target.kubeconfig === undefined && target.context === undefined) return loadKubeConnection();
  const paths = target.kubeconfig === undefined ? defaultKubeconfigPaths() : [target.kubeconfig];
  return kubeconfigConnection(paths, target.context);
}

function kubeFor(target: KubeTarget): KubeObjects {
  return kubeObjects(kubeConfigFor(target));
}

/** `vmzones diff --spec FILE [--rollout NAME]`: objects live in the spec's namespace, else -n, else `default`. */
export async function run(flags: Flags, context: CommandContext): Promise<number> {
  const path = flags.string('spec');
  if (path === undefined) throw new UsageError('diff needs --spec FILE');
  const file = fileLabel(path);
  const spec = oneSpec(readManifests(readInput(context.io, path), file), file, flags.string('rollout'));
  const target = flags.kubeTarget();
  const kube = kubeFor(target);
  // Zones in registered clusters are diffed there, with the clusters' registrations, as the plugin reaches them.
  const clusters = clusterClients({
    hub: kube,
    namespace: flags.string('clusters-namespace') ?? 'argo-rollouts',
  });
  const diffs = await diffZones({ spec, namespace: target.namespace ?? 'default', kube, clusters });
  context.io.out(formatZoneDiffs(diffs));
  return diffExitCode(diffs);
}
