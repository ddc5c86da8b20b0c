// What every reliability scenario does around its faults (docs/reliability.md): a sandbox with the fault proxy,
// the first revision, the probes (reads through vmauth, the sample stream, the routing watcher), a three-zone
// walk, what is left on the zones afterwards, and the table row with its required zeros. The scenario files
// (reliability.test.ts, crashes.test.ts) only say which faults go where.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import type { ProxyStats } from '../../sandbox/fault-proxy.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { loadgenStatus } from '../../sandbox/loadgen-client.ts';
import { readUser, vmauthName } from '../../sandbox/manifests.ts';
import { isAlive, tailLog } from '../../sandbox/processes.ts';
import {
  eventually,
  type RolloutState,
  rolloutCanProgress,
  rolloutObject,
  rolloutState,
  runStatus,
  sandboxKube,
  startReadProber,
  startRoutingWatcher,
  stepsFor,
  zoneSpec,
} from '../step/harness.ts';
import {
  describeStatuses,
  duplicates,
  formatTable,
  latencyOffset,
  leftovers,
  type Row,
  samplesLost,
  specValue,
  writeDocTable,
  zones,
} from './support.ts';

/** The Rollout every scenario walks. */
export const rolloutName = 'zones';

export interface Scene {
  sandbox: Sandbox;
  kube: KubeObjects;
}

export async function withSandbox<T>(run: (scene: Scene) => Promise<T>): Promise<T> {
  const sandbox = await startSandbox({ zones: 3, podRestartSeconds: 2, plugin: true, faultProxy: true });
  try {
    return await run({ sandbox, kube: sandboxKube(sandbox) });
  } catch (error) {
    reportDaemons(sandbox);
    throw error;
  } finally {
    await stopProbes();
    await sandbox.stop();
  }
}

/** After a failed scenario: which daemons still run, and the last lines of their logs (CI shows only output). */
export function reportDaemons(sandbox: Sandbox): void {
  const lines = ['[reliability] the scenario failed; the sandbox’s daemons:'];
  for (const d of sandbox.state.daemons) {
    lines.push(`--- ${d.name} (pid ${d.pid}, ${isAlive(d.pid) ? 'running' : 'NOT RUNNING'}): ${d.log}`);
    lines.push(tailLog(d.log, 8));
  }
  process.stderr.write(`${lines.join('\n')}\n`);
}

/** Probes a failed scenario left running: stopped before its sandbox goes down, so nothing polls a dead port. */
const running = new Set<() => Promise<unknown>>();

export async function stopProbes(): Promise<void> {
  const stops = [...running];
  running.clear();
  await Promise.all(stops.map((stop) => stop().catch(() => undefined)));
}

/** The first revision (the controller runs no steps for it) and the spec values every zone starts from. */
export async function firstRevision(scene: Scene): Promise<unknown[]> {
  const first = zoneSpec({});
  await scene.sandbox.kubectl.apply([rolloutObject(rolloutName, first, stepsFor(first, 'none'))]);
  await eventually(
    'the first revision to be Healthy',
    async () => ((await rolloutState(scene.kube, rolloutName)).status.phase === 'Healthy' ? true : undefined),
    { unless: rolloutCanProgress(scene.kube, rolloutName) },
  );
  return zoneValues(scene);
}

export function zoneValues(scene: Scene): Promise<unknown[]> {
  return Promise.all(zones.map((z) => specValue(scene.kube, z.vmcluster)));
}

export type Measured = Awaited<ReturnType<Awaited<ReturnType<typeof measure>>['finish']>>;

