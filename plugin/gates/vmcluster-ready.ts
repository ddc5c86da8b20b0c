// Gate vmclusterReady: is the zone's VMCluster operational at its current generation? One reading of the
// VMCluster per Run/Resume; `failed` fails at once with the operator's reason; anything else waits.

import { vmclusterReadiness, vmclusterRef } from '../vm/vmcluster.ts';
import type { ReadyGateConfig } from './config.ts';
import type { GateContext, GateReading } from './reading.ts';
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
  let timeoutMs = config.timeout ?? defaultReadyTimeoutMs;
  let where: string | undefined;
  if (config.vmcluster !== undefined) {
    vmcluster = config.vmcluster;
    namespace = explicitNamespace(context, config.namespace);
  } else {
    const zone = await zoneFromSpec(context, config.zone, 'vmcluster');
    vmcluster = zone.vmcluster;
    where = zone.cluster;
    namespace = config.namespace ?? zone.namespace;
    timeoutMs = config.timeout ?? zone.readyTimeoutMs;
  }
  allowedGateNamespace(context, namespace);
  const kube = await clusterKube(context, where, namespace, `VMCluster ${vmcluster}`);
  const cluster = await kube.get(vmclusterRef(namespace, vmcluster));
  const readiness = vmclusterReadiness(cluster, config.generation);
  const figures = {
    gate: config.gate,
    zone: config.zone ?? null,
    ...(where === undefined ? {} : { cluster: where }),
    namespace,
    vmcluster,
    ready: readiness.state === 'ready',
    failed: readiness.state === 'failed',
    state: readiness.state,
    updateStatus: readiness.updateStatus ?? null,
    generation: readiness.generation ?? null,
    observedGeneration: readiness.observedGeneration ?? null,
    reason: readiness.reason ?? null,
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
