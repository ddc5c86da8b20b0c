// How often a drainReads Run reads the VMUser (issue 26 item 5: with 50 walks waiting on VMUsers no operator
// renders, these reads were most of the plugins' API requests). A Run that wrote nothing judges the routing it read;
// a Run that wrote reads once after its write and judges the evidence on that read; the taken-up VMUser's reload
// baseline comes from the same read. The proof's re-read of the routing (drain.ts, issue 21 item 2) stays.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { RolloutView, StepResult } from '../../../plugin/rollouts/types.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { FakeClock } from '../fake-clock.ts';
import { ns, rolloutObject, threeZones, useVmauthFixture } from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);
const vmuser = `VMUser ${ns}/vmauth-read`;

function setup(operatorRenders: boolean) {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  if (!operatorRenders) kube.heldBack.add(vmuser);
  const plugin = createZoneStepPlugin({
    clock,
    kube,
    reconciler: false,
    logger: silentLogger,
    inCallWaitMs: 0,
  });
  const rollout = () => kube.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as RolloutView;
  const drain = (previous?: StepResult) =>
    plugin.run(rollout(), {
      pluginName: 'vmzones/step',
      config: { zone: 'zone-a', action: 'drainReads' },
      status: previous?.status,
    });
  /** The VMUser's reads (and writes, as `patch …`) since the last call, in order. */
  const vmuserLog = () => {
    const log = kube.reads.filter((r) => r.endsWith(vmuser));
    kube.reads.length = 0;
    return log;
  };
  return { kube, drain, vmuserLog };
}

test('a drainReads Run that finds the zone drained already reads the VMUser once', async () => {
  const { drain, vmuserLog } = setup(false);
  const first = await drain();
  assert.equal((first.status as { state?: string }).state, 'waitingForVmauth', first.message);
  vmuserLog();
  const again = await drain(first);
  assert.equal((again.status as { state?: string }).state, 'waitingForVmauth', again.message);
  assert.match(again.message ?? '', /has not rendered VMUser vm\/vmauth-read yet/);
  assert.deepEqual(
    vmuserLog(),
    [vmuser],
    'nothing was written: the routing read is what the evidence rests on',
  );
});

test('the drain judges the evidence on the one read after its write', async () => {
  const { drain, vmuserLog } = setup(false);
  vmuserLog();
  const first = await drain();
  assert.equal((first.status as { state?: string }).state, 'waitingForVmauth', first.message);
  const log = vmuserLog();
  const written = log.lastIndexOf(`patch ${vmuser}`);
  assert.ok(written >= 0, `the drain wrote the VMUser: ${log.join(', ')}`);
  assert.deepEqual(log.slice(written + 1), [vmuser], `after the write: ${log.slice(written + 1).join(', ')}`);
});

test('a taken-up VMUser: its reload baseline comes from the read that showed it taken up', async () => {
  const { drain, vmuserLog } = setup(true);
  vmuserLog();
  const result = await drain();
  assert.equal(result.phase, 'Successful', result.message);
  const log = vmuserLog();
  const afterWrite = log.slice(log.lastIndexOf(`patch ${vmuser}`) + 1);
  // The read after the write (routing, taken up, baseline) and the re-read that proves the routing held.
  assert.deepEqual(afterWrite, [vmuser, vmuser], `after the write: ${afterWrite.join(', ')}`);
});
