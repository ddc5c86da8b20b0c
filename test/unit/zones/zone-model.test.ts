// The zone moves' interleavings explored, not only the scripted ones (issue 35): a model-based test with
// fast-check's `commands` over the in-memory API. Three Rollouts share one VMUser and its zones — "full" walks all
// three, "pair" walks zone-b and zone-c, "alias" calls vm-zone-c `zone-a` (a zone is its object, not its name) —
// and a random sequence of their steps (each call as the controller makes it, with the previous status), races of
// two steps whose balancer and zone writes interleave in a random order, Aborts, promote --full (Terminate),
// reconciler passes, 409s and faults
// injected into the next write (a plugin crash between two writes of a move), and time passing. After every
// command: no balancer over its budget or without a serving zone, no drain record acted on for an object it does not
// name, no zone changed while it serves reads. After the sequence every walk is aborted (as the controller does,
// newest step first) and the reconciler runs: every ending must settle — every zone back in reads, released.
//
// Runs: VMZONES_MODEL_RUNS (default 200, ~4 s, within the unit phase); `npm run test:model` runs 10,000 with a printed
// seed; VMZONES_MODEL_SEED (and VMZONES_MODEL_PATH) replay a failure exactly.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate } from 'node:timers/promises';
import fc from 'fast-check';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { hubOnly } from '../../../plugin/kube/cluster-registry.ts';
import { KubeError } from '../../../plugin/kube/objects.ts';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  rolloutObject,
  routedObjects,
  specOf,
  stepPluginOf,
  threeZones,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);
const objects = ['vm-zone-a', 'vm-zone-b', 'vm-zone-c'] as const;

/** The Rollouts: zone name → VMCluster. */
const walks = {
  full: { 'zone-a': 'vm-zone-a', 'zone-b': 'vm-zone-b', 'zone-c': 'vm-zone-c' },
  pair: { 'zone-b': 'vm-zone-b', 'zone-c': 'vm-zone-c' },
  alias: { 'zone-a': 'vm-zone-c', 'zone-b': 'vm-zone-b' },
} as const;
type WalkName = keyof typeof walks;
const actions = ['drainReads', 'apply', 'restoreReads'] as const;
type Action = (typeof actions)[number];

interface World {
  kube: MemoryKube;
  steps: Record<WalkName, ReturnType<typeof stepPluginOf>>;
  reconciler: ZoneReconciler;
  /** The last status of each walk's step (what the controller passes back), and the steps that completed. */
  previous: Map<string, StepResult>;
  completed: Map<WalkName, { zone: string; action: Action }[]>;
  aborted: Set<WalkName>;
  /** Delays (in event-loop turns) before the next reads and writes: the order two racing steps' calls land in. */
  delays: number[];
  /** Spec changes written to a zone while a balancer routed reads to it (watched on every write). */
  changedWhileRouted: string[];
}

function world(): World {
  const kube = threeZones(vmauth.port);
  for (const [name, zones] of Object.entries(walks)) {
    kube.put(
      rolloutObject(
        name,
        { currentPodHash: `${name}-2`, stableRS: `${name}-1`, currentStepIndex: 0 },
        specOf(zones),
      ),
    );
  }
  const w: World = {
    kube,
    steps: {
      full: stepPluginOf(kube, clock, { rollout: 'full', inCallWaitMs: 0 }),
      pair: stepPluginOf(kube, clock, { rollout: 'pair', inCallWaitMs: 0 }),
      alias: stepPluginOf(kube, clock, { rollout: 'alias', inCallWaitMs: 0 }),
    },
    reconciler: new ZoneReconciler({ kube, clusters: hubOnly(kube), logger: silentLogger, clock }),
    previous: new Map(),
    completed: new Map(),
    aborted: new Set(),
    delays: [],
    changedWhileRouted: [],
  };
  const pause = async () => {
    const turns = w.delays.shift() ?? 0;
    for (let i = 0; i < turns; i++) await setImmediate();
  };
  kube.beforeRead = pause;
  kube.beforePatch = async (what, patch, dryRun) => {
    await pause();
    const name = what.startsWith('VMCluster ') ? (what.split('/')[1] ?? '') : '';
    if (!dryRun && patch.spec !== undefined && routedObjects(kube).includes(name)) {
      w.changedWhileRouted.push(`${name}: ${JSON.stringify(patch.spec)}`);
    }
  };
  return w;
}

/** What must hold between any two commands. */
function checkInvariants(w: World, after: string): void {
  const { kube } = w;
  const vmuser = kube.getStored('VMUser', 'vmauth-read');
  const text = vmuser.metadata.annotations?.['vmzones.io/drained'];
  const records = text === undefined ? {} : (JSON.parse(text) as Record<string, Record<string, unknown>>);
  const routed = routedObjects(kube);
  const where = `after ${after}: routed ${JSON.stringify(routed)}, drained ${Object.keys(records).join(', ') || 'none'}`;
  assert.ok(Object.keys(records).length <= 1, `over the budget (one zone out): ${where}`);
  assert.ok(routed.length >= 1, `no zone serves reads: ${where}`);
  for (const [key, record] of Object.entries(records)) {
    const name = String(record.vmcluster).split('/')[1] ?? '';
    assert.equal(
      key,
      `/VMCluster/${record.vmcluster}`,
      `a record keyed by another object than it names: ${where}`,
    );
    assert.equal(
      record.uid,
      kube.getStored('VMCluster', name).metadata.uid,
      `a record of another uid: ${where}`,
    );
    assert.ok(!routed.includes(name), `${name} is routed while its drain record says it is out: ${where}`);
  }
  assert.deepEqual(w.changedWhileRouted, [], `a zone was changed while it served reads: ${where}`);
}