/** Probes and counters around one scenario; `finish` stops them and measures. */
export async function measure(scene: Scene) {
  const started = Date.now();
  const loadgen = await loadgenStatus(scene.sandbox);
  const prober = startReadProber(scene.sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const watcher = startRoutingWatcher(scene.kube, zones);
  const stop = () => Promise.all([prober.stop(), watcher.stop()]);
  running.add(stop);
  return {
    started,
    /** Reads failed so far (live). */
    failedReads: () => prober.figures.failed,
    async finish() {
      running.delete(stop);
      const reads = await prober.stop();
      const routing = await watcher.stop();
      const to = (await loadgenStatus(scene.sandbox)).lastSeq - 3;
      const samples = await samplesLost(scene.sandbox, loadgen.lastSeq + 1, to, loadgen.failed);
      return { reads, routing, samples, seconds: (Date.now() - started) / 1000 };
    },
  };
}

/** undefined once `check` holds; the timeout's message when it does not within `timeoutMs`. */
export async function waitOrDescribe(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 1000,
): Promise<string | undefined> {
  try {
    await eventually(what, async () => ((await check()) ? true : undefined), timeoutMs, intervalMs);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

function stuckOutcome(state: RolloutState, timeout: string): string {
  const at = state.status.currentStepIndex ?? 0;
  const run = runStatus(state, at);
  return `not finished (${timeout.split(':')[0]}): phase ${state.status.phase ?? '?'}, step ${at} ${run?.phase ?? ''} ${(run?.message ?? state.status.message ?? '').slice(0, 160)}`;
}

/**
 * Walks a new revision (zone-a, zone-b, zone-c, no pauses) that sets the latency offset to `value`, and waits
 * until it is Healthy; `onState` sees the Rollout every 150 ms (every second without it).
 */
export async function walk(
  scene: Scene,
  timeoutMs: number,
  onState?: (s: RolloutState) => void | Promise<void>,
  value = '6s',
): Promise<string> {
  const spec = zoneSpec(latencyOffset(value));
  const before = await rolloutState(scene.kube, rolloutName);
  await scene.sandbox.kubectl.apply([rolloutObject(rolloutName, spec, stepsFor(spec, 'none'))]);
  let last = before;
  const timeout = await waitOrDescribe(
    'the three-zone walk to be Healthy',
    async () => {
      last = await rolloutState(scene.kube, rolloutName);
      await onState?.(last);
      return (
        last.status.currentPodHash !== before.status.currentPodHash &&
        last.status.phase === 'Healthy' &&
        last.status.stableRS === last.status.currentPodHash
      );
    },
    timeoutMs,
    // Fine-grained when something acts on every step change (the kill points).
    onState === undefined ? 1000 : 150,
  );
  if (timeout !== undefined) return stuckOutcome(last, timeout);
  const values = await zoneValues(scene);
  const unchanged = zones.filter((_, i) => values[i] !== value).map((z) => z.zone);
  if (unchanged.length > 0) return `Healthy, but without the change in ${unchanged.join(', ')}`;
  return 'completed';
}

/** Waits a little for the background reconciler, then names what a scenario left on the zones. */
export async function settledLeftovers(kube: KubeObjects): Promise<string[]> {
  let found: string[] = [];
  await waitOrDescribe(
    'zones released and routed',
    async () => {
      found = await leftovers(kube);
      return found.length === 0;
    },
    60_000,
  );
  return found;
}

/** The measured columns of a row and the notes every scenario prints about them. */
export function measuredRow(
  m: Measured,
  stats: ProxyStats,
  state: RolloutState,
): Pick<Row, 'failedReads' | 'samplesLost' | 'duplicatePatches' | 'falseDrained' | 'seconds' | 'notes'> {
  const dup = duplicates(stats);
  return {
    failedReads: m.reads.failed,
    samplesLost: m.samples.lost,
    duplicatePatches: dup.count,
    falseDrained: m.routing.violations.length,
    seconds: m.seconds,
    notes: [
      `reads sent ${m.reads.sent}, failed ${m.reads.failed} ${m.reads.failures.slice(0, 3).join(' ')}, vmauth backend errors ${m.reads.backendErrors}`,
      `samples: ${m.samples.detail}`,
      ...(dup.count > 0 ? [`duplicate spec patches: ${dup.detail}`] : []),
      ...m.routing.violations.slice(0, 3).map((v) => `routed while changing: ${v}`),
      `step statuses:\n${describeStatuses(state)}`,
    ],
  };
}

/** The rows of one test file: printed when the file ends and merged into docs/reliability.md. */
export function reliabilityTable(): { record(row: Row): Row } {
  const rows: Row[] = [];
  const started = Date.now();
  after(() => {
    const seconds = (Date.now() - started) / 1000;
    console.log(`\n---- vmzones reliability (${seconds.toFixed(0)} s) ----\n${formatTable(rows)}\n`);
    for (const r of rows) for (const n of r.notes) console.log(`${r.scenario}: ${n}`);
    if (rows.length > 0) writeDocTable(rows, seconds);
  });
  return {
    record(row) {
      rows.push(row);
      console.log(`[reliability] ${row.scenario}: ${row.outcome}; ${row.notes.slice(0, -1).join(' | ')}`);
      return row;
    },
  };
}

export function assertZeros(row: Row, expected: string): void {
  assert.deepEqual(
    {
      outcome: row.outcome,
      failedReads: row.failedReads,
      samplesLost: row.samplesLost,
      duplicatePatches: row.duplicatePatches,
      falseDrained: row.falseDrained,
    },
    { outcome: expected, failedReads: 0, samplesLost: 0, duplicatePatches: 0, falseDrained: 0 },
    row.notes.join('\n'),
  );
}

/**
 * Registers the scenarios `VMZONES_RELIABILITY` names (default: `defaults`); the others are not registered at all
 * (never counted as passed), and the file says which ran.
 */
/** `shared`: the sandbox the file's scenarios share, reported when one fails (withSandbox reports its own). */
export function scenarioFilter(
  file: string,
  all: readonly string[],
  defaults: readonly string[],
  shared?: () => Sandbox | undefined,
) {
  const chosen = new Set(
    (process.env.VMZONES_RELIABILITY ?? defaults.join(','))
      .split(',')
      .map((s) => s.trim())
      .filter((s) => all.includes(s)),
  );
  console.log(
    `[reliability] ${file}: scenarios ${[...chosen].join(', ') || 'none'} (all: ${all.join(', ')})`,
  );
  return (key: string, name: string, body: () => Promise<void>) => {
    if (!chosen.has(key)) return;
    test(name, async () => {
      try {
        await body();
      } catch (error) {
        const sandbox = shared?.();
        if (sandbox !== undefined) reportDaemons(sandbox);
        throw error;
      } finally {
        await stopProbes(); // a failed scenario's probes must not run on into the next one
      }
    });
  };
}
