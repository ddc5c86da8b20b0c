// The vmagentQueueDrained gate as the step plugin's reconciler needs it after a rollback
// (plugin/zones/moves/queue-check.ts): the same targets, rounds and verdict as an AnalysisRun's measurement, for the
// zone named by the handoff. The namespace is the zone's own, which the step plugin already checked.

import { zoneKindOrDefault } from '../vm/zone-kinds.ts';
import type { ZoneQueueCheck } from '../zones/moves/queue-check.ts';
import type { DrainGateConfig } from './config.ts';
import { parseGateConfig } from './config.ts';
import { drainStateSchema } from './drain-state.ts';
import { GateSetupError } from './owner-spec.ts';
import { readVmagentDrained } from './vmagent-drained.ts';

export const checkZoneQueue: ZoneQueueCheck = async (clients, request, previous, now) => {
  const config = parseGateConfig({
    gate: 'vmagentQueueDrained',
    namespace: request.namespace,
    [zoneKindOrDefault(request.kind).field]: request.vmcluster,
    vmagents: request.vmagents,
    ...(request.vminsertHosts === undefined ? {} : { vminsertHosts: request.vminsertHosts }),
  }) as DrainGateConfig;
  const state = drainStateSchema.safeParse(previous);
  const reading = await readVmagentDrained(
    config,
    {
      kube: clients.zone,
      clusters: {
        client: () => Promise.reject(new GateSetupError('a rollback check is handed its clusters')),
        registration: () => Promise.reject(new GateSetupError('a rollback check is handed its clusters')),
      },
      run: {
        metadata: { namespace: request.namespace, name: `rollback of ${request.vmcluster}` },
        spec: {},
        status: {},
      },
      now,
      allowance: { all: false, extra: [] },
      ownerSpec: () => Promise.reject(new GateSetupError('a rollback check names its VMAgents itself')),
    },
    state.success ? state.data : undefined,
    { zone: clients.zone, agents: clients.vmagents, agentsCluster: clients.vmagentsCluster },
  );
  return {
    verdict: reading.verdict,
    message: reading.message,
    state: reading.state,
    nextReadingInMs: reading.pollMs,
    ...(reading.evidenceDueInMs === undefined ? {} : { evidenceDueInMs: reading.evidenceDueInMs }),
  };
};
