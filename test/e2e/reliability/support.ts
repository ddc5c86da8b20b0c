// Measuring a reliability scenario on the sandbox (docs/reliability.md): the plugin processes' API calls go
// through the fault proxy (test/sandbox/fault-proxy.ts), reads go through vmauth (the step harness's prober),
// the load generator's sample stream is checked in every zone afterwards, and the plugin process can be
// SIGKILLed while the controller keeps running (the controller starts a new one on its next reconcile).

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { duplicateSpecPatches, FaultControl, type ProxyStats } from '../../sandbox/fault-proxy.ts';
import type { Sandbox } from '../../sandbox/helper.ts';
import { exportedSeqs, loadgenStatus } from '../../sandbox/loadgen-client.ts';
import { pidsRunning } from '../../sandbox/processes.ts';
import { repoRoot } from '../../sandbox/sandbox.ts';
import {
  cluster,
  eventually,
  ns,
  pluginStatuses,
  type RolloutState,
  routedZones,
  type SpecDocument,
  vmzonesAnnotations,
} from '../step/harness.ts';

export const zones = [
  { zone: 'zone-a', vmcluster: 'vm-zone-a' },
  { zone: 'zone-b', vmcluster: 'vm-zone-b' },
  { zone: 'zone-c', vmcluster: 'vm-zone-c' },
];

export const latencyOffset = (value: string) => ({
  vmstorage: { extraArgs: { 'search.latencyOffset': value } },
});

export async function specValue(kube: KubeObjects, vmcluster: string): Promise<unknown> {
  const spec = (await cluster(kube, vmcluster)).spec as {
    vmstorage?: { extraArgs?: Record<string, string> };
  };
  return spec.vmstorage?.extraArgs?.['search.latencyOffset'];
}

export function faultControl(sandbox: Sandbox): FaultControl {
  const proxy = sandbox.state.faultProxy;
  if (proxy === undefined)
    throw new Error('the sandbox runs without the fault proxy: start it with faultProxy: true');
  return new FaultControl(proxy.controlUrl);
}

/** The controller's user agent: none of its requests may reach the proxy (only the plugins use it). */
export function controllerRequests(stats: ProxyStats): number {
  return Object.entries(stats.userAgents)
    .filter(([agent]) => /rollouts-controller|argo-rollouts/i.test(agent))
    .reduce((sum, [, n]) => sum + n, 0);
}

/** Pids of this sandbox's vmzones step plugin processes (argv[0] is the controller's copy in plugin-bin/). */
export function stepPluginPids(sandbox: Sandbox): number[] {
  return pidsRunning(join(sandbox.state.stateDir, 'rollouts-controller', 'plugin-bin', 'vmzones', 'step'));
}

export function killStepPlugin(sandbox: Sandbox): number[] {
  const pids = stepPluginPids(sandbox);
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  return pids;
}

// ---- samples of the load generator's stream, per zone ----

/**
 * Samples (sequence numbers of series 0) in [from, to] missing from each zone, after waiting up to `waitMs` for
 * vmagent's queues to deliver them; plus the batches the load generator could not hand to vmagent.
 */
export async function samplesLost(
  sandbox: Sandbox,
  from: number,
  to: number,
  refusedBefore: number,
  waitMs = 120_000,
  zoneList: readonly { zone: string; vmcluster: string }[] = zones,
): Promise<{ lost: number; detail: string }> {
  const missing = async () => {
    const perZone: Record<string, number[]> = {};
    for (const z of zoneList) {
      const seqs = await exportedSeqs(sandbox.endpoint('VMCluster', z.vmcluster).url, 10_000);
      const gaps: number[] = [];
      for (let seq = from; seq <= to; seq++) if (!seqs.has(seq)) gaps.push(seq);
      perZone[z.zone] = gaps;
    }
    return perZone;
  };
  let last: Record<string, number[]> = {};
  try {
    await eventually(
      'every sample of the scenario in every zone',
      async () => {
        last = await missing();
        return Object.values(last).every((g) => g.length === 0) ? true : undefined;
      },
      waitMs,
      2000,
    );
  } catch {
    // Counted below.
  }
  const generator = await loadgenStatus(sandbox);
  const refused = generator.failed - refusedBefore;
  const lost = Object.values(last).reduce((sum, g) => sum + g.length, 0) + refused;
  const detail = Object.entries(last)
    .filter(([, g]) => g.length > 0)
    .map(([zone, g]) => `${zone}: ${g.length} missing (first ${g.slice(0, 5).join(', ')})`)
    .concat(refused > 0 ? [`${refused} batches refused before vmagent (last: ${generator.lastError})`] : [])
    .join('; ');
  return { lost, detail: detail || `none of seq ${from}..${to}` };
}

