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

const drainRecordSchema = z.object({
  vmcluster: z.string(),
  by: z.string(),
  at: z.string(),
  removed: z.array(z.union([vmuserRemovalSchema, vmauthConfigRemovalSchema])),
  /** What vmauth served before the drain: a digest of the routing content and the pods' reload stamps. */
  servedBefore: z.object({ content: z.string(), pods: z.record(z.string(), reloadStampSchema) }).optional(),
});
export type DrainRecord = z.infer<typeof drainRecordSchema>;

const drainedSchema = z.record(z.string(), drainRecordSchema);

export interface ReadRouting {
  /** "VMUser vm/vmauth-read", "Secret vm/vmauth-config key config.yml". */
  describe: string;
  resourceVersion: string;
  /** Zones (names) the balancer currently routes reads to. */
  routed: string[];
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

function storedDrained(object: KubeObject, ref: ReadBalancerRef, where: string): Record<string, DrainRecord> {
  const annotation = object.metadata.annotations?.[drainedAnnotation];
  // A Secret keeps the record in its data; an annotation there is from a vmzones version before that.
  const text =
    ref.kind === 'Secret' ? (dataText(object, 'Secret', drainedSecretKey) ?? annotation) : annotation;
  const what =
    ref.kind === 'Secret' ? `the drain record (${drainedSecretKey})` : `annotation ${drainedAnnotation}`;
  return parseJson(text, drainedSchema, what, where) ?? {};
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
    drained: storedDrained(object, ref, where),
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
 * Takes `zone` out of the balancer, unless it is already out. Refuses (ReadRoutingError, nothing written) when no
 * other zone would be left serving reads. A 409 (someone else wrote meanwhile) surfaces as a KubeError `conflict`.
 * `checkedVersion`: the resourceVersion the caller decided on (the disruption budget, read-layer.ts drainLayer);
 * the write is guarded by it, so a balancer changed since is a conflict too. Returns whether it wrote.
 */
export async function drainZone(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  zone: string,
  by: string,
  clock: Clock,
  checkedVersion?: string,
): Promise<boolean> {
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
  const ref = config.ref;
  const before = currentRoutes(loaded, ref);
  const { stamps, at } = await stampsBeforeWrite(kube, config, clock);
  const previous = routing.drained[zone];
  const record = (removed: DrainRecord['removed']): DrainRecord => ({
    vmcluster: namespacedName({ namespace: backend.namespace, name: backend.vmcluster }),
    by: previous?.by ?? by,
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
  await write(kube, config, loaded, routes, { ...routing.drained, [zone]: record(removed) }, baseline);
  return true;
}

function isVMUserRemoval(removal: DrainRecord['removed'][number]): removal is VMUserRemoval {
  return 'op' in removal;
}

function isConfigRemoval(removal: DrainRecord['removed'][number]): removal is VmauthConfigRemoval {
  return !('op' in removal);
}

/** Puts back exactly what drainZone removed for `zone`; nothing to do when there is no record. Returns whether it wrote. */
export async function restoreZone(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  zone: string,
  clock: Clock,
): Promise<boolean> {
  const loaded = await readBalancer(kube, config);
  const { routing } = loaded;
  const record = routing.drained[zone];
  if (record === undefined) return false;
  const drained = { ...routing.drained };
  delete drained[zone];
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
