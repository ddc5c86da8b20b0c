// The gates read an AnalysisRun's owner once per run, not on every call (issue 26 item 5: with 50 AnalysisRuns in
// flight the AnalysisRun get was a third of the gates' API requests, docs/scale.md). The Rollout, whose spec
// document the zone settings come from, is still read on every call; a run known only by name, or another run
// under the same name (another uid), is read again.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createGatesProvider } from '../../../plugin/gates/provider.ts';
import type { AnalysisRunView, MeasurementResult, MetricView } from '../../../plugin/rollouts/types.ts';
import { MemoryKube } from '../kube/memory-kube.ts';
import { ownedRun } from './owned-run.ts';

const specDocument = [
  'vmauth: {vmuser: vmauth-read}',
  'vmagent: {vmagent: vmagent}',
  'zones:',
  '  zone-a: {vmcluster: vm-zone-a}',
].join('\n');
const metric: MetricView = {
  name: 'gate',
  provider: { plugin: { 'vmzones/gates': { gate: 'vmclusterReady', zone: 'zone-a', pollInterval: '10s' } } },
};

function world() {
  const kube = ownedRun(new MemoryKube(), { 'vmzones.io/spec': specDocument }).put({
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMCluster',
    metadata: { name: 'vm-zone-a', namespace: 'vm', generation: 2 },
    status: { updateStatus: 'expanding', observedGeneration: 2 },
  });
  let now = Date.UTC(2026, 4, 1, 12, 0, 0);
  const provider = createGatesProvider({ kube: () => kube, now: () => now });
  const reads = (kind: string) => kube.reads.filter((r) => r.startsWith(`${kind} `)).length;
  /** Three calls of the gate as the controller makes them: Run, then Resume twice, 10 s apart. */
  const threeCalls = async (run: AnalysisRunView) => {
    let last: MeasurementResult = await provider.run(run, metric);
    for (let i = 0; i < 2; i++) {
      assert.equal(last.phase, 'Running', last.message);
      now += 10_000;
      last = await provider.resume(run, metric, {
        phase: last.phase,
        value: last.value,
        metadata: last.metadata,
      });
    }
  };
  return { kube, reads, threeCalls };
}

const runView = (uid?: string): AnalysisRunView => ({
  metadata: { name: 'ro-abc-3', namespace: 'vm', ...(uid === undefined ? {} : { uid }) },
  spec: {},
  status: {},
});

test('the AnalysisRun is read once for its owner; the owner Rollout on every call', async () => {
  const { reads, threeCalls } = world();
  await threeCalls(runView('run-uid-1'));
  assert.equal(reads('AnalysisRun'), 1, 'one read of the AnalysisRun for three calls');
  assert.equal(reads('Rollout'), 3, 'the spec document is read on every call');
});

test('a run without a uid, or another run under the same name, is read again', async () => {
  const { reads, threeCalls } = world();
  await threeCalls(runView());
  assert.equal(reads('AnalysisRun'), 3, 'no uid: nothing tells this run from a new one of the same name');
  await threeCalls(runView('run-uid-1'));
  await threeCalls(runView('run-uid-2'));
  assert.equal(reads('AnalysisRun'), 5, 'one more read per uid');
});
