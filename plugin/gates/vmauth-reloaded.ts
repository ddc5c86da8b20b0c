// Gate vmauthReloaded: does every vmauth replica serve the config written since `since`? The evidence rules
// live in vm/vmauth-reload.ts and the pods are those vm/vmauth-pods.ts finds for the step plugin too; this gate
// adds the time the config source was last written.

import { z } from 'zod';
import { describeRef, type KubeObject, type KubeObjects, type ObjectRef } from '../kube/objects.ts';
import { ReadRoutingError } from '../vm/read-backends.ts';
import { operatorVmauthPods, vmauthsServingUser } from '../vm/vmauth-pods.ts';
import {
  type ReloadStamp,
  reloadStampSchema,
  type VmauthPods,
  vmauthReloadEvidence,
} from '../vm/vmauth-reload.ts';
import { vmApiVersion } from '../vm/vmcluster.ts';
import { type VmauthSource, vmauthSources } from '../zones/spec.ts';
import { GateConfigError, type ReloadGateConfig } from './config.ts';
import type { GateContext, GateReading } from './gate-reading.ts';
import { GateSetupError } from './owner-spec.ts';
import { allowedGateNamespace, clusterKube, explicitNamespace } from './zone-target.ts';

const defaultReloadTimeoutMs = 5 * 60_000;
const defaultReloadPollMs = 5_000;

/** The newest managedFields time: when the object was last written, to the second. */
function lastWriteTime(object: KubeObject): Date | undefined {
  const entries = (object.metadata as { managedFields?: { time?: string }[] }).managedFields ?? [];
  const times = entries.map((entry) => Date.parse(entry.time ?? '')).filter((time) => !Number.isNaN(time));
  return times.length === 0 ? undefined : new Date(Math.max(...times));
}

interface ReloadTarget {
  namespace: string;
  /** The cluster the vmauth runs in (the spec document's vmauth.cluster; docs/multicluster.md). */
  kube: KubeObjects;
  /** One group per VMAuth, or the pods named by pods.selector. */
  groups: VmauthPods[];
  since: Date;
  sinceSource: string;
}

/** The pods to check: pods.selector, else the named VMAuth, else the VMAuths serving the spec's VMUser. */
async function vmauthGroups(
  config: ReloadGateConfig,
  context: GateContext,
  namespace: string,
  source: VmauthSource | undefined,
): Promise<VmauthPods[]> {
  const access = {
    ...(config.pods?.scheme === undefined ? {} : { scheme: config.pods.scheme }),
    ...(config.pods?.tls === undefined ? {} : { tls: config.pods.tls }),
    ...(config.pods?.auth === undefined ? {} : { auth: config.pods.auth }),
    limits: {
      ...(config.pods?.scrapeTimeout === undefined ? {} : { timeoutMs: config.pods.scrapeTimeout }),
      ...(config.pods?.maxScrapeBytes === undefined ? {} : { maxBodyBytes: config.pods.maxScrapeBytes }),
    },
  };
  const reloader =
    config.reloader === undefined
      ? undefined
      : { port: config.reloader.port ?? 'reloader-http', configSecret: config.reloader.configSecret };
  const withConfig = (pods: VmauthPods): VmauthPods => ({
    ...pods,
    ...access,
    port: config.pods?.port ?? pods.port,
    ...(reloader === undefined ? {} : { reloader }),
  });
  if (config.pods?.selector !== undefined) {
    return [withConfig({ namespace, labelSelector: config.pods.selector, port: 'http' })];
  }
  if (config.vmauth !== undefined) return [withConfig(operatorVmauthPods(namespace, config.vmauth))];
  if (source?.vmuser === undefined) {
    throw new GateConfigError([
      'pods.selector: required for a vmauth whose config is not a VMUser (a helm-managed vmauth); or set vmauth',
    ]);
  }
  try {
    const names = await vmauthsServingUser(context.kube, namespace, source.vmuser, source.vmauths);
    return names.map((name) => withConfig(operatorVmauthPods(namespace, name)));
  } catch (error) {
    if (error instanceof ReadRoutingError) throw new GateSetupError(error.message);
    throw error;
  }
}

