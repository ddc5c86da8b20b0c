// `npm run soak`: a randomized soak of vmzones on one sandbox (issue 25; test/soak/README.md). Two Rollouts whose
// zones overlap walk new revisions, each walk ended at a random point by a random ending, while the load generator
// writes, a prober reads through vmauth, and the invariants (invariants.ts) are checked every second from the API
// server and the data plane. Prints the seed first; exits 1 on any violation, 2 when the soak itself failed.
//
//   npm run soak -- --walks 10 --seed 7 [--minutes 30] [--budget 1]

import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import {
  eventually,
  ns,
  routedZones,
  sandboxKube,
  startReadProber,
  startRoutingWatcher,
} from '../e2e/step/harness.ts';
import { cacheDir } from '../env/build.ts';
import { type Sandbox, startSandbox } from '../sandbox/helper.ts';
import { exportedSeqs, loadgenStatus } from '../sandbox/loadgen-client.ts';
import { readUser, vmauthName } from '../sandbox/manifests.ts';
import { Injectors } from './faults.ts';
import { describePlan, History, Planner, type WalkPlan } from './history.ts';
import {
  InvariantChecker,
  lostSamples,
  type Snapshot,
  settleProblems,
  type Violation,
} from './invariants.ts';
import { takeSnapshot } from './observe.ts';
import { formatText, type RunFigures, type WalkFigures } from './report.ts';
import { observerSpec, readyTimeoutMs, type SoakRollout, soakRollouts, soakZones } from './topology.ts';

const { values: args } = parseArgs({
  options: {
    walks: { type: 'string', default: '200' },
    minutes: { type: 'string', default: '60' },
    seed: { type: 'string' },
    budget: { type: 'string', default: '1' },
  },
});

