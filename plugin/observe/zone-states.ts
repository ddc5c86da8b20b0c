// Where every zone stands, derived only from what Kubernetes holds: the Rollouts' spec documents (which zones
// exist), the VMClusters' vmzones annotations (lease, maintenance, rollback record, handoff) and status, and the
// holder Rollout's current step. Nothing here remembers an earlier answer, so a restarted process or a second
// replica says the same. The mapping is documented in docs/observe.md ("Zone states").

import { z } from 'zod';
import type { KubeObject } from '../kube/objects.ts';
import { stepPluginName } from '../rollouts/plugin-names.ts';
import {
  canaryPluginStepSchema,
  type RolloutObject,
  rolloutObjectSchema,
} from '../rollouts/rollout-object.ts';
import { type VMClusterReadiness, vmclusterReadiness } from '../vm/vmcluster.ts';
import { defaultZoneKind, type ZoneKindName, zoneKindOf } from '../vm/zone-kinds.ts';
import {
  parseSpecDocument,
  specAnnotation,
  specWaves,
  type ZoneSpecDocument,
  zoneWorkload,
} from '../zones/spec.ts';
import { fieldsNotCarried } from '../zones/spec-drift.ts';
import { maintenanceOf } from '../zones/state/maintenance.ts';
import {
  handoffAnnotation,
  maintenanceAnnotation,
  StateError,
  sameRevision,
  type ZoneState,
  zoneState,
} from '../zones/state/zone-annotations.ts';

export const zoneStateNames = [
  'serving',
  'drained',
  'applying',
  'waiting-gate',
  'restoring',
  'rolling-back',
  'unknown',
] as const;
export type ZoneStateName = (typeof zoneStateNames)[number];

/** A step's zone (`zone`) or wave (`zones`) and its action. */
const stepConfigSchema = z
  .object({ zone: z.string().optional(), zones: z.array(z.string()).optional(), action: z.string() })
  .transform((c) => ({ zones: c.zones ?? (c.zone === undefined ? [] : [c.zone]), action: c.action }));

export interface ZoneRow {
  /** The registered cluster the zone's object lives in (docs/multicluster.md); undefined = the controller's own. */
  cluster: string | undefined;
  namespace: string;
  /** The kind of the zone's object (docs/zone-kinds.md). */
  kind: ZoneKindName;
  /** The zone's object name (of `kind`); named vmcluster because VMCluster was the first kind. */
  vmcluster: string;
  zone: string;
  /** `namespace/name` of the Rollout that holds the zone, else the one whose spec names it; '' if none. */
  rollout: string;
  /** The zone's wave in that Rollout's walk (1 = first), when its spec document walks in waves (`waves` or
   *  `maxParallelZones`); undefined for a walk one zone at a time, or when that Rollout does not name the zone. */
  wave: number | undefined;
  state: ZoneStateName;
  /** 1 while the zone is out of reads, changed or being rolled back (vmzones_zone_maintenance). */
  maintenance: boolean;
  /** When the current state began, as the annotations record it. */
  since: string | undefined;
  /** Why, in words (the maintenance reason, the handoff's latest message, or the problem). */
  reason: string | undefined;
  lease: { rollout: string; revision: string; since: string } | undefined;
  rollback: { phase: string; generation: number; appliedAt: string; fields: number } | undefined;
  handoff: { by: string; requestedAt: string; rollback: boolean; message: string | undefined } | undefined;
  vmclusterStatus:
    | Pick<VMClusterReadiness, 'state' | 'generation' | 'observedGeneration' | 'updateStatus'>
    | undefined;
  /** Every Rollout whose spec document names this VMCluster. */
  rollouts: string[];
  /** A serving zone whose object does not carry the stable spec of a Rollout that names it (driftMessage). */
  drift: ZoneDrift | undefined;
}

/** The zone serves reads, but its object does not carry what the Rollout's stable revision says. */
export interface ZoneDrift {
  /** `namespace/name` of the Rollout, settled at its stable revision. */
  rollout: string;
  revision: string;
  /** The fields (`spec.a.b`) that differ from its spec document; names only. */
  fields: string[];
}

