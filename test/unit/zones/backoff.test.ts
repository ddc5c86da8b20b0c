// Issue 21 item 9: a zone that cannot progress is retried with exponential backoff (the next pass, then 10, 20,
// 40 s, at most every 60 s) and its warning is logged once per change of reason, not at every 5 s pass. The
// bookkeeping (plugin/zones/reconciler/zone-backoff.ts) on its own clock, then the reconciler over the in-memory API with a
// balancer it may not patch.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Logger, silentLogger } from '../../../plugin/goplugin/index.ts';
import { KubeError, type KubeObjects } from '../../../plugin/kube/objects.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { ZoneBackoff } from '../../../plugin/zones/reconciler/zone-backoff.ts';
import { FakeClock } from '../fake-clock.ts';
import { rolloutObject, stepPluginOf, threeZones, useVmauthFixture } from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

test('the backoff: next pass, then 10, 20, 40, 60, 60 s; a warning on the first failure and on a new reason only', () => {
  let now = 0;
  const backoff = new ZoneBackoff({ now: () => now });
  const waits: number[] = [];
  const logged: boolean[] = [];
  for (let i = 0; i < 6; i++) {
    assert.ok(backoff.due('z'));
    const { log, retryInMs } = backoff.failed('z', 'forbidden');
    waits.push(retryInMs);
    logged.push(log);
    if (retryInMs > 0) {
      now += retryInMs - 1;
      assert.ok(!backoff.due('z'), `still resting 1 ms before the ${i + 1}th retry`);
      now += 1;
    }
  }
  assert.deepEqual(waits, [0, 10_000, 20_000, 40_000, 60_000, 60_000]);
  assert.deepEqual(logged, [true, false, false, false, false, false]);
  assert.equal(backoff.failed('z', 'unavailable').log, true, 'a new reason is said');
  assert.equal(backoff.failed('z', 'unavailable').log, false);
  assert.ok(backoff.succeeded('z'));
  assert.ok(backoff.due('z'));
  assert.equal(backoff.failed('z', 'unavailable').retryInMs, 0, 'a success starts over');
  backoff.failed('z', 'unavailable', true);
  assert.ok(backoff.restingHandedOver('z'));
  backoff.keepOnly(new Set());
  assert.ok(!backoff.restingHandedOver('z') && backoff.due('z'), 'a zone no longer listed is forgotten');
});