/** What the runs did, to show they reach the states that matter (printed after the runs). */
const seen: Record<string, number> = {};
function count(what: string): void {
  seen[what] = (seen[what] ?? 0) + 1;
}

const stepKey = (walk: WalkName, zone: string, action: Action) => `${walk}|${zone}|${action}`;

/** The walk's steps in order, as `vmzones render` writes them: each zone drained, changed, restored. */
function stepsOf(walk: WalkName): { zone: string; action: Action }[] {
  return Object.keys(walks[walk]).flatMap((zone) => actions.map((action) => ({ zone, action })));
}

/** The controller's next call of a walk: Run of its current step with the previous status; Successful moves it on
 *  (the last step promotes the revision), Failed aborts the Rollout. */
async function advance(w: World, walk: WalkName): Promise<void> {
  if (w.aborted.has(walk)) return;
  const done = w.completed.get(walk) ?? [];
  const all = stepsOf(walk);
  const step = all[done.length];
  if (step === undefined) return;
  const key = stepKey(walk, step.zone, step.action);
  const result = await w.steps[walk].call('run', step.zone, step.action, w.previous.get(key));
  w.previous.set(key, result);
  count(`${step.action} ${result.phase}`);
  if (result.phase === 'Failed') {
    await abortWalk(w, walk);
    return;
  }
  if (result.phase !== 'Successful') return;
  done.push(step);
  w.completed.set(walk, done);
  w.previous.delete(key);
  w.kube.setStatus(
    'Rollout',
    walk,
    done.length === all.length
      ? { currentStepIndex: done.length, stableRS: `${walk}-2` }
      : { currentStepIndex: done.length },
    ns,
  );
  if (done.length === all.length) count('walk promoted');
}

/** Abort as the controller does: the Rollout says so, then Abort for every completed step, newest first. */
async function abortWalk(w: World, walk: WalkName): Promise<void> {
  if (w.aborted.has(walk)) return;
  w.aborted.add(walk);
  w.kube.setStatus('Rollout', walk, { abort: true }, ns);
  if ((w.completed.get(walk)?.length ?? 0) === stepsOf(walk).length) return;
  count('walk aborted');
  for (const step of [...(w.completed.get(walk) ?? [])].reverse()) {
    await w.steps[walk].call('abort', step.zone, step.action);
  }
  // The step in progress (Running) is aborted too.
  const current = stepsOf(walk)[w.completed.get(walk)?.length ?? 0];
  if (current !== undefined) await w.steps[walk].call('abort', current.zone, current.action);
}

/** `promote --full` while the walk is on a step: the controller calls Terminate of that step and the revision is
 *  stable; the zone in hand keeps what it has and comes back by the reconciler. */
async function promoteFull(w: World, walk: WalkName): Promise<void> {
  if (w.aborted.has(walk)) return;
  w.aborted.add(walk);
  const all = stepsOf(walk);
  const current = all[w.completed.get(walk)?.length ?? 0];
  if (current === undefined) return;
  count('walk promoted --full');
  await w.steps[walk].call('terminate', current.zone, current.action);
  w.kube.setStatus('Rollout', walk, { currentStepIndex: all.length, stableRS: `${walk}-2` }, ns);
}

type Command = fc.AsyncCommand<object, World>;

const walkArb = fc.constantFrom<WalkName>('full', 'pair', 'alias');