/** The one wording of a drifted zone, with how to walk it: for `vmzones status`, /status readers and docs. */
export function driftMessage(drift: ZoneDrift): string {
  const shown = drift.fields.slice(0, 3).join(', ');
  const more = drift.fields.length > 3 ? ` and ${drift.fields.length - 3} more` : '';
  return (
    `drifted from the stable spec of Rollout ${drift.rollout} (revision ${drift.revision}): ${shown}${more} ` +
    'not as its spec document says; no step brings it there until a new revision walks the zone (a change of ' +
    'the Rollout\'s pod template, e.g. a commit to the spec document: docs/step-plugin.md, "Drifted from the stable spec")'
  );
}

export interface ZoneStatesInput {
  /** Rollouts as listed (any shape: those that do not parse are reported in `problems`). */
  rollouts: readonly unknown[];
  /** The zones' objects as listed in the controller's cluster, of every zone kind (VMCluster, VMSingle, VLCluster). */
  zoneObjects: readonly KubeObject[];
  /** The zones' objects listed in each registered cluster, by cluster name. */
  remoteZoneObjects?: Readonly<Record<string, readonly KubeObject[]>>;
  /** Registered clusters that could not be listed, with the error: their zones are unknown, not missing. */
  unreadClusters?: Readonly<Record<string, string>>;
}

export interface ZoneStates {
  zones: ZoneRow[];
  /** Rollouts whose spec document or shape could not be read (never secrets: names and field paths only). */
  problems: string[];
}

interface Named {
  zone: string;
  rollout: string;
  spec: ZoneSpecDocument;
  /** The zone's wave in this Rollout's walk (1 = first), if its spec walks in waves. */
  wave: number | undefined;
}

/** The wave of `zone` in the spec's walk (1 = first); undefined for a spec without waves or maxParallelZones, whose
 *  walk is one zone at a time as it always was (its series stay as they were). */
function waveOf(spec: ZoneSpecDocument, zone: string): number | undefined {
  if (spec.waves === undefined && spec.maxParallelZones === undefined) return undefined;
  const index = specWaves(spec).findIndex((wave) => wave.includes(zone));
  return index < 0 ? undefined : index + 1;
}

// `Kind/namespace/name`, after `cluster/` for a registered cluster: a VMSingle and a VMCluster of one name in one
// namespace are two zones, and so are two VMClusters of one name in two clusters. Cluster names may hold "/"
// (they are URLs at times), so the cluster goes first and is split off at the last three parts.
const objectKey = (kind: ZoneKindName, namespace: string, name: string, cluster: string | undefined) =>
  `${cluster === undefined ? '' : `${cluster}/`}${kind}/${namespace}/${name}`;
const kindOf = (object: KubeObject): ZoneKindName => (zoneKindOf(object.kind) ?? defaultZoneKind).kind;
const keyOf = (object: KubeObject, cluster: string | undefined) =>
  objectKey(kindOf(object), object.metadata.namespace ?? '', object.metadata.name ?? '', cluster);

function splitKey(key: string): {
  cluster: string | undefined;
  kind: string;
  namespace: string;
  name: string;
} {
  const parts = key.split('/');
  const [kind = '', namespace = '', name = ''] = parts.slice(-3);
  const cluster = parts.length > 3 ? parts.slice(0, -3).join('/') : undefined;
  return { cluster, kind, namespace, name };
}

/** Zones named by the Rollouts' spec documents, by `Kind/namespace/name` of their objects. */
function zonesFromRollouts(rollouts: readonly RolloutObject[], problems: string[]): Map<string, Named[]> {
  const named = new Map<string, Named[]>();
  for (const rollout of rollouts) {
    const text = rollout.spec?.template?.metadata?.annotations?.[specAnnotation];
    if (text === undefined) continue;
    const id = `${rollout.metadata.namespace}/${rollout.metadata.name}`;
    try {
      const spec = parseSpecDocument(text);
      for (const [zone, entry] of Object.entries(spec.zones)) {
        const { kind, name } = zoneWorkload(entry);
        const key = objectKey(kind.kind, spec.namespace ?? rollout.metadata.namespace, name, entry.cluster);
        named.set(key, [...(named.get(key) ?? []), { zone, rollout: id, spec, wave: waveOf(spec, zone) }]);
      }
    } catch (err) {
      problems.push(
        `Rollout ${id}: its ${specAnnotation} cannot be read (${(err as Error).message.slice(0, 300)})`,
      );
    }
  }
  return named;
}

