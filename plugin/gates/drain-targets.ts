// Which agents and queues the vmagentQueueDrained gate looks at: the VMAgents named in the config or the zone's
// spec document (or pods named only by a selector), and for each the 1-based position of the zone's queue in
// spec.remoteWrite. The spec's URL at that position is the queue's identity; it is kept in memory only (it may
// hold credentials) and the list is stored as a digest, to notice an edit between readings.

import { createHash } from 'node:crypto';
import { type ClusterRegistration, ClusterRegistryError } from '../kube/cluster-registry.ts';
import type { KubeObject, KubeObjects } from '../kube/objects.ts';
import { equalitySelector } from '../kube/selectors.ts';
import { explicitZoneQueue, remoteWriteUrls, zoneQueueOf } from '../vm/vmagent.ts';
import {
  expectedWriterPods,
  type WriterKind,
  writerKinds,
  writerPodLabels,
  writerRef,
} from '../vm/writer-kinds.ts';
import { defaultZoneKind, type ZoneKind } from '../vm/zone-kinds.ts';
import { zoneWriters } from '../zones/spec.ts';
import { type DrainGateConfig, explicitZoneObject, GateConfigError } from './config.ts';
import type { GateContext } from './gate-reading.ts';
import { GateSetupError } from './owner-spec.ts';
import {
  allowedGateNamespace,
  clusterKube,
  explicitNamespace,
  type SpecZone,
  zoneFromSpec,
} from './zone-target.ts';

export interface AgentTarget {
  /** Agent name, or `pods(<selector>)` for pods named only by a selector. */
  readonly key: string;
  /** What kind of agent it is: the zone kind's writer (a VMAgent, or a VLAgent for a VLCluster zone). */
  readonly writer: WriterKind;
  readonly vmagent: KubeObject | undefined;
  readonly selector: string;
  readonly expectedPods: number | undefined;
  readonly index: number;
  /** The zone's URL as the VMAgent spec lists it (may hold credentials: never shown or stored). */
  readonly specUrl: string | undefined;
  /** Digest of the whole spec.remoteWrite list, to notice an edit without storing URLs. */
  readonly listDigest: string | null;
}

function digest(urls: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(urls)).digest('hex').slice(0, 16);
}

export interface Targets {
  namespace: string;
  vmcluster: string | undefined;
  /** The zone's kind: its object, and the Service the writer's queue for it sends to. */
  kind: ZoneKind;
  agents: AgentTarget[];
}

/** Whether the gate takes its zone object or VMAgents from the Rollout's spec document. */
export function drainNeedsSpec(config: DrainGateConfig): boolean {
  const explicitAgents = config.vmagents ?? (config.vmagent === undefined ? undefined : [config.vmagent]);
  return (
    (explicitZoneObject(config) === undefined && config.zone !== undefined) ||
    (explicitAgents === undefined && config.pods?.selector === undefined)
  );
}

/** Where the gate reads: the zone's object in its cluster, the VMAgents and their pods in theirs. */
export interface DrainPlaces {
  zone: KubeObjects;
  agents: KubeObjects;
  /** The VMAgents' registered cluster; undefined = the controller's own (pods scraped at their IPs). */
  agentsCluster: ClusterRegistration | undefined;
}

async function registrationOf(
  context: GateContext,
  cluster: string | undefined,
): Promise<ClusterRegistration | undefined> {
  try {
    return await context.clusters.registration(cluster);
  } catch (error) {
    if (error instanceof ClusterRegistryError) throw new GateSetupError(error.message);
    throw error;
  }
}

/** The places of what the config names itself (its `cluster`, else the controller's own), and of what comes from
 *  the spec document (zones.<zone>.cluster, vmagent.cluster). */