test('the reconciler rests a zone whose balancer it may not patch, warns once per reason, and finishes it later', async () => {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  const { run } = stepPluginOf(kube, clock);
  const step = (action: string) => run('zone-a', action);
  const drained = await step('drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.equal((await step('apply')).phase, 'Successful');
  // promote --full with zone-a out of reads: the reconciler must put it back, which patches the VMUser.
  kube.setStatus('Rollout', 'walk', { stableRS: 'rev-r', currentStepIndex: 9 });

  let fault: KubeError | undefined = new KubeError(
    'forbidden',
    'patching VMUser vm/vmauth-read: forbidden',
    403,
  );
  let vmuserPatches = 0;
  const guarded: KubeObjects = {
    get: (ref) => kube.get(ref),
    list: (...args) => kube.list(...args),
    create: (object) => kube.create(object),
    mergePatch: async (ref, patch, resourceVersion, options) => {
      if (ref.kind === 'VMUser') {
        vmuserPatches++;
        if (fault !== undefined) throw fault;
      }
      return kube.mergePatch(ref, patch, resourceVersion, options);
    },
  };
  const warnings: string[] = [];
  const logger: Logger = {
    ...silentLogger,
    info: (message, fields) => warnings.push(`info ${message} ${String(fields?.error ?? '')}`),
    warn: (message, fields) => warnings.push(`warn ${message} ${String(fields?.error ?? '')}`),
  };
  const reconciler = new ZoneReconciler({ kube: guarded, logger, clock });
  const notAdvanced = () => warnings.filter((w) => w.includes('zone not advanced'));

  // One pass every 5 s for 2 minutes (25 passes): the zone is tried at 0 s, at the next pass, then 10, 20 and 40 s
  // after each failure (the next, 60 s later at 135 s, is beyond the window); every other pass leaves it resting.
  const triedAt: number[] = [];
  for (let second = 0; second <= 120; second += 5) {
    const before = vmuserPatches;
    const progress = await reconciler.tick();
    assert.equal(progress['vm/vm-zone-a'], 'working', `at ${second} s`);
    if (vmuserPatches > before) triedAt.push(second);
    clock.advance(5_000);
  }
  assert.deepEqual(triedAt, [0, 5, 15, 35, 75]);
  assert.equal(notAdvanced().length, 1, warnings.join('\n'));
  assert.match(notAdvanced()[0] ?? '', /^warn .*forbidden/);

  // A new reason is said once more.
  fault = new KubeError('forbidden', 'patching VMUser vm/vmauth-read: forbidden by a new policy', 403);
  clock.advance(60_000);
  await reconciler.tick();
  clock.advance(60_000);
  await reconciler.tick();
  assert.equal(notAdvanced().length, 2);
  assert.match(notAdvanced()[1] ?? '', /a new policy/);

  // The fault goes: at its next try the zone comes back and is released.
  fault = undefined;
  let progress: Record<string, string> = {};
  for (let i = 0; i < 10 && progress['vm/vm-zone-a'] !== 'done'; i++) {
    clock.advance(60_000);
    progress = await reconciler.tick();
  }
  assert.equal(progress['vm/vm-zone-a'], 'done');
});

test('a pass that keeps failing (the zones cannot be listed) is warned about once per reason', async () => {
  let lists = 0;
  let reason = 'listing VMCluster in all namespaces: HTTP 403: forbidden';
  const failing: KubeObjects = {
    get: async () => {
      throw new KubeError('notFound', 'not found', 404);
    },
    list: async () => {
      lists++;
      throw new KubeError('forbidden', reason, 403);
    },
    create: async () => {
      throw new KubeError('forbidden', 'forbidden', 403);
    },
    mergePatch: async () => {
      throw new KubeError('forbidden', 'forbidden', 403);
    },
  };
  const warnings: string[] = [];
  const logger: Logger = {
    ...silentLogger,
    warn: (message, fields) => warnings.push(`${message} ${String(fields?.error ?? '')}`),
  };
  const reconciler = new ZoneReconciler({ clock, kube: failing, logger, intervalMs: 1 });
  const passes = async (count: number) => {
    const target = lists + count;
    while (lists < target) await new Promise((resolve) => setImmediate(resolve));
  };
  reconciler.start();
  await passes(15);
  reason = 'listing VMCluster in all namespaces: HTTP 503: unavailable';
  await passes(15);
  await reconciler.stop();
  const failed = warnings.filter((w) => w.startsWith('reconciler pass failed'));
  assert.deepEqual(
    failed.map((w) => w.replace(/^.*HTTP (\d+).*$/, '$1')),
    ['403', '503'],
    warnings.join('\n'),
  );
});

test('a transient fault (409, 429, 5xx, timeout) never rests a zone; its warning is still said once per reason', () => {
  let now = 0;
  const backoff = new ZoneBackoff({ now: () => now });
  for (let pass = 0; pass < 6; pass++) {
    const { log, retryInMs } = backoff.failed('z', 'HTTP 503 from the API server', true, true);
    assert.equal(retryInMs, 0, `pass ${pass}`);
    assert.equal(log, pass === 0, `pass ${pass}: said once`);
    now += 5_000;
    assert.ok(backoff.due('z'), `pass ${pass}: tried at the next pass`);
  }
  // A lasting fault after them still rests the zone as before.
  assert.equal(backoff.failed('z', 'forbidden', true).retryInMs, 0);
  assert.equal(backoff.failed('z', 'forbidden', true).retryInMs, 10_000);
});
