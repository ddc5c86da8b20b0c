// The read balancer of a set of zones, as stored in Kubernetes: an operator-managed VMUser (its targetRefs), or
// the raw config of a helm-managed vmauth in a Secret or ConfigMap. Taking a zone out records, on the same object
// and in the same guarded write, exactly what was removed; putting it back restores exactly that. Whether every
// vmauth replica serves the current routing is answered from the VMUser's status and vmauth's reload evidence.

import { KubeError, type KubeObject, type KubeObjects, type ObjectRef } from '../kube/objects.ts';
import { type LabelSelector, matchesLabelSelector } from '../kube/selectors.ts';
import { selectorFromLabels } from './pods.ts';
import { ReadRoutingError, type ZoneReadBackend } from './read-backends.ts';
import {
  removeZoneFromConfig,
  restoreZoneToConfig,
  type VmauthConfigRemoval,
  zonesRoutedByConfig,
} from './vmauth-config.ts';
import { type VmauthPods, vmauthReloadEvidence } from './vmauth-reload.ts';
import { vmApiVersion } from './vmcluster.ts';
import {
  removeZoneFromTargetRefs,
  restoreZoneToTargetRefs,
  type VMUserRemoval,
  vmauthSelectsUser,
  vmuserTakenUp,
  zonesRoutedByVMUser,
} from './vmuser.ts';

/** On the balancer object: per zone, what drainReads removed (JSON). */
export const drainedAnnotation = 'vmzones.io/drained';
/** On the balancer object: when vmzones last changed its routing (RFC 3339); reload evidence must be newer. */
export const readsChangedAnnotation = 'vmzones.io/reads-changed-at';

export type ReadBalancerRef =
  | { kind: 'VMUser'; namespace: string; name: string; vmauths?: string[] }
  | { kind: 'Secret' | 'ConfigMap'; namespace: string; name: string; key: string };

/** Everything needed to drain, restore and check a zone's reads; plain JSON so that it can be handed over. */
export interface ReadBalancerConfig {
  ref: ReadBalancerRef;
  /** The vmauth pods serving this balancer; derived from the VMAuths that select the VMUser when absent. */
  pods?: VmauthPods[];
  /** Every zone of the spec document: "the last zone that serves reads" is judged among them. */
  zones: ZoneReadBackend[];
  /** `bestEffort` accepts vmauth versions without reload evidence (the grace period is all that protects). */
  reloadEvidence: 'required' | 'bestEffort';
}

export interface DrainRecord {
  vmcluster: string;
  by: string;
  at: string;
  removed: (VMUserRemoval | VmauthConfigRemoval)[];
}

export interface ReadRouting {
  /** "VMUser vm/vmauth-read", "Secret vm/vmauth-config key config.yml". */
  describe: string;
  resourceVersion: string;
  /** Zones (names) the balancer currently routes reads to. */
  routed: string[];
  drained: Record<string, DrainRecord>;
  changedAt: Date | undefined;
}

export function describeBalancer(ref: ReadBalancerRef): string {
  const base = `${ref.kind} ${ref.namespace}/${ref.name}`;
  return ref.kind === 'VMUser' ? base : `${base} key ${ref.key}`;
}

function objectRef(ref: ReadBalancerRef): ObjectRef {
  return ref.kind === 'VMUser'
    ? { apiVersion: vmApiVersion, kind: 'VMUser', namespace: ref.namespace, name: ref.name }
    : { apiVersion: 'v1', kind: ref.kind, namespace: ref.namespace, name: ref.name };
}

function parseDrained(text: string | undefined, where: string): Record<string, DrainRecord> {
  if (text === undefined || text === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      return value as Record<string, DrainRecord>;
    }
  } catch {
    // reported below
  }
  throw new ReadRoutingError(
    `${where}: annotation ${drainedAnnotation} is not the JSON object vmzones writes`,
  );
}

function configText(obj: KubeObject, ref: ReadBalancerRef & { key: string }, where: string): string {
  const data = (obj as { data?: Record<string, string> }).data ?? {};
  const value = data[ref.key];
  if (value === undefined) throw new ReadRoutingError(`${where} does not exist in the ${ref.kind}`);
  return ref.kind === 'Secret' ? Buffer.from(value, 'base64').toString('utf8') : value;
}

function configData(ref: ReadBalancerRef & { key: string }, text: string): Record<string, string> {
  return { [ref.key]: ref.kind === 'Secret' ? Buffer.from(text, 'utf8').toString('base64') : text };
}

interface Loaded {
  object: KubeObject;
  routing: ReadRouting;
}

