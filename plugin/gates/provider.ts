// The vmzones/gates metric provider. The gates (vmclusterReady, vmagentQueueDrained, vmauthReloaded) arrive
// with the gates issue; until then every measurement is an Error that says so — never a silent pass.

import type { MeasurementResult, MetricProvider, MetricView } from '../rollouts/types.ts';

export const gatesProviderType = 'vmzones/gates';

function notImplemented(metric: MetricView): MeasurementResult {
  return {
    phase: 'Error',
    message: `vmzones/gates is not implemented yet (metric ${JSON.stringify(metric.name ?? '')}); no gate was evaluated`,
  };
}

export function createGatesProvider(): MetricProvider {
  return {
    async init() {},
    run: async (_run, metric) => notImplemented(metric),
    resume: async (_run, metric) => notImplemented(metric),
    terminate: async (_run, metric) => notImplemented(metric),
    async garbageCollect() {},
    getMetadata: async () => ({}),
    type: () => gatesProviderType,
  };
}
