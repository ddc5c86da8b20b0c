// The read routing of a set of zones, as stored in Kubernetes: an operator-managed VMUser (its targetRefs), or
// the raw config of a helm-managed vmauth in a Secret or ConfigMap. Taking a zone out records, on the same object
// and in the same guarded write, exactly what was removed; putting it back restores exactly that. Each write also
// records when it happened and the vmauth reload stamps seen just before it, which read-evidence.ts needs.
//
// The record of what was removed holds config lines; in a Secret they may carry credentials, so there it is kept
// in the Secret's data (key `vmzones-drained.json`, beside the config key), never in an annotation.

import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../goplugin/index.ts';
import { KubeError, type KubeObject, type KubeObjects, namespacedName } from '../kube/objects.ts';
import {
  balancerObjectRef,
  describeBalancer,
  type ReadBalancerConfig,
  type ReadBalancerRef,
  ReadRoutingError,
  type ZoneReadBackend,
  zoneObjectKey,
} from './read-backends.ts';
import {
  removeZoneFromConfig,
  restoreZoneToConfig,
  type VmauthConfigRemoval,
  vmauthConfigRemovalSchema,
  zonesRoutedByConfig,
} from './vmauth-config.ts';
import { vmauthPodsOfBalancer } from './vmauth-pods.ts';
import {
  type ReloadBaseline,
  type ReloadStamp,
  reloadBaselineSchema,
  reloadStampLagMs,
  reloadStampSchema,
  vmauthReloadStamps,
} from './vmauth-reload.ts';
import {
  removeZoneFromTargetRefs,
  restoreZoneToTargetRefs,
  type VMUserRemoval,
  vmuserRemovalSchema,
  zonesRoutedByVMUser,
} from './vmuser.ts';

/** On the balancer object: per zone, what drainReads removed (JSON). In a Secret: a data key instead. */
const drainedAnnotation = 'vmzones.io/drained';
export const drainedSecretKey = 'vmzones-drained.json';
/** On the balancer object: when vmzones last changed its routing (RFC 3339); reload evidence must be newer. */
const readsChangedAnnotation = 'vmzones.io/reads-changed-at';
/** On the balancer object: the vmauth reload stamps seen just before that change (JSON, ReloadBaseline). */
export const reloadBaselineAnnotation = 'vmzones.io/reload-baseline';

/** The zone disruption budget (vm/read-safety.ts). Recorded with each drain, so that every Rollout sharing the
 *  balancer is held to the strictest budget of those with a zone out through it. */
export const disruptionBudgetSchema = z.object({
  maxZonesOut: z.number().int().min(1),
  minZonesServing: z.number().int().min(1),
});
export type DisruptionBudget = z.infer<typeof disruptionBudgetSchema>;

/** Who drained: the Rollout whose lease on the zone object the drain was made under. */
const drainHolderSchema = z.object({ rollout: z.string(), uid: z.string() });

const drainRecordSchema = z.object({
  /** The zone object, `namespace/name` (with `kind` and `cluster` below, its identity: zoneObjectKey). */
  vmcluster: z.string(),
  /** The zone's name in the drainer's spec document: a label only. Absent in records before identity keys. */
  zone: z.string().optional(),
  kind: z.string().optional(),
  cluster: z.string().optional(),
  /** The zone object's uid when it was drained: a record is restored only for that very object. */
  uid: z.string().optional(),
  holder: drainHolderSchema.optional(),
  /** The drainer's budget (absent: the default one-zone budget holds for this record). */
  budget: disruptionBudgetSchema.optional(),
  by: z.string(),
  at: z.string(),
  removed: z.array(z.union([vmuserRemovalSchema, vmauthConfigRemovalSchema])),
  /** What vmauth served before the drain: a digest of the routing content and the pods' reload stamps. */
  servedBefore: z.object({ content: z.string(), pods: z.record(z.string(), reloadStampSchema) }).optional(),
});
export type DrainRecord = z.infer<typeof drainRecordSchema>;

const drainedSchema = z.record(z.string(), drainRecordSchema);