async function load(kube: KubeObjects, config: ReadBalancerConfig): Promise<Loaded> {
  const ref = config.ref;
  const where = describeBalancer(ref);
  const object = await kube.get(objectRef(ref));
  const routed =
    ref.kind === 'VMUser'
      ? zonesRoutedByVMUser(object.spec?.targetRefs, ref.namespace, config.zones)
      : zonesRoutedByConfig(configText(object, ref, where), config.zones, where);
  const annotations = object.metadata.annotations ?? {};
  const changed = annotations[readsChangedAnnotation];
  const changedAt = changed === undefined ? undefined : new Date(changed);
  return {
    object,
    routing: {
      describe: where,
      resourceVersion: object.metadata.resourceVersion ?? '',
      routed,
      drained: parseDrained(annotations[drainedAnnotation], where),
      changedAt: changedAt !== undefined && Number.isNaN(changedAt.getTime()) ? undefined : changedAt,
    },
  };
}

/** The current routing; a missing object is a KubeError of kind `notFound`. */
export async function readRouting(kube: KubeObjects, config: ReadBalancerConfig): Promise<ReadRouting> {
  return (await load(kube, config)).routing;
}

function zoneOf(config: ReadBalancerConfig, zone: string): ZoneReadBackend {
  const found = config.zones.find((z) => z.zone === zone);
  if (!found) throw new ReadRoutingError(`zone ${zone} is not one of the balancer's zones`);
  return found;
}

async function write(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  loaded: Loaded,
  routes: { targetRefs?: unknown; text?: string },
  drained: Record<string, DrainRecord>,
  now: Date,
): Promise<void> {
  const ref = config.ref;
  const annotations = {
    [drainedAnnotation]: Object.keys(drained).length === 0 ? null : JSON.stringify(drained),
    [readsChangedAnnotation]: now.toISOString(),
  };
  const patch: Record<string, unknown> = { metadata: { annotations } };
  if (ref.kind === 'VMUser') patch.spec = { targetRefs: routes.targetRefs };
  else patch.data = configData(ref, routes.text ?? '');
  await kube.mergePatch(objectRef(ref), patch, loaded.routing.resourceVersion);
}

/**
 * Takes `zone` out of the balancer, unless it is already out. Refuses (ReadRoutingError, nothing written) when no
 * other zone would be left serving reads. A 409 (someone else wrote meanwhile) surfaces as a KubeError `conflict`.
 * Returns whether it wrote.
 */
export async function drainZone(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  zone: string,
  by: string,
  now: Date,
): Promise<boolean> {
  const loaded = await load(kube, config);
  const { routing } = loaded;
  if (!routing.routed.includes(zone)) return false;
  const others = routing.routed.filter((z) => z !== zone);
  if (others.length === 0) {
    throw new ReadRoutingError(
      `refusing to take zone ${zone} out of ${routing.describe}: it is the last zone that serves reads there`,
    );
  }
  const backend = zoneOf(config, zone);
  const ref = config.ref;
  const previous = routing.drained[zone];
  const record = (removed: DrainRecord['removed']): DrainRecord => ({
    vmcluster: `${backend.namespace}/${backend.vmcluster}`,
    by: previous?.by ?? by,
    at: previous?.at ?? now.toISOString(),
    // Routed again although recorded as drained (e.g. re-synced by GitOps): keep what was removed first too.
    removed: [...(previous?.removed ?? []), ...removed],
  });
  if (ref.kind === 'VMUser') {
    const result = removeZoneFromTargetRefs(loaded.object.spec?.targetRefs, ref.namespace, backend);
    await write(
      kube,
      config,
      loaded,
      { targetRefs: result.targetRefs },
      { ...routing.drained, [zone]: record(result.removed) },
      now,
    );
  } else {
    const result = removeZoneFromConfig(
      configText(loaded.object, ref, routing.describe),
      backend,
      routing.describe,
    );
    await write(
      kube,
      config,
      loaded,
      { text: result.text },
      { ...routing.drained, [zone]: record(result.removed) },
      now,
    );
  }
  return true;
}

/** Puts back exactly what drainZone removed for `zone`; nothing to do when there is no record. Returns whether it wrote. */
export async function restoreZone(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  zone: string,
  now: Date,
): Promise<boolean> {
  const loaded = await load(kube, config);
  const { routing } = loaded;
  const record = routing.drained[zone];
  if (record === undefined) return false;
  const drained = { ...routing.drained };
  delete drained[zone];
  const ref = config.ref;
  if (ref.kind === 'VMUser') {
    const targetRefs = restoreZoneToTargetRefs(
      loaded.object.spec?.targetRefs,
      record.removed as VMUserRemoval[],
    );
    await write(kube, config, loaded, { targetRefs }, drained, now);
  } else {
    const text = restoreZoneToConfig(
      configText(loaded.object, ref, routing.describe),
      record.removed as VmauthConfigRemoval[],
      routing.describe,
    );
    await write(kube, config, loaded, { text }, drained, now);
  }
  return true;
}