function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number ≥ 0, not "${value}"`);
  return n;
}

const seed = args.seed === undefined ? Date.now() % 2_147_483_647 : positive('seed', args.seed);
// First, so that any failure replays.
console.log(`[soak] seed ${seed} (replay: npm run soak -- --seed ${seed} --walks ${args.walks})`);
const maxWalks = positive('walks', args.walks);
const maxMs = positive('minutes', args.minutes) * 60_000;
const budget = positive('budget', args.budget);

/**
 * After an ending, every zone must be settled within this bound. A walk failing at readyTimeout (2 min) and then
 * rolled back zone by zone, each rollback again bounded by readyTimeout, takes at most 2 + 3 × 2 = 8 min; 2 min
 * more for the controller's requeues (15-30 s) and the reconciler's passes (5 s) on a loaded machine.
 */
const settleBoundMs = 10 * 60_000;
/** A lease with no transition for longer than the longest deadline (readyTimeout) + the controller's requeues. */
const leaseStallMs = readyTimeoutMs + 60_000;
/** A zone out of reads under a dead holder's lease: the reconciler's pass (5 s) and watch caches, on a slow machine. */
const deadHolderGraceMs = 60_000;

const history = new History(
  join(cacheDir(), 'soak', `seed-${seed}-${new Date().toISOString().replaceAll(':', '')}.log`),
);
const violations: (Violation & { walk: number })[] = [];
let currentWalk = 0;

/** Set on the first SIGINT: the report of the walks so far is printed and the sandbox stopped (a second SIGINT exits). */
let interrupted = false;

function report(v: Violation): void {
  // After SIGINT the sandbox is being torn down: what the checks see then is the teardown, not vmzones.
  if (interrupted) return;
  violations.push({ ...v, walk: currentWalk });
  console.log(
    [
      `[soak] VIOLATION ${new Date(v.at).toISOString()} seed ${seed} walk ${currentWalk} ${v.invariant}: ${v.detail}`,
      `[soak] history so far (${history.lines.length} lines; earlier walks above and in ${history.file}), this walk:`,
      ...history.walkLines.map((l) => `[soak]   ${l}`),
    ].join('\n'),
  );
}

/** The figures so far, once the soak runs: printed at the end, or at once on SIGINT. */
let figuresSoFar: (() => RunFigures) | undefined;
let stopSandbox: (() => Promise<void>) | undefined;
process.on('SIGINT', () => {
  if (interrupted) process.exit(130);
  interrupted = true;
  console.log(
    `\n[soak] SIGINT: the walk in progress (walk ${currentWalk}) is left uncounted; the report of the walks that ended:`,
  );
  if (figuresSoFar !== undefined) console.log(`\n${formatText(figuresSoFar())}\n`);
  else console.log('[soak] no walk had started yet');
  const code = violations.length > 0 ? 1 : 0;
  within(60_000, 'stopping the sandbox', stopSandbox?.() ?? Promise.resolve()).then(
    () => process.exit(code),
    (error: unknown) => {
      console.error(`[soak] ${String(error)}`);
      process.exit(code);
    },
  );
});

let values = 0;
/** A value of the walked field no revision has used yet. */
const nextValue = () => `${++values}s`;

async function main(): Promise<number> {
  const started = Date.now();
  const sandbox = await startSandbox({
    zones: soakZones.length,
    podRestartSeconds: 2,
    plugin: true,
    faultProxy: true,
  });
  stopSandbox = async () => {
    await sandbox.stop();
  };
  try {
    return await soak(sandbox, started);
  } finally {
    await sandbox.stop();
  }
}

async function soak(sandbox: Sandbox, started: number): Promise<number> {
  const kube = sandboxKube(sandbox);
  const injectors = new Injectors(sandbox, kube);
  const planner = new Planner(seed);
  const checker = new InvariantChecker({ budgetPerBalancer: budget, leaseStallMs, deadHolderGraceMs });
  const walks: WalkFigures[] = [];
  const samples = { checked: 0, lost: 0, apart: 0 };
  let prober: ReturnType<typeof startReadProber> | undefined;
  const figures = (reads: { sent: number; failed: number }): RunFigures => ({
    seed,
    startedAt: started,
    endedAt: Date.now(),
    walks: [...walks],
    injected: injectors.ledger.injected,
    checks: checker.checks + samples.checked * soakZones.length,
    snapshotsFailed,
    reads: {
      sent: reads.sent,
      failed: reads.failed - checker.readsFailedDuringVmauthRestart,
      apart: checker.readsFailedDuringVmauthRestart,
    },
    samples,
    violations,
    settleBoundMs,
  });
  figuresSoFar = () => figures(prober?.figures ?? { sent: 0, failed: 0 });
  let snapshotsFailed = 0;

  // The first revision of each Rollout runs no steps.
  for (const rollout of Object.keys(soakRollouts) as SoakRollout[])
    await injectors.commit(rollout, undefined);
  await eventually(
    'the first revision of both Rollouts to be Healthy',
    async () => {
      const phases = (await kube.list('argoproj.io/v1alpha1', 'Rollout', ns)).map(
        (r) => (r.status as { phase?: string } | undefined)?.phase,
      );
      return phases.length === 2 && phases.every((p) => p === 'Healthy') ? true : undefined;
    },
    180_000,
    1000,
  );
  for (const rollout of Object.keys(soakRollouts) as SoakRollout[]) injectors.markStable(rollout);
  history.add('both Rollouts at their first revision, Healthy');

  prober = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser, undefined, 100);
  const inputs = {
    kube,
    reads: prober.figures,
    vmauthRestartingSince: (since: number) => injectors.ledger.vmauthRestartingSince(since),
    foreignGenerations: () => injectors.ledger.foreign,
  };

  // The invariants, every second, until the soak ends.
  let latest: Snapshot | undefined;
  let watching = true;
  const watchLoop = (async () => {
    while (watching && !interrupted) {
      const tick = Date.now();
      try {
        latest = await takeSnapshot(inputs, latest?.at ?? tick);
        for (const v of checker.check(latest)) report(v);
      } catch (error) {
        snapshotsFailed++;
        if (snapshotsFailed % 30 === 1) history.add(`a snapshot failed (not a violation): ${String(error)}`);
      }
      await sleep(Math.max(0, 1000 - (Date.now() - tick)));
    }
  })();

  const known: Record<string, Set<string | undefined>> = {};
  const first = await takeSnapshot(inputs, Date.now());
  for (const z of first.zones) known[z.zone] = new Set([z.value]);
  const addKnown = (rollout: SoakRollout, value: string | undefined) => {
    for (const zone of soakRollouts[rollout]) known[zone]?.add(value);
  };

  try {
    while (!interrupted && walks.length < maxWalks && Date.now() - started < maxMs) {
      const plan = planner.next();
      currentWalk = plan.index;
      history.startWalk();
      history.add(describePlan(plan));
      const startSeq = (await loadgenStatus(sandbox)).lastSeq;
      const watcher = startRoutingWatcher(
        kube,
        soakZones.map((zone) => ({ zone, vmcluster: `vm-${zone}` })),
        1000,
        observerSpec,
      );
      const { outcome, settleMs } = await walk(plan, injectors, kube, known, addKnown);
      walks.push({ plan, outcome, settleMs });
      history.add(
        `walk ${plan.index}: ${outcome}; ${settleMs === undefined ? 'NOT settled' : `settled in ${(settleMs / 1000).toFixed(0)} s`}`,
      );
      for (const line of (await watcher.stop()).violations) {
        report({
          at: Date.now(),
          invariant: 'routed-not-operational',
          detail: `(harness routing watcher) ${line}`,
        });
      }
      // Every sample of the walk in every zone (vmagent's queues may still deliver: up to 2 min).
      const to = (await loadgenStatus(sandbox)).lastSeq - 3;
      let result: ReturnType<typeof lostSamples> | undefined;
      try {
        await eventually(
          `every sample of walk ${plan.index} (seq ${startSeq + 1}..${to}) in every zone`,
          async () => {
            const seqs: Record<string, Set<number>> = {};
            for (const zone of soakZones)
              seqs[zone] = await exportedSeqs(sandbox.endpoint('VMCluster', `vm-${zone}`).url, 10_000);
            result = lostSamples(seqs, startSeq + 1, to, injectors.ledger.vmagentSeqs);
            return result.lost === 0 ? true : undefined;
          },
          120_000,
          3000,
        );
      } catch (error) {
        // A loss is reported below; zones whose export never answered are no evidence either way.
        if (result === undefined) history.add(`walk ${plan.index}: samples not checked: ${String(error)}`);
      }
      if (result === undefined) continue;
      samples.checked += Math.max(0, to - startSeq);
      samples.apart += result.excused;
      if (result.lost > 0) {
        samples.lost += result.lost;
        report({ at: Date.now(), invariant: 'sample-lost', detail: result.detail });
      }
    }
  } finally {
    watching = false;
    await watchLoop;
  }
  const reads = await prober.stop();
  if (interrupted) return violations.length > 0 ? 1 : 0; // the SIGINT handler printed the report
  console.log(`\n${formatText(figures(reads))}\n`);
  return violations.length > 0 ? 1 : 0;
}

/** Waits until `rollout`'s new revision (pod hash other than `before`) is at `step` or past it, or has ended. */
async function reachStep(
  kube: Injectors['kube'],
  rollout: SoakRollout,
  before: string | undefined,
  step: number,
) {
  return eventually(
    `${rollout}: its new revision at step ${step}`,
    async () => {
      const object = await kube.get({
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Rollout',
        namespace: ns,
        name: rollout,
      });
      const status = (object.status ?? {}) as {
        phase?: string;
        currentStepIndex?: number;
        currentPodHash?: string;
      };
      if (status.currentPodHash === before || status.currentPodHash === undefined) return undefined;
      if (status.phase === 'Healthy' || status.phase === 'Degraded') return `late (already ${status.phase})`;
      return (status.currentStepIndex ?? 0) >= step ? `at step ${status.currentStepIndex}` : undefined;
    },
    settleBoundMs,
    500,
  );
}

async function podHash(kube: Injectors['kube'], rollout: SoakRollout): Promise<string | undefined> {
  const object = await kube.get({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    namespace: ns,
    name: rollout,
  });
  return (object.status as { currentPodHash?: string } | undefined)?.currentPodHash;
}

/** `promise`, or an error naming what never came after `ms` (an ending's kubectl call, a restart). */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not return within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function walk(
  plan: WalkPlan,
  injectors: Injectors,
  kube: Injectors['kube'],
  known: Record<string, Set<string | undefined>>,
  addKnown: (rollout: SoakRollout, value: string | undefined) => void,
): Promise<{ outcome: string; settleMs: number | undefined }> {
  const before = await podHash(kube, plan.subject);
  const value = nextValue();
  addKnown(plan.subject, value);
  await injectors.commit(plan.subject, value);
  let outcome = `${plan.subject} → ${value}`;
  if (plan.contender !== undefined) {
    const contenderValue = nextValue();
    addKnown(plan.contender, contenderValue);
    await injectors.commit(plan.contender, contenderValue);
    outcome += `, ${plan.contender} → ${contenderValue}`;
  }
  history.add(`walk ${plan.index}: applied ${outcome}`);

  let point = 'not waited for';
  if (plan.ending !== 'finished') {
    try {
      point = await reachStep(kube, plan.subject, before, plan.atStep);
    } catch (error) {
      point = `ending point never came: ${String(error)}`;
    }
    await sleep(plan.delayMs);
  }
  const endedAt = Date.now();
  let faultsBefore: number | undefined;
  const perform = async (): Promise<string> => {
    switch (plan.ending) {
      case 'finished':
        return 'left to finish';
      case 'abort':
        await injectors.abort(plan.subject);
        return 'aborted';
      case 'promote-full':
        await injectors.promoteFull(plan.subject);
        return 'promoted --full';
      case 'new-commit': {
        const next = nextValue();
        addKnown(plan.subject, next);
        await injectors.commit(plan.subject, next);
        return `new commit → ${next}`;
      }
      case 'revert-to-stable':
        await injectors.revertToStable(plan.subject);
        return 'reverted to the stable template';
      case 'delete-recreate':
        await injectors.deleteAndRecreate(plan.subject);
        return 'deleted and re-created from its stable template';
      case 'plugin-kill':
        return `step plugin SIGKILLed (${injectors.killPlugin()} processes)`;
      case 'controller-kill':
        await injectors.crashController();
        return 'controller SIGKILLed and restarted';
      case 'vmauth-restart':
        return `vmauth SIGKILLed, answering again after ${((await injectors.restartVmauth()) / 1000).toFixed(1)} s`;
      case 'vmagent-restart':
        return `vmagent SIGKILLed, answering again after ${((await injectors.restartVmagent()) / 1000).toFixed(1)} s`;
      case 'foreign-edit': {
        const foreignValue = nextValue();
        const edited = await injectors.foreignEdit(plan.foreignOnWalkedField, foreignValue, () =>
          routedZones(kube, observerSpec),
        );
        if (edited !== undefined && plan.foreignOnWalkedField) known[edited.zone]?.add(foreignValue);
        return edited === undefined
          ? 'no zone out of reads within 60 s: nothing edited'
          : `someone else set ${plan.foreignOnWalkedField ? 'search.latencyOffset' : 'vmselect search.maxQueryDuration'}=${foreignValue} on ${edited.zone}`;
      }
      case 'api-faults':
        faultsBefore = (await injectors.control.stats()).faultsTotal;
        await injectors.startApiFaults(plan.faultRate, plan.faultSeed);
        return `API faults at ${(plan.faultRate * 100).toFixed(0)}% on`;
    }
  };
  const done = await within(180_000, `the ending ${plan.ending} of walk ${plan.index}`, perform());
  history.add(`walk ${plan.index}: ${plan.ending} (${point}): ${done}`);

  // The settle check reads the zones and Rollouts only (the invariants run on in the background).
  const settleInputs = {
    kube,
    reads: { sent: 0, failed: 0, failures: [], backendErrors: 0 },
    vmauthRestartingSince: () => false,
    foreignGenerations: () => ({}),
  };
  // Settled: every zone released, routed, operational, on a known value; both Rollouts Healthy or Degraded.
  let problems: string[] = ['not looked yet'];
  let settledAt: number | undefined;
  while (Date.now() - endedAt < settleBoundMs) {
    try {
      const snapshot = await takeSnapshot(settleInputs, Date.now());
      problems = settleProblems(snapshot, known);
      const rolloutsDone = !problems.some((p) => p.startsWith(`${ns}/`));
      // API faults last until the walks end (or half the bound): the settling itself is watched without them.
      if (faultsBefore !== undefined && (rolloutsDone || Date.now() - endedAt > settleBoundMs / 2)) {
        const injected = await injectors.stopApiFaults(faultsBefore);
        history.add(`walk ${plan.index}: API faults off (${injected} injected)`);
        faultsBefore = undefined;
        continue;
      }
      if (problems.length === 0 && faultsBefore === undefined) {
        settledAt = Date.now();
        for (const r of snapshot.rollouts) {
          const name = r.rollout.slice(ns.length + 1) as SoakRollout;
          if (r.phase === 'Healthy') injectors.markStable(name);
        }
        break;
      }
    } catch (error) {
      problems = [`snapshot failed: ${String(error)}`];
    }
    await sleep(2000);
  }
  if (faultsBefore !== undefined) await injectors.stopApiFaults(faultsBefore);
  if (settledAt === undefined) {
    report({
      at: Date.now(),
      invariant: 'not-settled',
      detail: `${settleBoundMs / 60_000} min after the ending (${plan.ending}): ${problems.join('; ')}`,
    });
  }
  // The next walk starts from what the zones hold now: the value before its change, if it is rolled back.
  const now = await takeSnapshot(settleInputs, Date.now()).catch(() => undefined);
  for (const z of now?.zones ?? []) known[z.zone] = new Set([z.value]);
  return {
    outcome: `${outcome}; ${done}`,
    settleMs: settledAt === undefined ? undefined : settledAt - endedAt,
  };
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(
      `[soak] the soak itself failed (seed ${seed}): ${error instanceof Error ? error.stack : String(error)}`,
    );
    process.exit(2);
  },
);
