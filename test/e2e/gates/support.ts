// Helpers for the gates' end-to-end tests on the sandbox: the provider in-process against the sandbox's API
// server (for readings at a chosen pace), independent reads of vmagent's raw queue figures, and polling.

import { setTimeout as sleep } from 'node:timers/promises';
import { createGatesProvider } from '../../../plugin/gates/provider.ts';
import { kubeconfigConnection } from '../../../plugin/kube/kube-config.ts';
import { kubeObjects } from '../../../plugin/kube/objects.ts';
import type {
  AnalysisRunView,
  MeasurementResult,
  MeasurementView,
  MetricProvider,
  MetricView,
} from '../../../plugin/rollouts/types.ts';

export function providerFor(kubeconfig: string): MetricProvider {
  const kube = kubeObjects(kubeconfigConnection([kubeconfig]));
  return createGatesProvider({ kube: () => kube });
}

export function gateMetric(
  config: Record<string, unknown>,
  conditions: Partial<MetricView> = {},
): MetricView {
  return { name: 'gate', provider: { plugin: { 'vmzones/gates': config } }, ...conditions };
}

export const standaloneRun: AnalysisRunView = {
  metadata: { name: 'e2e-direct', namespace: 'vm' },
  spec: {},
  status: {},
};

export interface Reading {
  at: number;
  result: MeasurementResult;
  figures: Record<string, unknown>;
}

/** As the controller stores it: times to the second, StartedAt kept from the Run. */
function storedView(result: MeasurementResult, startedAt: string | undefined): MeasurementView {
  const second = (iso: string | undefined) => (iso === undefined ? undefined : `${iso.slice(0, 19)}Z`);
  return {
    phase: result.phase,
    message: result.message,
    startedAt: second(result.startedAt) ?? startedAt,
    value: result.value,
    metadata: result.metadata,
    resumeAt: second(result.resumeAt),
  };
}

/**
 * Runs one measurement like the controller does (Run, then Resume at ResumeAt) until it completes or
 * `until` returns true for a reading; `onReading` sees every reading.
 */
export async function measure(
  provider: MetricProvider,
  metric: MetricView,
  options: { timeoutMs: number; onReading?: (reading: Reading) => Promise<void> | void } = {
    timeoutMs: 120_000,
  },
): Promise<Reading[]> {
  const readings: Reading[] = [];
  const deadline = Date.now() + options.timeoutMs;
  let result = await provider.run(standaloneRun, metric);
  const startedAt = result.startedAt;
  for (;;) {
    const reading = {
      at: Date.now(),
      result,
      figures: JSON.parse(result.value || '{}') as Record<string, unknown>,
    };
    readings.push(reading);
    await options.onReading?.(reading);
    if (result.phase !== 'Running') return readings;
    if (Date.now() > deadline)
      throw new Error(`measurement still Running after ${options.timeoutMs} ms: ${result.message}`);
    await sleep(Math.max(0, Date.parse(result.resumeAt ?? '') - Date.now()));
    result = await provider.resume(standaloneRun, metric, storedView(result, startedAt));
  }
}

export { eventually } from '../../sandbox/eventually.ts';

export interface RawQueue {
  pendingDataBytes: number;
  onDiskBytes: number;
}

/** vmagent's own figures for remote-write queue `index`, read with plain string matching (an oracle
 *  independent of the product's parser). */
export async function rawQueue(agentUrl: string, index: number): Promise<RawQueue> {
  const text = await (await fetch(`${agentUrl}/metrics`, { signal: AbortSignal.timeout(3000) })).text();
  let pendingDataBytes = Number.NaN;
  let onDiskBytes = Number.NaN;
  for (const line of text.split('\n')) {
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith('vmagent_remotewrite_pending_data_bytes{') && line.includes(`url="${index}:`)) {
      pendingDataBytes = value;
    }
    if (
      line.startsWith('vm_persistentqueue_bytes_pending{') &&
      new RegExp(`/${index}_[0-9A-F]{16}"`).test(line)
    ) {
      onDiskBytes = value;
    }
  }
  return { pendingDataBytes, onDiskBytes };
}