// ---- Evidence that vmauth serves the current routing ----

const vmauthClockSlackMs = 1_000;

export interface ReadEvidence {
  /** `ready`: every replica serves it; `unproven`: no evidence exists for this vmauth and `bestEffort` accepted that. */
  state: 'ready' | 'waiting' | 'unproven';
  message: string;
  /** The latest reload among the pods (by vmauth's clock), when known. */
  reloadedAt?: Date;
}

/** The vmauth pods of the VMAuths (in the VMUser's namespace) that select the VMUser, or those the config names. */
export async function vmauthPodsFor(kube: KubeObjects, config: ReadBalancerConfig): Promise<VmauthPods[]> {
  if (config.pods !== undefined && config.pods.length > 0) return config.pods;
  const ref = config.ref;
  if (ref.kind !== 'VMUser') {
    throw new ReadRoutingError(
      `${describeBalancer(ref)}: the spec document must say which pods run vmauth (vmauth.pods)`,
    );
  }
  const vmuser = await kube.get(objectRef(ref));
  const vmauths = await kube.list(vmApiVersion, 'VMAuth', ref.namespace);
  const chosen = vmauths.filter((auth) =>
    ref.vmauths !== undefined
      ? ref.vmauths.includes(auth.metadata.name ?? '')
      : vmauthSelectsUser(auth.spec, vmuser.metadata.labels, (selector, labels) =>
          matchesLabelSelector(selector as LabelSelector, labels),
        ),
  );
  if (chosen.length === 0) {
    throw new ReadRoutingError(
      ref.vmauths !== undefined
        ? `none of the VMAuths ${ref.vmauths.join(', ')} exists in namespace ${ref.namespace}`
        : `no VMAuth in namespace ${ref.namespace} selects VMUser ${ref.name} (selectAllByDefault or userSelector); name them in vmauth.vmauths`,
    );
  }
  return chosen.map((auth) => ({
    namespace: ref.namespace,
    // The labels the operator gives the pods of VMAuth <name>.
    labelSelector: selectorFromLabels({
      'app.kubernetes.io/name': 'vmauth',
      'app.kubernetes.io/instance': auth.metadata.name ?? '',
    }),
    port: 'http',
  }));
}

/**
 * Whether every vmauth replica serves the balancer as it is now: the operator took up the VMUser (its status is
 * operational at its current generation), then each pod reports a successful reload at or after `since` (the
 * last time vmzones changed the routing).
 */
export async function readEvidence(
  kube: KubeObjects,
  config: ReadBalancerConfig,
  since: Date,
): Promise<ReadEvidence> {
  const ref = config.ref;
  if (ref.kind === 'VMUser') {
    const vmuser = await kube.get(objectRef(ref));
    const taken = vmuserTakenUp(vmuser);
    if (!taken.ready) {
      return {
        state: 'waiting',
        message: `the operator has not rendered ${describeBalancer(ref)} yet: ${taken.message}`,
      };
    }
  }
  const groups = await vmauthPodsFor(kube, config);
  // vmauth stamps a reload with its coarse clock (lib/fasttime: a value refreshed once a second, then
  // truncated to the second), which can read up to a second before the real reload time.
  const evidenceSince = new Date(since.getTime() - vmauthClockSlackMs);
  let latest: Date | undefined;
  const messages: string[] = [];
  let unsupported = false;
  for (const pods of groups) {
    const evidence = await vmauthReloadEvidence(kube, pods, evidenceSince);
    for (const pod of evidence.pods) {
      if (pod.reloadedAt !== undefined) {
        const at = new Date(pod.reloadedAt);
        if (latest === undefined || at > latest) latest = at;
      }
    }
    if (evidence.state === 'reloaded') continue;
    if (evidence.state === 'unsupported') {
      unsupported = true;
      messages.push(evidence.message);
      continue;
    }
    return { state: 'waiting', message: evidence.message };
  }
  if (unsupported) {
    if (config.reloadEvidence === 'bestEffort') {
      return {
        state: 'unproven',
        message: `${messages.join('; ')}; relying on the grace period (vmauth.reloadEvidence: bestEffort)`,
      };
    }
    return {
      state: 'waiting',
      message: `${messages.join('; ')}; upgrade vmauth, or set vmauth.reloadEvidence: bestEffort to rely on the grace period alone`,
    };
  }
  return {
    state: 'ready',
    message: `every vmauth pod reloaded its config after ${since.toISOString()}`,
    ...(latest === undefined ? {} : { reloadedAt: latest }),
  };
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeError && err.kind === 'notFound';
}