async function resolveTarget(config: ReloadGateConfig, context: GateContext): Promise<ReloadTarget> {
  const needSpec =
    config.since === undefined || (config.pods?.selector === undefined && config.vmauth === undefined);
  const owner = needSpec ? await context.ownerSpec() : undefined;
  const namespace = allowedGateNamespace(
    context,
    config.namespace ?? owner?.spec.namespace ?? owner?.namespace ?? explicitNamespace(context, undefined),
  );
  const sources = owner === undefined ? [] : vmauthSources(owner.spec);
  if (sources.length > 1) {
    // Which one would be a guess: the step plugin itself proves each balancer's reload (docs/multicluster.md).
    throw new GateConfigError([
      `the Rollout's spec document names ${sources.length} read balancers (vmauth is a list); this gate checks one vmauth: set pods.selector or vmauth, and since`,
    ]);
  }
  const source = sources[0];
  // The pods the config names are in its cluster; the spec's balancer (and its last write) in the spec's.
  const podsNamed = config.vmauth !== undefined || config.pods?.selector !== undefined;
  const sourceKube = await clusterKube(context, source?.cluster, namespace, 'the vmauth');
  const kube = podsNamed ? await clusterKube(context, config.cluster, namespace, 'the vmauth') : sourceKube;
  const groups = await vmauthGroups(config, { ...context, kube }, namespace, source);

  if (config.since !== undefined) {
    return { namespace, kube, groups, since: new Date(config.since), sinceSource: 'the gate config' };
  }
  let ref: ObjectRef;
  if (source?.vmuser !== undefined) {
    ref = { apiVersion: vmApiVersion, kind: 'VMUser', namespace, name: source.vmuser };
  } else if (source?.secret !== undefined) {
    ref = { apiVersion: 'v1', kind: 'Secret', namespace, name: source.secret.name };
  } else if (source?.configMap !== undefined) {
    ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: source.configMap.name };
  } else {
    throw new GateConfigError(['since: required (the Rollout spec names no vmauth config source)']);
  }
  const since = lastWriteTime(await sourceKube.get(ref));
  if (since === undefined) {
    throw new GateSetupError(`${describeRef(ref)} has no managedFields times; set since in the gate config`);
  }
  return { namespace, kube, groups, since, sinceSource: `the last write of ${describeRef(ref)}` };
}

/**
 * Kept in Measurement.Metadata between readings: the reload stamps seen by a reading taken at or after `since`.
 * A later stamp of the same process proves a load after that reading, so after `since` (vm/vmauth-reload.ts).
 */
export const reloadGateStateSchema = z.object({
  v: z.literal(1),
  since: z.string(),
  pods: z.record(z.string(), reloadStampSchema),
});
export type ReloadGateState = z.infer<typeof reloadGateStateSchema>;

export async function readVmauthReloaded(
  config: ReloadGateConfig,
  context: GateContext,
  previous: ReloadGateState | undefined,
): Promise<GateReading> {
  const target = await resolveTarget(config, context);
  const since = target.since.toISOString();
  const seenBefore = previous?.since === since ? previous.pods : {};
  const evidence = await vmauthReloadEvidence(target.kube, target.groups, target.since, {
    v: 1,
    at: since,
    pods: seenBefore,
  });
  const seen: Record<string, ReloadStamp> = { ...seenBefore };
  if (context.now >= target.since.getTime()) {
    for (const pod of evidence.pods) {
      // A pod first seen now, or restarted since, gets this reading as its point of comparison.
      const before = seen[pod.pod];
      if (pod.seen !== undefined && (before === undefined || before.start !== pod.seen.start))
        seen[pod.pod] = pod.seen;
    }
  }
  const state: ReloadGateState = { v: 1, since, pods: seen };
  const figures = {
    gate: config.gate,
    namespace: target.namespace,
    selector: target.groups.map((group) => group.labelSelector).join('; '),
    since: target.since.toISOString(),
    sinceSource: target.sinceSource,
    reloaded: evidence.state === 'reloaded',
    state: evidence.state,
    podCount: evidence.pods.length,
    pods: evidence.pods,
  };
  const verdict = evidence.state === 'reloaded' ? 'pass' : evidence.state === 'unsupported' ? 'fail' : 'wait';
  return {
    verdict,
    message: evidence.message,
    figures,
    state,
    timeoutMs: config.timeout ?? defaultReloadTimeoutMs,
    pollMs: config.pollInterval ?? defaultReloadPollMs,
  };
}