/** The vmzones/step config of the holder's current step, when it is one. */
function currentStep(rollout: RolloutObject | undefined): z.output<typeof stepConfigSchema> | undefined {
  if (rollout === undefined || rollout.status?.abort === true) return undefined;
  const step = canaryPluginStepSchema.safeParse(
    rollout.spec?.strategy?.canary?.steps?.[rollout.status?.currentStepIndex ?? 0],
  ).data;
  if (step?.plugin?.name !== stepPluginName) return undefined;
  const parsed = stepConfigSchema.safeParse(step.plugin.config);
  return parsed.success ? parsed.data : undefined;
}

function classify(
  state: ZoneState,
  readiness: VMClusterReadiness,
  zone: string,
  holder: RolloutObject | undefined,
): { state: ZoneStateName; since: string | undefined; reason: string | undefined } {
  const { handoff, rollback, lease, maintenance } = state;
  if (handoff !== undefined) {
    const ours = rollback !== undefined && sameRevision(rollback, handoff.holder);
    const undoing =
      handoff.rollback &&
      ours &&
      (rollback.phase === 'requested' || (rollback.phase === 'reverted' && readiness.state !== 'ready'));
    return {
      state: undoing ? 'rolling-back' : 'restoring',
      since: (undoing ? rollback.requestedAt : undefined) ?? handoff.requestedAt,
      reason: handoff.message ?? handoff.by,
    };
  }
  if (maintenance === undefined) return { state: 'serving', since: undefined, reason: undefined };
  const applied =
    rollback !== undefined &&
    lease !== undefined &&
    sameRevision(rollback, lease) &&
    rollback.phase === 'applied'
      ? rollback
      : undefined;
  const reason = maintenance.reason;
  if (applied !== undefined && vmclusterReadinessAt(readiness, applied.generation) !== 'ready') {
    return { state: 'applying', since: applied.appliedAt, reason: readiness.message };
  }
  const step = currentStep(holder);
  if (step?.zones.includes(zone) === true && step.action === 'restoreReads') {
    return { state: 'restoring', since: applied?.appliedAt ?? maintenance.since, reason };
  }
  if (applied !== undefined) return { state: 'waiting-gate', since: applied.appliedAt, reason };
  return { state: 'drained', since: maintenance.since, reason };
}

/** The Rollout is at its stable revision, as the controller saw its latest spec: its pod template's spec
 *  document is the stable spec (mid-walk or aborted it is the new revision's, which zones not yet walked lack). */
function settledAtStable(rollout: RolloutObject): boolean {
  const status = rollout.status;
  if (status === undefined || status.abort === true) return false;
  const observed = status.observedGeneration;
  const seen = observed !== undefined && String(observed) === String(rollout.metadata.generation ?? observed);
  return (
    seen &&
    status.stableRS !== undefined &&
    status.stableRS !== '' &&
    status.currentPodHash === status.stableRS
  );
}

/** The first Rollout naming the zone, settled at its stable revision, whose spec the zone's object does not carry. */
function driftOf(
  names: readonly Named[],
  byId: ReadonlyMap<string, RolloutObject>,
  object: KubeObject,
): ZoneDrift | undefined {
  for (const named of names) {
    const rollout = byId.get(named.rollout);
    if (rollout === undefined || !settledAtStable(rollout)) continue;
    const fields = fieldsNotCarried(named.spec, named.zone, rollout.metadata.namespace, object);
    if (fields.length > 0)
      return { rollout: named.rollout, revision: rollout.status?.stableRS ?? '', fields };
  }
  return undefined;
}

function vmclusterReadinessAt(readiness: VMClusterReadiness, generation: number): string {
  if (readiness.state !== 'ready') return readiness.state;
  return (readiness.observedGeneration ?? 0) >= generation ? 'ready' : 'progressing';
}