const commandArbs: fc.Arbitrary<Command>[] = [
  walkArb.map(
    (walk): Command => ({
      check: () => true,
      run: async (_m, w) => {
        await advance(w, walk);
        checkInvariants(w, `${walk}'s next call`);
      },
      toString: () => `advance(${walk})`,
    }),
  ),
  fc
    .record({ a: walkArb, b: walkArb, delays: fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 40 }) })
    .filter(({ a, b }) => a !== b)
    .map(
      ({ a, b, delays }): Command => ({
        check: () => true,
        run: async (_m, w) => {
          w.delays = [...delays];
          await Promise.all([advance(w, a), advance(w, b)]);
          w.delays = [];
          checkInvariants(w, `race of ${a} and ${b}`);
        },
        toString: () => `race(${a}, ${b}, [${delays.join(',')}])`,
      }),
    ),
  walkArb.map(
    (walk): Command => ({
      check: () => true,
      run: async (_m, w) => {
        await abortWalk(w, walk);
        checkInvariants(w, `abort ${walk}`);
      },
      toString: () => `abort(${walk})`,
    }),
  ),
  walkArb.map(
    (walk): Command => ({
      check: () => true,
      run: async (_m, w) => {
        await promoteFull(w, walk);
        checkInvariants(w, `promote --full ${walk}`);
      },
      toString: () => `promoteFull(${walk})`,
    }),
  ),
  fc.constant<Command>({
    check: () => true,
    run: async (_m, w) => {
      await w.reconciler.tick();
      checkInvariants(w, 'a reconciler pass');
    },
    toString: () => 'reconcile',
  }),
  fc
    .record({
      kind: fc.constantFrom('VMUser', 'VMCluster'),
      fault: fc.constantFrom('conflict', 'unavailable'),
    })
    .map(
      ({ kind, fault }): Command => ({
        check: () => true,
        run: async (_m, w) => {
          // The next write of that kind fails: a 409, or a crash of the plugin between two writes of a move.
          w.kube.failNextPatch.set(
            kind,
            new KubeError(fault as 'conflict', `injected ${fault}`, fault === 'conflict' ? 409 : 503),
          );
        },
        toString: () => `fault(${kind}, ${fault})`,
      }),
    ),
  fc.integer({ min: 1, max: 20 }).map(
    (minutes): Command => ({
      check: () => true,
      run: async () => {
        clock.advance(minutes * 60_000);
      },
      toString: () => `wait(${minutes} min)`,
    }),
  ),
];

/** A walk's next call is the most frequent command, as it is in a real rollout; races come next. */
const [advanceArb, raceArb, ...others] = commandArbs;
const weighted =
  advanceArb === undefined || raceArb === undefined
    ? commandArbs
    : [...Array.from({ length: 8 }, () => advanceArb), raceArb, raceArb, ...others];

/** After the sequence: every walk aborted, faults cleared, the reconciler runs until nothing is left to do. */
async function settle(w: World): Promise<void> {
  w.kube.failNextPatch.clear();
  for (const walk of Object.keys(walks) as WalkName[]) await abortWalk(w, walk);
  for (let pass = 0; pass < 40; pass++) {
    const progress = await w.reconciler.tick();
    for (const p of Object.values(progress)) count(`reconciler ${p}`);
    if (Object.values(progress).every((p) => p === 'done')) break;
    clock.advance(60_000);
  }
  const routed = routedObjects(w.kube);
  const left = objects.map((name) => {
    const { lease, maintenance, handoff } = zoneState(w.kube.getStored('VMCluster', name));
    return {
      name,
      routed: routed.includes(name),
      lease: lease?.rollout,
      maintenance: maintenance?.reason,
      handoff: handoff?.message,
    };
  });
  const unsettled = left.filter((z) => !z.routed || z.lease || z.maintenance || z.handoff);
  assert.deepEqual(unsettled, [], 'every ending settles: each zone in reads, released');
  assert.equal(
    w.kube.getStored('VMUser', 'vmauth-read').metadata.annotations?.['vmzones.io/drained'],
    undefined,
  );
}

const runs = Number(process.env.VMZONES_MODEL_RUNS ?? 200);
const seed =
  process.env.VMZONES_MODEL_SEED === undefined
    ? Date.now() % 2 ** 31
    : Number(process.env.VMZONES_MODEL_SEED);

/** VMZONES_MODEL_MINUTES: stop after this long (the runs done so far are printed, a stop is not a failure). */
const minutes =
  process.env.VMZONES_MODEL_MINUTES === undefined ? undefined : Number(process.env.VMZONES_MODEL_MINUTES);

test(`the zone moves under random schedules of three Rollouts, Aborts, reconciler passes and faults (${runs} runs)`, async () => {
  console.log(
    `zone model: ${runs} runs, seed ${seed}${minutes === undefined ? '' : `, at most ${minutes} min`}`,
  );
  const started = Date.now();
  let ran = 0;
  await fc.assert(
    fc.asyncProperty(fc.commands(weighted, { maxCommands: 60 }), async (commands) => {
      ran++;
      const w = world();
      await fc.asyncModelRun(() => ({ model: {}, real: w }), commands);
      await settle(w);
    }),
    {
      numRuns: runs,
      seed,
      ...(process.env.VMZONES_MODEL_PATH === undefined ? {} : { path: process.env.VMZONES_MODEL_PATH }),
      // A counterexample is printed with its seed and path: replay it with VMZONES_MODEL_SEED / _PATH.
      verbose: 1,
      ...(minutes === undefined
        ? {}
        : { interruptAfterTimeLimit: minutes * 60_000, markInterruptAsFailure: false }),
    },
  );
  console.log(
    `zone model: ${ran} runs done in ${((Date.now() - started) / 1000).toFixed(0)} s, seed ${seed}`,
  );
  console.log(`zone model: what the runs did: ${JSON.stringify(seen)}`);
  // A walk promoted (all its steps done) is rare where three walks contend for one zone out; the figure is printed.
  for (const reached of ['restoreReads Successful', 'walk aborted', 'reconciler done']) {
    assert.ok((seen[reached] ?? 0) > 0, `no run reached ${reached}: the model explores too little`);
  }
});
