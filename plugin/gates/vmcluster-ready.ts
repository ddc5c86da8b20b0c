// Gate vmclusterReady: is the zone's object (VMCluster, VMSingle or VLCluster: zone-kinds.ts) operational at its
// current generation, with no storage pod's change deferred (vm/zone-readiness.ts)? One reading per Run/Resume;
// `failed` fails with the operator's reason once it is final (vm/operator-failure.ts: at once for a spec the
// operator cannot parse, else after it persisted a grace period, counted in the gate's state); anything else waits.

import { z } from 'zod';
import { operatorFailure } from '../vm/operator-failure.ts';
import { defaultZoneKind, type ZoneKind, zoneObjectRef } from '../vm/zone-kinds.ts';
import { zoneReadiness } from '../vm/zone-readiness.ts';
import { explicitZoneObject, type ReadyGateConfig } from './config.ts';
import type { GateContext, GateReading } from './gate-reading.ts';
import { allowedGateNamespace, clusterKube, explicitNamespace, zoneFromSpec } from './zone-target.ts';

/** The spec document's readyTimeout is used when the zone comes from there. */
const defaultReadyTimeoutMs = 15 * 60_000;
const defaultReadyPollMs = 10_000;

/** Between readings: since when (ms since the epoch) the operator has reported `failed` without pause. */
export const readyGateStateSchema = z.object({ failingSince: z.number() });
export type ReadyGateState = z.infer<typeof readyGateStateSchema>;

export async function readVmclusterReady(
  config: ReadyGateConfig,
  context: GateContext,
  state?: ReadyGateState,
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
  const failure =
    readiness.state === 'failed'
      ? operatorFailure(readiness.reason, state?.failingSince, context.now)
      : undefined;
  const verdict = readiness.state === 'ready' ? 'pass' : failure?.final === true ? 'fail' : 'wait';
  return {
    verdict,
    message: failure === undefined ? readiness.message : `${readiness.message}; ${failure.why}`,
    figures: { ...figures, ...(failure === undefined ? {} : { failingSince: failure.failingSince }) },
    ...(failure === undefined ? {} : { state: { failingSince: failure.failingSince } }),
    timeoutMs,
    pollMs: config.pollInterval ?? defaultReadyPollMs,
  };
}
