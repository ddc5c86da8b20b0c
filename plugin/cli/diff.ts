// `vmzones diff --spec FILE`: before a commit is merged, what each zone's VMCluster spec would become. For every
// zone the merged overrides (global overrideSpec, then the zone's) go to the API server as a server-side dry run
// against the live VMCluster: admission, schema validation and pruning run, nothing is stored. Printed per zone:
// the fields that change (what apply would record for rollback), the fields the API server would drop (pruned:
// unknown to the CRD schema) or store differently, and a refusal with the server's message.
// Exit status (diffExitCode): 0 when every zone would take its change as written, 1 when a zone would be
// refused, is missing, or would lose fields to pruning (a change that silently does not happen).
//
// `run` is a CommandModule (plugin/cli/commands.ts): wiring it is one entry in the command table,
//   {name: 'diff', synopsis: 'diff --spec FILE [--rollout NAME] [-n NS] [--kubeconfig F] [--context C]',
//    options: {spec: {type: 'string'}, rollout: {type: 'string'}}, dataOutput: false, talksToKubernetes: true,
//    load: () => import('./diff.ts')}
// (loaded on demand: it evaluates the Kubernetes client, which the offline commands must not).

import { KubeConfig } from '@kubernetes/client-node';
import { KubeError, type KubeObjects, kubeObjects } from '../kube/objects.ts';
import { zoneObjectRef } from '../vm/zone-kinds.ts';
import {
  deepEqual,
  diffMergePatch,
  type FieldChange,
  isJsonObject,
  type JsonObject,
  type JsonValue,
} from '../zones/merge-patch.ts';
import { resolveZone, type ZoneSpecDocument } from '../zones/spec.ts';
import { type Flags, type KubeTarget, UsageError } from './args.ts';
import type { CommandContext } from './commands.ts';
import { readInput } from './io.ts';
import { fileLabel, oneSpec, readManifests } from './manifests.ts';

export interface StoredDifference {
  path: string[];
  /** What the patch asks for. */
  wanted: JsonValue;
  /** What the API server would store; undefined = pruned. */
  stored: JsonValue | undefined;
}

export type ZoneDiff =
  | {
      zone: string;
      vmcluster: string;
      namespace: string;
      outcome: 'ok';
      generation: number | undefined;
      changes: FieldChange[];
      /** Fields of the patch that the API server would drop or store otherwise. */
      differences: StoredDifference[];
    }
  | { zone: string; vmcluster: string; namespace: string; outcome: 'refused' | 'missing'; message: string };

export interface DiffOptions {
  spec: ZoneSpecDocument;
  /** Namespace of the objects when the spec document names none (the Rollout's). */
  namespace: string;
  kube: KubeObjects;
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
    const base = { zone: zoneName, vmcluster: zone.vmcluster, namespace: zone.namespace };
    let live: JsonObject;
    let generation: number | undefined;
    try {
      const object = await options.kube.get(ref);
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
      throw err;
    }
    const changes = diffMergePatch(live, zone.patch);
    if (changes.length === 0) {
      diffs.push({ ...base, outcome: 'ok', generation, changes, differences: [] });
      continue;
    }
    let stored: JsonObject;
    try {
      const result = await options.kube.mergePatch(ref, { spec: zone.patch }, undefined, { dryRun: true });
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

function show(value: JsonValue | undefined): string {
  return value === undefined ? '(unset)' : JSON.stringify(value);
}

/** A human diff, one block per zone. */
export function formatZoneDiffs(diffs: readonly ZoneDiff[]): string {
  const lines: string[] = [];
  for (const diff of diffs) {
    const head = `zone ${diff.zone}: VMCluster ${diff.namespace}/${diff.vmcluster}`;
    if (diff.outcome !== 'ok') {
      lines.push(`${head}: ${diff.outcome === 'missing' ? 'MISSING' : 'REFUSED'}: ${diff.message}`);
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
          ? show(change.after)
          : mark === '-'
            ? show(change.before)
            : `${show(change.before)} → ${show(change.after)}`;
      lines.push(`  ${mark} ${field(change.path)}: ${value}`);
    }
    for (const d of diff.differences) {
      lines.push(
        d.stored === undefined
          ? `  ! ${field(d.path)}: PRUNED by the API server (not in the VMCluster schema); ${show(d.wanted)} would not be stored`
          : `  ! ${field(d.path)}: the API server would store ${show(d.stored)}, not ${show(d.wanted)}`,
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
export function kubeConfigFor(target: KubeTarget): KubeConfig {
  const kc = new KubeConfig();
  if (target.kubeconfig === undefined) kc.loadFromDefault();
  else kc.loadFromFile(target.kubeconfig);
  if (target.context !== undefined) kc.setCurrentContext(target.context);
  return kc;
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
  const diffs = await diffZones({ spec, namespace: target.namespace ?? 'default', kube: kubeFor(target) });
  context.io.out(formatZoneDiffs(diffs));
  return diffExitCode(diffs);
}
