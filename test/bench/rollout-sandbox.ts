// Shared parts of the side-by-side rollout benchmark (rollout-vs-vmdistributed.ts): the figures one run yields,
// the load generator's sample stream checked per zone, and VMCluster facts read from the sandbox.

import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObjects } from '../../plugin/kube/objects.ts';
import { vmclusterReadiness } from '../../plugin/vm/vmcluster.ts';
import { cluster } from '../e2e/step/harness.ts';
import type { Sandbox } from '../sandbox/helper.ts';
import { checkLogSeqs, exportedSeqs, storedLogSeqs } from '../sandbox/loadgen-client.ts';

export interface ZoneWindow {
  zone: string;
  /** When the zone stopped serving reads (vmzones: drainReads started; VMDistributed: dropped from its VMAuth). */
  startMs: number;
  /** When reads went back to it (vmzones: restoreReads finished; VMDistributed: back in its VMAuth). */
  endMs: number;
}

export interface RunFigures {
  product: 'vmzones' | 'VMDistributed';
  settings: string;
  zones: ZoneWindow[];
  /** From the change being committed to the whole walk being done. */
  totalS: number;
  reads: { sent: number; failed: number; backendErrors: number; failures: string[] };
  /** Per zone: sequence numbers of the load generator's stream missing in the zone, within the walk's window. */
  samplesLost: Record<string, number>;
  samplesChecked: number;
}

/**
 * Sequence numbers in (fromSeq, toSeq] missing in each zone, after giving vmagent up to `catchUpMs` to deliver what
 * it queued (a lost sample stays missing; a late one arrives).
 */
export async function samplesLost(
  sandbox: Sandbox,
  vmclusters: { zone: string; vmcluster: string; kind?: 'VMCluster' | 'VMSingle' }[],
  fromSeq: number,
  toSeq: number,
  catchUpMs = 60_000,
): Promise<Record<string, number>> {
  const until = Date.now() + catchUpMs;
  const lost: Record<string, number> = {};
  for (const z of vmclusters) {
    for (;;) {
      const seqs = await exportedSeqs(sandbox.endpoint(z.kind ?? 'VMCluster', z.vmcluster).url).catch(
        () => new Set<number>(),
      );
      let missing = 0;
      for (let seq = fromSeq + 1; seq <= toSeq; seq++) if (!seqs.has(seq)) missing++;
      lost[z.zone] = missing;
      if (missing === 0 || Date.now() > until) break;
      await sleep(2000);
    }
  }
  return lost;
}

/**
 * The load generator's log lines (its logs mode) in [fromSeq, toSeq] missing in each VictoriaLogs zone, read from the
 * zone's own victoria-logs process (not through vmauth), after giving vlagent up to `catchUpMs` to deliver what it
 * queued; and per zone the lines stored more than once (a resent block), which are not lost but are counted.
 */
export async function logLinesLost(
  sandbox: Sandbox,
  vlclusters: { zone: string; vmcluster: string }[],
  fromSeq: number,
  toSeq: number,
  catchUpMs = 60_000,
): Promise<{ lost: Record<string, number>; duplicates: Record<string, number> }> {
  const until = Date.now() + catchUpMs;
  const lost: Record<string, number> = {};
  const duplicates: Record<string, number> = {};
  for (const z of vlclusters) {
    for (;;) {
      const seqs = await storedLogSeqs(sandbox.endpoint('VLCluster', z.vmcluster).url, fromSeq, toSeq).catch(
        () => [],
      );
      const check = checkLogSeqs(seqs, fromSeq, toSeq);
      lost[z.zone] = check.missing;
      duplicates[z.zone] = check.duplicates;
      if (check.missing === 0 || Date.now() > until) break;
      await sleep(2000);
    }
  }
  return { lost, duplicates };
}

export async function operationalAtGeneration(kube: KubeObjects, vmcluster: string): Promise<boolean> {
  return vmclusterReadiness(await cluster(kube, vmcluster)).state === 'ready';
}

export const seconds = (ms: number) => ms / 1000;
export const fixed = (n: number, digits = 1) => n.toFixed(digits);

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
