// `vmzones status`: what a person watching a zone walk needs per zone, derived from Kubernetes objects only (the
// Rollout, its zones' VMClusters, its AnalysisRuns, the read balancer's routing). Pure: status.ts reads the
// objects, status-table.ts draws them. The zone state is the mapping of plugin/observe/zone-states.ts
// (docs/observe.md "Zone states"), so the CLI, /status and vmzones_zone_state never disagree.

import { z } from 'zod';
import type { KubeObject } from '../kube/objects.ts';
import { type ZoneHealth, zoneHealth } from '../observe/zone-health.ts';
import {
  deriveZoneStates,
  type ZoneDrift,
  type ZoneStateName,
  type ZoneStates,
} from '../observe/zone-states.ts';
import {
  type RolloutObject,
  rolloutObjectSchema,
  rolloutShapeProblem,
  type StepPluginStatus,
} from '../rollouts/rollout-object.ts';
import { vmclusterReadiness } from '../vm/vmcluster.ts';
import { defaultZoneKind, type ZoneKindName } from '../vm/zone-kinds.ts';
import { parseSpecDocument, specAnnotation, type ZoneSpecDocument, zoneWorkload } from '../zones/spec.ts';
import { StateError, zoneState } from '../zones/state/zone-annotations.ts';
import type { ZoneAction } from '../zones/step/actions.ts';
import { InputError } from './io.ts';
import { classifyStep } from './walk-steps.ts';