/** Who drains, recorded with the drain: the words, the zone object's uid, the lease holder, its budget. */
export interface DrainActor {
  by: string;
  uid?: string | undefined;
  holder?: { rollout: string; uid: string } | undefined;
  budget?: DisruptionBudget | undefined;
}

/** The key of the drain record of the zone object `zone` names in `config` (undefined: not one of its zones). */
export function drainKeyOf(config: ReadBalancerConfig, zone: string): string | undefined {
  const backend = config.zones.find((z) => z.zone === zone);
  return backend === undefined ? undefined : zoneObjectKey(backend);
}

/** vmzones' record of having taken the object `config` calls `zone` out of this balancer, if any. */
export function drainRecordFor(
  routing: Pick<ReadRouting, 'drained'>,
  config: ReadBalancerConfig,
  zone: string,
): DrainRecord | undefined {
  const key = drainKeyOf(config, zone);
  return key === undefined ? undefined : routing.drained[key];
}

/**
 * Records written before identity keys are keyed by the zone's name and carry `vmcluster` (namespace/name): each is
 * read as the record of that object (kind and cluster from the balancer config's backend of that name when it is
 * the same object, else a VMCluster of the controller's cluster). Written back in the new form by the next write.
 */
function byObject(
  drained: Record<string, DrainRecord>,
  config: ReadBalancerConfig,
): Record<string, DrainRecord> {
  const result: Record<string, DrainRecord> = {};
  for (const [key, record] of Object.entries(drained)) {
    if (key.includes('/')) {
      result[key] = record;
      continue;
    }
    const [namespace = '', name = ''] = record.vmcluster.split('/');
    const backend = config.zones.find(
      (z) => z.zone === key && z.namespace === namespace && z.vmcluster === name,
    );
    const object = {
      namespace,
      vmcluster: name,
      ...(backend?.kind === undefined ? {} : { kind: backend.kind }),
      ...(backend?.cluster === undefined ? {} : { cluster: backend.cluster }),
    };
    result[zoneObjectKey(object)] = { ...object, ...record, zone: record.zone ?? key };
  }
  return result;
}

export interface ReadRouting {
  /** "VMUser vm/vmauth-read", "Secret vm/vmauth-config key config.yml". */
  describe: string;
  resourceVersion: string;
  /** Zones (names of the config's zones) the balancer currently routes reads to. */
  routed: string[];
  /** vmzones' drain records, keyed by the zone object's identity (zoneObjectKey), whoever's spec names it. */
  drained: Record<string, DrainRecord>;
  changedAt: Date | undefined;
  /** The reload stamps seen just before the change at `changedAt`, when recorded. */
  baseline: ReloadBaseline | undefined;
}