// ---- what a scenario leaves behind ----

/** Every zone: vmzones annotations other than the rollback record, pending labels, zones not routed. */
export async function leftovers(kube: KubeObjects): Promise<string[]> {
  return leftoversIn(Object.fromEntries(zones.map((z) => [z.zone, kube])), kube);
}

/** leftovers with each zone's VMCluster read in its own cluster (`kubeOf[zone]`) and the VMUser in `hub`. */
export async function leftoversIn(
  kubeOf: Record<string, KubeObjects>,
  hub: KubeObjects,
  spec?: SpecDocument,
  zoneList: readonly { zone: string; vmcluster: string }[] = zones,
): Promise<string[]> {
  const found: string[] = [];
  for (const z of zoneList) {
    const kube = kubeOf[z.zone];
    if (kube === undefined) throw new Error(`no cluster client for ${z.zone}`);
    const c = await cluster(kube, z.vmcluster);
    const extra = Object.keys(vmzonesAnnotations(c)).filter((k) => k !== 'vmzones.io/rollback');
    if (extra.length > 0) found.push(`${z.zone}: ${extra.join(', ')}`);
    // vmzones.io/zone is the zone's identity label and stays; these two mark unfinished work (docs/step-plugin.md).
    const pending = Object.keys(c.metadata.labels ?? {}).filter(
      (k) => k === 'vmzones.io/pending' || k === 'vmzones.io/maintenance',
    );
    if (pending.length > 0) found.push(`${z.zone}: labels ${pending.join(', ')}`);
  }
  const routed = await routedZones(hub, spec);
  const unrouted = zoneList.filter((z) => !routed.includes(z.zone)).map((z) => z.zone);
  if (unrouted.length > 0) found.push(`out of reads: ${unrouted.join(', ')}`);
  return found;
}

export function describeStatuses(state: RolloutState): string {
  return pluginStatuses(state)
    .map(
      (s) =>
        `  #${s.index} ${s.operation} ${s.phase ?? '?'} x${s.executions ?? '?'}: ${(s.message ?? '').slice(0, 240)}`,
    )
    .join('\n');
}

// ---- the table ----

export interface Row {
  scenario: string;
  faults: string;
  outcome: string;
  failedReads: number;
  samplesLost: number;
  duplicatePatches: number;
  falseDrained: number;
  seconds: number;
  notes: string[];
}

export function duplicates(stats: ProxyStats): { count: number; detail: string } {
  const found = duplicateSpecPatches(stats.specPatches);
  return {
    count: found.length,
    detail: found.map((p) => `${p.namespace}/${p.name} ${JSON.stringify(p.spec)} at ${p.at}`).join('; '),
  };
}

/** "42 of 419 requests (5xx 9, 429 8, 409 8, hang 9, reset 8; 23 after the API server applied the request)". */
export function faultSummary(stats: ProxyStats): string {
  const byKind: Record<string, number> = {};
  let after = 0;
  for (const [key, n] of Object.entries(stats.faults)) {
    const [fault = '', when = ''] = (key.split(' ')[0] ?? '').split('/');
    const kind = fault === 'status500' || fault === 'status503' ? '5xx' : fault.replace(/^status/, '');
    byKind[kind] = (byKind[kind] ?? 0) + n;
    if (when === 'after') after += n;
  }
  const kinds = ['5xx', '429', '409', 'hang', 'reset']
    .filter((k) => byKind[k] !== undefined)
    .map((k) => `${k} ${byKind[k]}`)
    .join(', ');
  const detail = kinds ? ` (${kinds}; ${after} after the API server applied the request)` : '';
  return `${stats.faultsTotal} of ${stats.requestsTotal} requests${detail}`;
}