const measurementSchema = z.object({
  phase: z.string().optional(),
  message: z.string().optional(),
  value: z.string().optional(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
  metadata: z.record(z.string(), z.string()).optional(),
});

/** The parts of an AnalysisRun the gate column reads. */
export const analysisRunSchema = z.object({
  metadata: z.object({
    name: z.string(),
    creationTimestamp: z.string().optional(),
    ownerReferences: z
      .array(z.object({ kind: z.string(), name: z.string(), uid: z.string().optional() }))
      .optional(),
  }),
  spec: z
    .object({ args: z.array(z.object({ name: z.string(), value: z.string().optional() })).optional() })
    .optional(),
  status: z
    .object({
      phase: z.string().optional(),
      message: z.string().optional(),
      metricResults: z
        .array(
          z.object({
            name: z.string(),
            phase: z.string().optional(),
            measurements: z.array(measurementSchema).optional(),
          }),
        )
        .optional(),
    })
    .optional(),
});
export type AnalysisRunObject = z.infer<typeof analysisRunSchema>;

/** The figures of the drain gate's measurement value (plugin/gates/drain-figures.ts) that the table shows. */
const drainValueSchema = z.object({
  pendingDataBytes: z.number().nullable().optional(),
  consecutiveGoodRounds: z.number().nullable().optional(),
  requiredRounds: z.number().nullable().optional(),
});

export interface GateReadingView {
  analysisRun: string;
  /** The AnalysisRun's phase: Running, Successful, Failed, Error, Inconclusive... */
  phase: string;
  /** In memory + on disk, over the zone's vmagents (the drain gate only). */
  pendingBytes: number | undefined;
  rounds: { good: number; required: number | undefined } | undefined;
  /** Readings the measurement took (vmzones.io/readings). */
  readings: number | undefined;
  message: string | undefined;
}

export interface ZoneProgress {
  /** The zone's walk steps before the current step. */
  done: number;
  total: number;
  /** What the current step does: an action, `gate`, `pause` or another step of the user's. */
  doing: ZoneAction | 'gate' | 'pause' | 'other' | undefined;
}

export interface ZoneStatus {
  zone: string;
  /** The registered cluster of the zone's VMCluster; absent = the one `vmzones status` talks to. */
  cluster?: string;
  /** The kind of the zone's object (docs/zone-kinds.md). */
  kind: ZoneKindName;
  /** The zone's object name (of `kind`); named vmcluster because VMCluster was the first kind. */
  vmcluster: string;
  namespace: string;
  /** Where the zone's walk stands: before it, in it (the Rollout's current step lies within its steps), after it;
   *  `unwalked` for a zone of the spec document that no step walks; `skipped` for a zone whose steps the Rollout
   *  passed without running them (`promote --full`). */
  walk: 'pending' | 'current' | 'done' | 'skipped' | 'unwalked';
  progress: ZoneProgress | undefined;
  state: ZoneStateName;
  since: string | undefined;
  generation: number | undefined;
  observedGeneration: number | undefined;
  updateStatus: string | undefined;
  /** undefined: the routing could not be read. */
  routed: boolean | undefined;
  lease: { rollout: string; revision: string } | undefined;
  gate: GateReadingView | undefined;
  /** The step status message, or the reconciler's handoff message, or the state's reason. */
  message: string | undefined;
  /** After `promote --full`: the stable revision is not the one whose change the zone holds. */
  notChangedBy: string | undefined;
  /** Serving, but not carrying the Rollout's stable spec (plugin/observe/zone-states.ts decides it). */
  drift: ZoneDrift | undefined;
  /** The zone object's health as Argo CD shows it with vmzones' checks (plugin/observe/zone-health.ts): the same
   *  verdict and sentence; undefined when the object could not be read. */
  health: ZoneHealth | undefined;
}

export type WalkOutcome = 'progressing' | 'paused' | 'healthy' | 'degraded' | 'aborted';

export interface RolloutStatus {
  rollout: string;
  namespace: string;
  phase: string | undefined;
  message: string | undefined;
  revision: string | undefined;
  stableRevision: string | undefined;
  /** 0-based index of the current step, and how many steps there are. */
  step: { index: number; total: number; kind: string };
  outcome: WalkOutcome;
  zones: ZoneStatus[];
  /** What could not be read (names and field paths, never secrets). */
  problems: string[];
}

export interface StatusInput {
  rollout: unknown;
  /** The spec document's zone objects as read, of any zone kind (a missing one is simply absent). */
  zoneObjects: readonly KubeObject[];
  /** The same by zone: zones in different clusters may name the same namespace/name. */
  byZone?: Readonly<Record<string, KubeObject>>;
  /** Why a zone's object could not be read (its cluster is unknown or does not answer). */
  zoneErrors?: Readonly<Record<string, string>>;
  analysisRuns: readonly unknown[];
  /** The zones the read balancer routes, or why it could not be read. */
  routing: { routed: readonly string[] } | { error: string };
  /** Settings that weaken security where the zones are read (a registered cluster without TLS verification). */
  warnings?: readonly string[];
  /** When the objects were read: the health's deadlines are measured to it. */
  now: Date;
}

/** A Rollout the command cannot show (no spec document, not a Rollout's shape): exit 1, one line, also under
 *  --watch (waiting would not help). */
export class StatusError extends InputError {}

/** The Rollout, or a StatusError naming what is wrong with it. */
export function parseStatusRollout(value: unknown): RolloutObject {
  const parsed = rolloutObjectSchema.safeParse(value);
  if (!parsed.success) throw new StatusError(rolloutShapeProblem(parsed.error));
  return parsed.data;
}

/** The spec document of the Rollout's pod template (where the plugin reads it). */
export function rolloutSpec(rollout: RolloutObject): ZoneSpecDocument {
  const text = rollout.spec?.template?.metadata?.annotations?.[specAnnotation];
  const id = `${rollout.metadata.namespace}/${rollout.metadata.name}`;
  if (text === undefined) {
    throw new StatusError(
      `Rollout ${id} carries no ${specAnnotation} annotation on spec.template.metadata: it walks no zones`,
    );
  }
  try {
    return parseSpecDocument(text);
  } catch (err) {
    throw new StatusError(`Rollout ${id}: its ${specAnnotation} cannot be read: ${(err as Error).message}`);
  }
}

/** The states of one Rollout's zones (plugin/observe/zone-states.ts: the one decision, drift included), each zone's
 *  object as read in its own registered cluster, so that a zone in another cluster is judged by its own object. */
export function rolloutZoneStates(
  rollout: unknown,
  spec: ZoneSpecDocument,
  byZone: Readonly<Record<string, KubeObject>>,
): ZoneStates {
  const zoneObjects: KubeObject[] = [];
  const remoteZoneObjects: Record<string, KubeObject[]> = {};
  for (const [zone, object] of Object.entries(byZone)) {
    const cluster = spec.zones[zone]?.cluster;
    if (cluster === undefined) zoneObjects.push(object);
    else remoteZoneObjects[cluster] = [...(remoteZoneObjects[cluster] ?? []), object];
  }
  return deriveZoneStates({ rollouts: [rollout], zoneObjects, remoteZoneObjects });
}

interface ZoneSteps {
  zone: string;
  indices: number[];
}

/** Zones in the order the steps walk them, each with the indices of its steps. */
function walkOrder(steps: readonly unknown[]): ZoneSteps[] {
  const order: ZoneSteps[] = [];
  steps.forEach((step, index) => {
    const walk = classifyStep(step);
    if (walk.kind !== 'action' && walk.kind !== 'gate') return;
    for (const zone of walk.zones) {
      const found = order.find((z) => z.zone === zone);
      if (found) found.indices.push(index);
      else order.push({ zone, indices: [index] });
    }
  });
  return order;
}

function stepKind(step: unknown): ZoneProgress['doing'] {
  const walk = classifyStep(step);
  if (walk.kind === 'action') return walk.action;
  if (walk.kind === 'gate' || walk.kind === 'pause') return walk.kind;
  return step === undefined ? undefined : 'other';
}

function outcomeOf(rollout: RolloutObject, total: number): WalkOutcome {
  const status = rollout.status ?? {};
  if (status.abort === true) return 'aborted';
  if (status.phase === 'Degraded') return 'degraded';
  const observed = status.observedGeneration;
  const seen = observed === undefined || String(observed) === String(rollout.metadata.generation ?? observed);
  const atEnd = (status.currentStepIndex ?? 0) >= total;
  const settled = status.currentPodHash !== undefined && status.currentPodHash === status.stableRS;
  if (status.phase === 'Healthy' && seen && atEnd && settled) return 'healthy';
  if (status.phase === 'Paused') return 'paused';
  return 'progressing';
}

function newestRun(runs: readonly AnalysisRunObject[], zone: string): AnalysisRunObject | undefined {
  return runs
    .filter((r) => r.spec?.args?.some((a) => a.name === 'zone' && a.value === zone))
    .sort((a, b) =>
      (a.metadata.creationTimestamp ?? '') === (b.metadata.creationTimestamp ?? '')
        ? a.metadata.name.localeCompare(b.metadata.name)
        : (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''),
    )
    .at(-1);
}

function gateReading(run: AnalysisRunObject): GateReadingView {
  const results = run.status?.metricResults ?? [];
  const latest = results.map((r) => ({ result: r, m: r.measurements?.at(-1) }));
  let figures: z.infer<typeof drainValueSchema> | undefined;
  let measurement = latest.at(-1)?.m;
  for (const { m } of latest) {
    if (m?.value === undefined) continue;
    try {
      const parsed = drainValueSchema.safeParse(JSON.parse(m.value));
      if (parsed.success && parsed.data.pendingDataBytes !== undefined) {
        figures = parsed.data;
        measurement = m;
      }
    } catch {
      // A value that is not JSON is not a vmzones gate's: shown by its message only.
    }
  }
  const readings = Number(measurement?.metadata?.['vmzones.io/readings']);
  const good = figures?.consecutiveGoodRounds;
  return {
    analysisRun: run.metadata.name,
    phase: run.status?.phase ?? 'Pending',
    pendingBytes: figures?.pendingDataBytes ?? undefined,
    rounds:
      good === undefined || good === null
        ? undefined
        : { good, required: figures?.requiredRounds ?? undefined },
    readings: Number.isFinite(readings) && readings > 0 ? readings : undefined,
    message: measurement?.message ?? run.status?.message,
  };
}

/** The newest step status among the zone's steps (Abort and Terminate entries too). */
function latestStepStatus(
  statuses: readonly StepPluginStatus[],
  indices: readonly number[],
): StepPluginStatus | undefined {
  let best: StepPluginStatus | undefined;
  for (const s of statuses) {
    if (!indices.includes(s.index ?? -1)) continue;
    const at = s.updatedAt ?? s.startedAt ?? '';
    if (best === undefined || at >= (best.updatedAt ?? best.startedAt ?? '')) best = s;
  }
  return best;
}

/** Every zone of the Rollout's spec document, in walk order; zones no step walks come last (`unwalked`). */
export function buildStatus(input: StatusInput): RolloutStatus {
  const rollout = parseStatusRollout(input.rollout);
  const spec = rolloutSpec(rollout);
  const namespace = spec.namespace ?? rollout.metadata.namespace;
  const steps = rollout.spec?.strategy?.canary?.steps ?? [];
  const current = rollout.status?.currentStepIndex ?? 0;
  const problems: string[] = [];

  const order = walkOrder(steps).filter((z) => {
    if (spec.zones[z.zone] !== undefined) return true;
    problems.push(`the steps walk zone ${z.zone}, which the spec document does not name`);
    return false;
  });
  const walked = new Set(order.map((z) => z.zone));
  const all: ZoneSteps[] = [
    ...order,
    ...Object.keys(spec.zones)
      .filter((zone) => !walked.has(zone))
      .map((zone) => ({ zone, indices: [] })),
  ];

  const states =
    input.byZone === undefined
      ? deriveZoneStates({ rollouts: [input.rollout], zoneObjects: input.zoneObjects })
      : rolloutZoneStates(input.rollout, spec, input.byZone);
  problems.push(...states.problems);
  const runs = input.analysisRuns.flatMap((value) => {
    const parsed = analysisRunSchema.safeParse(value);
    if (!parsed.success) return [];
    const owned = parsed.data.metadata.ownerReferences?.some(
      (o) =>
        o.kind === 'Rollout' &&
        o.name === rollout.metadata.name &&
        (rollout.metadata.uid === undefined || o.uid === undefined || o.uid === rollout.metadata.uid),
    );
    return owned ? [parsed.data] : [];
  });
  if ('error' in input.routing) problems.push(`read routing: ${input.routing.error}`);
  problems.push(...(input.warnings ?? []).map((warning) => `warning: ${warning}`));
  const routed = 'error' in input.routing ? undefined : new Set(input.routing.routed);
  const statuses = rollout.status?.canary?.stepPluginStatuses ?? [];
  const stable = rollout.status?.stableRS;
  const outcome = outcomeOf(rollout, steps.length);

  const zones = all.map(({ zone, indices }): ZoneStatus => {
    const entry = spec.zones[zone];
    const workload = entry === undefined ? undefined : zoneWorkload(entry);
    const kind = workload?.kind ?? defaultZoneKind;
    const vmcluster = workload?.name ?? '';
    const registered = entry?.cluster;
    const cluster =
      input.byZone?.[zone] ??
      (input.byZone === undefined
        ? input.zoneObjects.find(
            (c) =>
              (c.kind ?? defaultZoneKind.kind) === kind.kind &&
              c.metadata.name === vmcluster &&
              (c.metadata.namespace ?? namespace) === namespace,
          )
        : undefined);
    const zoneError = input.zoneErrors?.[zone];
    const row = states.zones.find(
      (r) =>
        r.kind === kind.kind &&
        r.namespace === namespace &&
        r.vmcluster === vmcluster &&
        (input.byZone === undefined || r.cluster === registered),
    );
    const first = indices[0];
    const last = indices.at(-1);
    // Steps the Rollout ran for this zone, by the controller's record of this revision's step runs.
    const ran = indices.filter((i) =>
      statuses.some((s) => s.index === i && s.operation === 'Run' && s.phase === 'Successful'),
    );
    const passed = outcome === 'healthy' || (last !== undefined && current > last);
    const walk: ZoneStatus['walk'] =
      first === undefined || last === undefined
        ? 'unwalked'
        : passed
          ? ran.length === 0
            ? 'skipped'
            : 'done'
          : current >= first
            ? 'current'
            : 'pending';
    const progress: ZoneProgress | undefined =
      indices.length === 0
        ? undefined
        : {
            done:
              walk === 'done'
                ? indices.length
                : walk === 'skipped'
                  ? 0
                  : indices.filter((i) => i < current).length,
            total: indices.length,
            doing: walk === 'current' ? stepKind(steps[current]) : undefined,
          };
    let state: ReturnType<typeof zoneState> | undefined;
    try {
      state = cluster === undefined ? undefined : zoneState(cluster);
    } catch (err) {
      if (!(err instanceof StateError)) throw err;
    }
    const readiness = cluster === undefined ? undefined : vmclusterReadiness(cluster);
    const run = newestRun(runs, zone);
    const stepStatus = latestStepStatus(statuses, indices);
    const handoffMessage = state?.handoff?.message;
    const message =
      handoffMessage !== undefined
        ? `reconciler: ${handoffMessage}`
        : (stepStatus?.message ?? (walk === 'unwalked' ? 'not in the steps: never walked' : row?.reason));
    const record = state?.rollback;
    const notChangedBy =
      outcome === 'healthy' &&
      stable !== undefined &&
      stable !== '' &&
      (row?.state ?? 'serving') === 'serving' &&
      (record === undefined || record.revision !== stable || record.phase !== 'applied')
        ? stable
        : undefined;
    return {
      zone,
      ...(registered === undefined ? {} : { cluster: registered }),
      kind: kind.kind,
      vmcluster,
      namespace,
      walk,
      progress,
      state: row?.state ?? (cluster === undefined ? 'unknown' : 'serving'),
      since: row?.since,
      generation: readiness?.generation,
      observedGeneration: readiness?.observedGeneration,
      updateStatus: readiness?.updateStatus,
      routed: routed === undefined ? undefined : routed.has(zone),
      lease: state?.lease && { rollout: state.lease.rollout, revision: state.lease.revision },
      gate: run === undefined ? undefined : gateReading(run),
      message:
        zoneError ??
        (cluster === undefined
          ? `${kind.kind} ${namespace}/${vmcluster} does not exist${registered === undefined ? '' : ` in cluster ${registered}`}`
          : message),
      notChangedBy,
      drift: row?.drift,
      health:
        cluster === undefined ? undefined : zoneHealth(cluster, { nowSeconds: input.now.getTime() / 1000 }),
    };
  });

  return {
    rollout: rollout.metadata.name,
    namespace: rollout.metadata.namespace,
    phase: rollout.status?.phase,
    message: rollout.status?.message,
    revision: rollout.status?.currentPodHash,
    stableRevision: stable,
    step: { index: current, total: steps.length, kind: stepKind(steps[current]) ?? 'end' },
    outcome,
    zones,
    problems,
  };
}