/** Every zone a Rollout names or a zone object's annotations mention, sorted by kind, namespace and name. */
export function deriveZoneStates(input: ZoneStatesInput): ZoneStates {
  const problems: string[] = [];
  const rollouts: RolloutObject[] = [];
  for (const item of input.rollouts) {
    const parsed = rolloutObjectSchema.safeParse(item);
    if (parsed.success) rollouts.push(parsed.data);
    else problems.push(`a listed Rollout has an unexpected shape (${parsed.error.issues[0]?.message})`);
  }
  const byId = new Map(rollouts.map((r) => [`${r.metadata.namespace}/${r.metadata.name}`, r]));
  const named = zonesFromRollouts(rollouts, problems);
  const listed: [string, KubeObject][] = [
    ...input.zoneObjects.map((c): [string, KubeObject] => [keyOf(c, undefined), c]),
    ...Object.entries(input.remoteZoneObjects ?? {}).flatMap(([where, objects]) =>
      objects.map((c): [string, KubeObject] => [keyOf(c, where), c]),
    ),
  ];
  const clusters = new Map(listed);
  const maintained = new Map(
    listed.flatMap(([key, object]) => maintenanceOf([object]).map((m) => [key, m] as const)),
  );

  const keys = new Set([...named.keys()]);
  for (const [key, cluster] of clusters) {
    const annotations = cluster.metadata.annotations ?? {};
    if (Object.keys(annotations).some((a) => a.startsWith('vmzones.io/'))) keys.add(key);
  }

  const zones: ZoneRow[] = [];
  for (const key of [...keys].sort()) {
    const { cluster: where, kind: kindName, namespace, name: vmcluster } = splitKey(key);
    const kind = (zoneKindOf(kindName) ?? defaultZoneKind).kind;
    const names = named.get(key) ?? [];
    const cluster = clusters.get(key);
    const referencing = [...new Set(names.map((n) => n.rollout))].sort();
    const base = {
      cluster: where,
      namespace,
      kind,
      vmcluster,
      rollouts: referencing,
      lease: undefined,
      rollback: undefined,
      handoff: undefined,
      vmclusterStatus: undefined,
      drift: undefined,
    };
    // The wave comes from the spec of the Rollout the row names (the holder while held), for the zone it names.
    const push = (row: Omit<ZoneRow, 'wave'>) =>
      zones.push({
        ...row,
        wave: names.find((n) => n.rollout === row.rollout && n.zone === row.zone)?.wave,
      });
    const unread = where === undefined ? undefined : input.unreadClusters?.[where];
    if (cluster === undefined) {
      push({
        ...base,
        zone: names[0]?.zone ?? '',
        rollout: referencing[0] ?? '',
        state: 'unknown',
        maintenance: false,
        since: undefined,
        reason:
          unread === undefined
            ? `${kind} ${namespace}/${vmcluster}${where === undefined ? '' : ` in cluster ${where}`} does not exist`
            : `cluster ${where} cannot be listed: ${unread}`,
      });
      continue;
    }
    const readiness = vmclusterReadiness(cluster);
    const vmclusterStatus = {
      state: readiness.state,
      generation: readiness.generation,
      observedGeneration: readiness.observedGeneration,
      updateStatus: readiness.updateStatus,
    };
    // A malformed annotation is reported, and the zone counts as in maintenance when it carries one.
    const annotated =
      cluster.metadata.annotations?.[maintenanceAnnotation] !== undefined ||
      cluster.metadata.annotations?.[handoffAnnotation] !== undefined;
    let state: ZoneState;
    try {
      state = zoneState(cluster);
    } catch (err) {
      if (!(err instanceof StateError)) throw err;
      push({
        ...base,
        vmclusterStatus,
        zone:
          maintained.get(key)?.zone || names[0]?.zone || (cluster.metadata.labels?.['vmzones.io/zone'] ?? ''),
        rollout: referencing[0] ?? '',
        state: 'unknown',
        maintenance: annotated,
        since: undefined,
        reason: err.message,
      });
      continue;
    }
    const zone =
      state.maintenance?.zone ?? state.handoff?.zone ?? state.rollback?.zone ?? names[0]?.zone ?? '';
    const holderId = state.lease?.rollout ?? state.handoff?.holder.rollout;
    const classified = classify(
      state,
      readiness,
      zone,
      holderId === undefined ? undefined : byId.get(holderId),
    );
    if (zone === '' && classified.state === 'serving') continue; // a leftover rollback record alone: not a zone
    push({
      ...base,
      vmclusterStatus,
      zone,
      rollout: holderId ?? referencing[0] ?? '',
      ...classified,
      maintenance: classified.state !== 'serving',
      drift: classified.state === 'serving' ? driftOf(names, byId, cluster) : undefined,
      lease: state.lease && {
        rollout: state.lease.rollout,
        revision: state.lease.revision,
        since: state.lease.since,
      },
      rollback: state.rollback && {
        phase: state.rollback.phase,
        generation: state.rollback.generation,
        appliedAt: state.rollback.appliedAt,
        fields: state.rollback.changes.length,
      },
      handoff: state.handoff && {
        by: state.handoff.by,
        requestedAt: state.handoff.requestedAt,
        rollback: state.handoff.rollback,
        message: state.handoff.message,
      },
    });
  }
  return { zones, problems };
}