export async function drainPlaces(config: DrainGateConfig, context: GateContext): Promise<DrainPlaces> {
  const explicitZone = explicitZoneObject(config);
  const agentsNamed =
    config.vmagent !== undefined || config.vmagents !== undefined || config.pods?.selector !== undefined;
  if (!drainNeedsSpec(config)) {
    const namespace = explicitNamespace(context, config.namespace);
    const kube = await clusterKube(context, config.cluster, namespace, 'the objects of the gate config');
    return { zone: kube, agents: kube, agentsCluster: await registrationOf(context, config.cluster) };
  }
  const zone = await zoneFromSpec(context, config.zone, 'the vmcluster and vmagents');
  const namespace = config.namespace ?? zone.namespace;
  const writers = zoneWriters(zone.spec, zone.kind);
  const agentsName = agentsNamed ? config.cluster : writers.cluster;
  const agents = await clusterKube(context, agentsName, namespace, `the ${writers.writer.kind}s`);
  return {
    zone:
      explicitZone === undefined
        ? await clusterKube(context, zone.cluster, namespace, `${zone.kind.kind} ${zone.vmcluster}`)
        : await clusterKube(
            context,
            config.cluster,
            namespace,
            `${explicitZone.kind.kind} ${explicitZone.name}`,
          ),
    agents,
    agentsCluster: await registrationOf(context, agentsName),
  };
}

export async function resolveTargets(config: DrainGateConfig, context: GateContext): Promise<Targets> {
  const selector = config.pods?.selector;
  const explicitAgents = config.vmagents ?? (config.vmagent === undefined ? undefined : [config.vmagent]);
  const explicitQueue = config.remoteWriteUrl !== undefined || config.remoteWriteIndex !== undefined;
  const explicit = explicitZoneObject(config);
  const needSpec = drainNeedsSpec(config);
  let zone: SpecZone | undefined;
  if (needSpec) zone = await zoneFromSpec(context, config.zone, 'the vmcluster and vmagents');
  const namespace = allowedGateNamespace(
    context,
    config.namespace ?? zone?.namespace ?? explicitNamespace(context, undefined),
  );
  const vmcluster = explicit?.name ?? zone?.vmcluster;
  const kind = explicit?.kind ?? zone?.kind ?? defaultZoneKind;
  const writer = writerKinds[kind.writer];
  const agentNames =
    explicitAgents ??
    (selector !== undefined || zone === undefined ? [] : zoneWriters(zone.spec, zone.kind).names);
  if (selector !== undefined && agentNames.length > 1) {
    throw new GateConfigError([
      'pods.selector: names the pods of one agent; with it, set at most one vmagent',
    ]);
  }
  if (vmcluster === undefined && !explicitQueue) {
    throw new GateConfigError([
      'zone: required to tell which remote-write queue feeds the zone (or set vmcluster, remoteWriteUrl or remoteWriteIndex)',
    ]);
  }
  const agents: AgentTarget[] = [];
  for (const name of agentNames) {
    const vmagent = await context.kube.get(writerRef(writer, namespace, name));
    const urls = remoteWriteUrls(vmagent);
    const queue = explicitQueue
      ? explicitZoneQueue(vmagent, {
          ...(config.remoteWriteUrl === undefined ? {} : { remoteWriteUrl: config.remoteWriteUrl }),
          ...(config.remoteWriteIndex === undefined ? {} : { remoteWriteIndex: config.remoteWriteIndex }),
        })
      : zoneQueueOf(
          vmagent,
          vmcluster as string,
          namespace,
          kind,
          config.vminsertHosts ?? (explicit === undefined ? zone?.vminsertHosts : undefined),
        );
    agents.push({
      key: name,
      writer,
      vmagent,
      selector: selector ?? equalitySelector(writerPodLabels(writer, name)),
      expectedPods: selector === undefined ? expectedWriterPods(writer, vmagent) : undefined,
      index: queue.index,
      specUrl: queue.url,
      listDigest: digest(urls),
    });
  }
  if (agentNames.length === 0 && selector !== undefined) {
    if (config.remoteWriteIndex === undefined) {
      throw new GateConfigError([
        'remoteWriteIndex: required when the pods are named only by pods.selector (no VMAgent to read the order from)',
      ]);
    }
    agents.push({
      key: `pods(${selector})`,
      writer,
      vmagent: undefined,
      selector,
      expectedPods: undefined,
      index: config.remoteWriteIndex,
      specUrl: config.remoteWriteUrl,
      listDigest: null,
    });
  }
  if (agents.length === 0) throw new GateConfigError(['vmagent: no vmagent writes to the zone']);
  return { namespace, vmcluster, kind, agents };
}