export function formatTable(rows: readonly Row[]): string {
  const header =
    '| scenario | faults injected | outcome | failed reads through vmauth | samples lost | duplicate patches | false "drained" | time |';
  const line = '| --- | --- | --- | --- | --- | --- | --- | --- |';
  const body = rows.map(
    (r) =>
      `| ${r.scenario} | ${r.faults} | ${r.outcome.replaceAll('|', '/')} | ${r.failedReads} | ${r.samplesLost} | ${r.duplicatePatches} | ${r.falseDrained} | ${r.seconds.toFixed(0)} s |`,
  );
  return [header, line, ...body].join('\n');
}

/** The scenarios of reliability.test.ts and crashes.test.ts, in the order of the table. */
export const scenarioOrder = [
  '10% API faults, whole walk',
  '10% API faults, whole abort',
  'SIGKILL of the plugin at each step boundary',
  'SIGKILL of the plugin inside its actions (write applied, answer lost)',
  'SIGKILL of the controller at each step boundary',
  'vmauth restarted mid-drain (no config-reloader)',
  'VMCluster edited by someone else, then an Abort with a controller crash',
];

const beginMarker = '<!-- reliability-table:begin (written by test/e2e/reliability) -->';
const endMarker = '<!-- reliability-table:end -->';

/**
 * Replaces this run's rows in the table between the markers in docs/reliability.md and keeps the rows (and
 * notes) of scenarios this run did not include (e.g. a run filtered with --test-name-pattern), so scenarios
 * can be measured in separate runs. The rest of the page is hand-written.
 */
export function writeDocTable(rows: readonly Row[], runSeconds: number): void {
  const path = join(repoRoot, 'docs', 'reliability.md');
  const text = readFileSync(path, 'utf8');
  const start = text.indexOf(beginMarker);
  const end = text.indexOf(endMarker);
  if (start < 0 || end < start) throw new Error(`${path} has no table markers ${beginMarker} … ${endMarker}`);
  const old = text.slice(start + beginMarker.length, end).split('\n');
  const fresh = new Set(rows.map((r) => r.scenario));
  const rowScenario = (line: string) => line.split('|')[1]?.trim() ?? '';
  const keptRows = old.filter((l) => /^\| (?!scenario |---)/.test(l) && !fresh.has(rowScenario(l)));
  const noteOf = (line: string) => [...fresh].find((s) => line.startsWith(`- ${s}: `));
  const keptNotes: string[] = [];
  let inFreshNote = false;
  for (const line of old) {
    if (line.startsWith('- ')) inFreshNote = noteOf(line) !== undefined;
    else if (!line.startsWith('  ')) inFreshNote = false;
    if ((line.startsWith('- ') || line.startsWith('  ')) && !inFreshNote) keptNotes.push(line);
  }
  const table = formatTable(rows).split('\n');
  // One order whatever ran last: the order the suite defines its scenarios in.
  const order = (line: string) => {
    const i = scenarioOrder.indexOf(rowScenario(line));
    return i < 0 ? scenarioOrder.length : i;
  };
  const allRows = [...keptRows, ...table.slice(2)].sort((a, b) => order(a) - order(b));
  const notes = rows.flatMap((r) => r.notes.map((n) => `- ${r.scenario}: ${n.replaceAll('\n', '\n  ')}`));
  const block = [
    beginMarker,
    `Last written ${new Date().toISOString()} by a run of ${rows.map((r) => `"${r.scenario}"`).join(', ') || 'no scenario'} (${runSeconds.toFixed(0)} s wall time, sandbox starts included); rows of scenarios that run did not include are kept from earlier runs.`,
    '',
    ...table.slice(0, 2),
    ...allRows,
    '',
    ...keptNotes,
    ...notes,
    endMarker,
  ].join('\n');
  writeFileSync(path, text.slice(0, start) + block + text.slice(end + endMarker.length));
}

export { ns };
