// Gate vmclusterReady: is the zone's object (VMCluster, VMSingle or VLCluster: zone-kinds.ts) operational at its
// current generation, with no storage pod's change deferred (vm/zone-readiness.ts)? One reading per Run/Resume;
// `failed` fails at once with the operator's reason; anything else waits.

import { defaultZoneKind, type ZoneKind, zoneObjectRef } from '../vm/zone-kinds.ts';
import { zoneReadiness } from '../vm/zone-readiness.ts';
import { explicitZoneObject, type ReadyGateConfig } from './config.ts';
import type { GateContext, GateReading } from './gate-reading.ts';
import { allowedGateNamespace, clusterKube, explicitNamespace, zoneFromSpec } from './zone-target.ts';

/** The spec document's readyTimeout is used when the zone comes from there. */
const defaultReadyTimeoutMs = 15 * 60_000;
const defaultReadyPollMs = 10_000;

export async function readVmclusterReady(
  config: ReadyGateConfig,
  context: GateContext,
): Promise<GateReading> {
  let namespace: string;
  let vmcluster: string;
  let kind: ZoneKind = defaultZoneKind;
  let timeoutMs = config.timeout ?? defaultReadyTimeoutMs;
  let where: string | undefined;
  const explicit = explicitZoneObject(config);
  if (explicit !== undefined) {
    vmcluster = explicit.name;
    kind = explicit.kind;
    namespace = explicitNamespace(context, config.namespace);
    where = config.cluster;
  } else {
    const zone = await zoneFromSpec(context, config.zone, 'vmcluster');
    vmcluster = zone.vmcluster;
    where = zone.cluster;
    kind = zone.kind;
    namespace = config.namespace ?? zone.namespace;
    timeoutMs = config.timeout ?? zone.readyTimeoutMs;
  }
  allowedGateNamespace(context, namespace);
  const kube = await clusterKube(context, where, namespace, `${kind.kind} ${vmcluster}`);
  const cluster = await kube.get(zoneObjectRef(kind, namespace, vmcluster));
  const readiness = await zoneReadiness(kube, cluster, config.generation);
  const figures = {
    gate: config.gate,
    zone: config.zone ?? null,
    ...(where === undefined ? {} : { cluster: where }),
    namespace,
    vmcluster,
    kind: kind.kind,
    ready: readiness.state === 'ready',
    failed: readiness.state === 'failed',
    state: readiness.state,
    updateStatus: readiness.updateStatus ?? null,
    generation: readiness.generation ?? null,
    observedGeneration: readiness.observedGeneration ?? null,
    reason: readiness.reason ?? null,
    deferredPods: readiness.deferredPods.map((p) => p.pod),
  };
  const verdict = readiness.state === 'ready' ? 'pass' : readiness.state === 'failed' ? 'fail' : 'wait';
  return {
    verdict,
    message: readiness.message,
    figures,
    timeoutMs,
    pollMs: config.pollInterval ?? defaultReadyPollMs,
  };
}