function parseJson<T>(
  text: string | undefined,
  schema: z.ZodType<T>,
  what: string,
  where: string,
): T | undefined {
  if (text === undefined || text === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ReadRoutingError(`${where}: ${what} is not JSON`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new ReadRoutingError(
      `${where}: ${what} is not what this vmzones version writes (${parsed.error.issues[0]?.message ?? 'invalid'} at ${parsed.error.issues[0]?.path.join('.') ?? ''})`,
    );
  }
  return parsed.data;
}

function objectData(obj: KubeObject): Record<string, string> {
  const data = obj.data;
  return typeof data === 'object' && data !== null ? (data as Record<string, string>) : {};
}

function dataText(obj: KubeObject, kind: 'Secret' | 'ConfigMap', key: string): string | undefined {
  const value = objectData(obj)[key];
  if (value === undefined) return undefined;
  return kind === 'Secret' ? Buffer.from(value, 'base64').toString('utf8') : value;
}

function dataValue(kind: 'Secret' | 'ConfigMap', text: string | null): string | null {
  if (text === null) return null;
  return kind === 'Secret' ? Buffer.from(text, 'utf8').toString('base64') : text;
}

function configText(
  obj: KubeObject,
  ref: { kind: 'Secret' | 'ConfigMap'; key: string },
  where: string,
): string {
  const value = dataText(obj, ref.kind, ref.key);
  if (value === undefined) throw new ReadRoutingError(`${where} does not exist in the ${ref.kind}`);
  return value;
}

function storedDrained(
  object: KubeObject,
  config: ReadBalancerConfig,
  where: string,
): Record<string, DrainRecord> {
  const ref = config.ref;
  const annotation = object.metadata.annotations?.[drainedAnnotation];
  // A Secret keeps the record in its data; an annotation there is from a vmzones version before that.
  const text =
    ref.kind === 'Secret' ? (dataText(object, 'Secret', drainedSecretKey) ?? annotation) : annotation;
  const what =
    ref.kind === 'Secret' ? `the drain record (${drainedSecretKey})` : `annotation ${drainedAnnotation}`;
  return byObject(parseJson(text, drainedSchema, what, where) ?? {}, config);
}

interface Loaded {
  object: KubeObject;
  routing: ReadRouting;
}

/** The balancer's object and its routing, from one read. */
export async function readBalancer(kube: KubeObjects, config: ReadBalancerConfig): Promise<Loaded> {
  const object = await kube.get(balancerObjectRef(config.ref));
  return { object, routing: routingOfObject(object, config) };
}

/** The routing the balancer's object says, as read (readRouting reads it first). */
export function routingOfObject(object: KubeObject, config: ReadBalancerConfig): ReadRouting {
  const ref = config.ref;
  const where = describeBalancer(ref);
  const routed =
    ref.kind === 'VMUser'
      ? zonesRoutedByVMUser(object.spec?.targetRefs, ref.namespace, config.zones)
      : zonesRoutedByConfig(configText(object, ref, where), config.zones, where);
  const annotations = object.metadata.annotations ?? {};
  const changed = annotations[readsChangedAnnotation];
  const changedAt = changed === undefined ? undefined : new Date(changed);
  return {
    describe: where,
    resourceVersion: object.metadata.resourceVersion ?? '',
    routed,
    drained: storedDrained(object, config, where),
    changedAt: changedAt !== undefined && Number.isNaN(changedAt.getTime()) ? undefined : changedAt,
    baseline: parseJson(
      annotations[reloadBaselineAnnotation],
      reloadBaselineSchema,
      `annotation ${reloadBaselineAnnotation}`,
      where,
    ),
  };
}

/** The current routing; a missing object is a KubeError of kind `notFound`. */
export async function readRouting(kube: KubeObjects, config: ReadBalancerConfig): Promise<ReadRouting> {
  return (await readBalancer(kube, config)).routing;
}

function zoneOf(config: ReadBalancerConfig, zone: string): ZoneReadBackend {
  const found = config.zones.find((z) => z.zone === zone);
  if (!found) throw new ReadRoutingError(`zone ${zone} is not one of the balancer's zones`);
  return found;
}

/** What vmauth is asked to serve, as a short digest: equal digests, equal routing content. */
function contentDigest(routes: { targetRefs?: unknown; text?: string }): string {
  const content = routes.text ?? JSON.stringify(routes.targetRefs ?? null);
  return createHash('sha256').update(content).digest('hex').slice(0, 16);
}

function currentRoutes(loaded: Loaded, ref: ReadBalancerRef): { targetRefs?: unknown; text?: string } {
  return ref.kind === 'VMUser'
    ? { targetRefs: loaded.object.spec?.targetRefs }
    : { text: configText(loaded.object, ref, loaded.routing.describe) };
}

/**
 * The reload stamps of the vmauth pods now, and the time to write at: no earlier than 2 s after the newest stamp,
 * so that a load of this write cannot carry the same stamp (waits at most that long, on `clock`).
 */
async function stampsBeforeWrite(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  clock: Clock,
): Promise<{ stamps: Record<string, ReloadStamp>; at: Date }> {
  const stamps = await vmauthReloadStamps(kube, await vmauthPodsOfBalancer(kube, config));
  const newest = Math.max(0, ...Object.values(stamps).map((seen) => seen.stamp));
  const now = clock.now();
  const waitMs = Math.min(reloadStampLagMs, newest * 1000 + reloadStampLagMs - now.getTime());
  if (waitMs <= 0) return { stamps, at: now };
  await clock.sleep(waitMs);
  return { stamps, at: new Date(now.getTime() + waitMs) };
}

async function write(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  loaded: Loaded,
  routes: { targetRefs?: unknown; text?: string },
  drained: Record<string, DrainRecord>,
  baseline: ReloadBaseline,
): Promise<void> {
  const ref = config.ref;
  const record = Object.keys(drained).length === 0 ? null : JSON.stringify(drained);
  const annotations: Record<string, string | null> = {
    [readsChangedAnnotation]: baseline.at,
    [reloadBaselineAnnotation]: JSON.stringify(baseline),
    [drainedAnnotation]: ref.kind === 'Secret' ? null : record,
  };
  const patch: Record<string, unknown> = { metadata: { annotations } };
  if (ref.kind === 'VMUser') patch.spec = { targetRefs: routes.targetRefs };
  else {
    patch.data = {
      [ref.key]: dataValue(ref.kind, routes.text ?? ''),
      ...(ref.kind === 'Secret' ? { [drainedSecretKey]: dataValue('Secret', record) } : {}),
    };
  }
  await kube.mergePatch(balancerObjectRef(ref), patch, loaded.routing.resourceVersion);
}

/**
 * Takes the object `zone` names in `config` out of the balancer, unless it is already out. Refuses
 * (ReadRoutingError, nothing written) when no other zone would be left serving reads. A 409 (someone else wrote
 * meanwhile) surfaces as a KubeError `conflict`. `checkedVersion`: the resourceVersion the caller decided on (the
 * disruption budget, read-layer.ts drainLayer); the write is guarded by it, so a balancer changed since is a
 * conflict too. The record is keyed by the zone object's identity and names it (uid, lease holder, budget).
 * Returns whether it wrote.
 */
export async function drainZone(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  zone: string,
  actor: string | DrainActor,
  clock: Clock,
  checkedVersion?: string,
): Promise<boolean> {
  const who: DrainActor = typeof actor === 'string' ? { by: actor } : actor;
  const loaded = await readBalancer(kube, config);
  const { routing } = loaded;
  if (checkedVersion !== undefined && checkedVersion !== routing.resourceVersion) {
    throw new KubeError(
      'conflict',
      `${routing.describe} changed after the disruption budget was checked on it (resourceVersion ${checkedVersion}, now ${routing.resourceVersion}); checking again`,
      409,
    );
  }
  if (!routing.routed.includes(zone)) return false;
  const others = routing.routed.filter((z) => z !== zone);
  if (others.length === 0) {
    throw new ReadRoutingError(
      `refusing to take zone ${zone} out of ${routing.describe}: it is the last zone that serves reads there`,
    );
  }
  const backend = zoneOf(config, zone);
  const key = zoneObjectKey(backend);
  const ref = config.ref;
  const before = currentRoutes(loaded, ref);
  const { stamps, at } = await stampsBeforeWrite(kube, config, clock);
  const previous = routing.drained[key];
  if (previous?.uid !== undefined && who.uid !== undefined && previous.uid !== who.uid) {
    throw new ReadRoutingError(
      `${routing.describe}: the drain record of ${describeRecordObject(previous)} is of the object with uid ${previous.uid}, not of the one there now (uid ${who.uid}); put back what it removed by hand (it is in the record), then remove the record`,
    );
  }
  const record = (removed: DrainRecord['removed']): DrainRecord => ({
    vmcluster: namespacedName({ namespace: backend.namespace, name: backend.vmcluster }),
    zone,
    ...(backend.kind === undefined ? {} : { kind: backend.kind }),
    ...(backend.cluster === undefined ? {} : { cluster: backend.cluster }),
    ...(who.uid === undefined ? {} : { uid: who.uid }),
    ...((previous?.holder ?? who.holder) === undefined ? {} : { holder: previous?.holder ?? who.holder }),
    ...((previous?.budget ?? who.budget) === undefined ? {} : { budget: previous?.budget ?? who.budget }),
    by: previous?.by ?? who.by,
    at: previous?.at ?? at.toISOString(),
    // Routed again although recorded as drained (e.g. re-synced by GitOps): keep what was removed first too.
    removed: [...(previous?.removed ?? []), ...removed],
    servedBefore: previous?.servedBefore ?? { content: contentDigest(before), pods: stamps },
  });
  let routes: { targetRefs?: unknown; text?: string };
  let removed: DrainRecord['removed'];
  if (ref.kind === 'VMUser') {
    const result = removeZoneFromTargetRefs(before.targetRefs, ref.namespace, backend);
    routes = { targetRefs: result.targetRefs };
    removed = result.removed;
  } else {
    const result = removeZoneFromConfig(before.text ?? '', backend, routing.describe);
    routes = { text: result.text };
    removed = result.removed;
  }
  const baseline: ReloadBaseline = { v: 1, at: at.toISOString(), pods: stamps };
  await write(kube, config, loaded, routes, { ...routing.drained, [key]: record(removed) }, baseline);
  return true;
}

/** A drain record of another object of the zone's name (another uid): never restored for this one. */
export class DrainRecordMismatchError extends ReadRoutingError {
  constructor(message: string) {
    super(message);
    this.name = 'DrainRecordMismatchError';
  }
}

/** "VMCluster vm/vm-zone-a (zone zone-a)": the object a drain record names, in words. */
export function describeRecordObject(record: DrainRecord): string {
  return `${record.kind ?? 'VMCluster'} ${record.vmcluster}${record.cluster === undefined ? '' : ` in cluster ${record.cluster}`}${record.zone === undefined ? '' : ` (zone ${record.zone})`}`;
}

function isVMUserRemoval(removal: DrainRecord['removed'][number]): removal is VMUserRemoval {
  return 'op' in removal;
}

function isConfigRemoval(removal: DrainRecord['removed'][number]): removal is VmauthConfigRemoval {
  return !('op' in removal);
}

/**
 * Puts back exactly what drainZone removed for the object `zone` names in `config`; nothing to do when there is no
 * record of that object. `uid`: the zone object's uid as the caller read it (under the lease it holds): a record of
 * another object of that name (deleted and created again) is refused, never restored. Returns whether it wrote.
 */
export async function restoreZone(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  zone: string,
  clock: Clock,
  uid?: string,
): Promise<boolean> {
  const loaded = await readBalancer(kube, config);
  const { routing } = loaded;
  const key = drainKeyOf(config, zone);
  const record = key === undefined ? undefined : routing.drained[key];
  if (key === undefined || record === undefined) return false;
  if (record.uid !== undefined && uid !== undefined && record.uid !== uid) {
    throw new DrainRecordMismatchError(
      `${routing.describe}: the drain record of ${describeRecordObject(record)} is of the object with uid ${record.uid}, not of the one there now (uid ${uid}); it is not restored: put back what it removed by hand (it is in the record), then remove the record`,
    );
  }
  const drained = { ...routing.drained };
  delete drained[key];
  const ref = config.ref;
  const where = routing.describe;
  const routes =
    ref.kind === 'VMUser'
      ? {
          targetRefs: restoreZoneToTargetRefs(
            loaded.object.spec?.targetRefs,
            record.removed.filter(isVMUserRemoval),
          ),
        }
      : {
          text: restoreZoneToConfig(
            configText(loaded.object, ref, where),
            record.removed.filter(isConfigRemoval),
            where,
          ),
        };
  if (
    record.removed.length !==
    record.removed.filter(ref.kind === 'VMUser' ? isVMUserRemoval : isConfigRemoval).length
  ) {
    throw new ReadRoutingError(`${where}: the drain record of zone ${zone} does not fit a ${ref.kind}`);
  }
  const { stamps, at } = await stampsBeforeWrite(kube, config, clock);
  const servedBefore = record.servedBefore;
  const backToBefore = servedBefore !== undefined && servedBefore.content === contentDigest(routes);
  const baseline: ReloadBaseline = {
    v: 1,
    at: at.toISOString(),
    pods: stamps,
    ...(backToBefore ? { unchanged: servedBefore.pods } : {}),
  };
  await write(kube, config, loaded, routes, drained, baseline);
  return true;
}
