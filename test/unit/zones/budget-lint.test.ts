// A zone disruption budget that can never be met (issue 24): a balancer routes only the spec's zones, so while a
// wave of w of the spec's n zones is out of reads at most n − w serve. A minZonesServing above that, or a
// maxZonesOut below a wave, would leave a walk waiting for a budget nothing can free: `vmzones lint`, `render` and
// the step refuse it before anything is touched, naming the field and the numbers (one check, waveBudgetProblem).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { parseSpecDocument, SpecError } from '../../../plugin/zones/spec.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { readBackends } from '../../../plugin/zones/step/target.ts';
import { rollout, run } from '../cli/run.ts';
import { FakeClock } from '../fake-clock.ts';
import {
  ns,
  rolloutObject,
  specDocument,
  stepPluginOf,
  threeZones,
  useVmauthFixture,
  zoneNames,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

const head = 'vmauth: {vmuser: vmauth-read}\nvmagent: {vmagent: vmagent}\n';
const zonesOf = (names: string[]) => `zones:\n${names.map((z) => `  ${z}: {vmcluster: vm-${z}}\n`).join('')}`;
const fourZones = zonesOf(['zone-a', 'zone-b', 'zone-c', 'zone-d']);

function problemsOf(text: string): string[] {
  try {
    parseSpecDocument(text);
  } catch (err) {
    if (err instanceof SpecError) return [...err.problems];
    throw err;
  }
  return [];
}

test('minZonesServing as large as the number of zones is refused: no zone could ever drain', () => {
  const problems = problemsOf(`${head}disruptionBudget: {minZonesServing: 4}\n${fourZones}`);
  assert.equal(problems.length, 1, problems.join('; '));
  assert.match(
    problems[0] ?? '',
    /^disruptionBudget\.minZonesServing: is 4, but the spec has 4 zones: while one zone is out of reads at most 3 serve, so no zone could ever drain; keep it at most 3/,
  );
  assert.deepEqual(problemsOf(`${head}disruptionBudget: {minZonesServing: 3}\n${fourZones}`), []);
});

test('minZonesServing above what serves while the widest wave is out is refused, for waves and maxParallelZones', () => {
  const waves = problemsOf(
    `${head}waves: [[zone-a], [zone-b, zone-c, zone-d]]\ndisruptionBudget: {minZonesServing: 2}\n${fourZones}`,
  );
  assert.equal(waves.length, 1, waves.join('; '));
  assert.match(
    waves[0] ?? '',
    /^disruptionBudget\.minZonesServing: is 2, but the spec has 4 zones: while a wave of 3 zones is out of reads at most 1 serve, so that wave could never drain; keep it at most 1, or make the waves smaller/,
  );
  const parallel = problemsOf(
    `${head}maxParallelZones: 2\ndisruptionBudget: {minZonesServing: 3}\n${fourZones}`,
  );
  assert.match(
    parallel.join('; '),
    /disruptionBudget\.minZonesServing: is 3, .*a wave of 2 zones .*at most 2 serve/,
  );
  assert.deepEqual(
    problemsOf(`${head}maxParallelZones: 2\ndisruptionBudget: {minZonesServing: 2}\n${fourZones}`),
    [],
  );
});

test('maxZonesOut below 1 is refused naming the field; the default budget still allows a one-zone spec', () => {
  assert.match(
    problemsOf(`${head}disruptionBudget: {maxZonesOut: 0}\n${fourZones}`).join('; '),
    /^disruptionBudget\.maxZonesOut: .*>=1/,
  );
  // The default minZonesServing is the rule a walk without a budget always had (never the last serving zone, at
  // the drain): a spec the gates read for one zone stays valid.
  assert.deepEqual(problemsOf(head + zonesOf(['zone-a'])), []);
});

test('vmzones lint and render refuse a budget that can never be met, naming the field and the numbers', async () => {
  const text = `${head}disruptionBudget: {minZonesServing: 4}\n${fourZones}`;
  const lint = await run(['lint', '--spec', 'r.yaml'], { 'r.yaml': rollout(text, '[]\n') });
  assert.notEqual(lint.code, 0);
  assert.match(lint.out + lint.err, /disruptionBudget\.minZonesServing: is 4, but the spec has 4 zones/);
  const render = await run(['render', '--spec', 's.yaml'], { 's.yaml': text });
  assert.notEqual(render.code, 0);
  assert.match(render.err, /disruptionBudget\.minZonesServing: is 4, but the spec has 4 zones/);
});

test('the step refuses a wave that would leave fewer zones serving than minZonesServing, draining none of it', async () => {
  const kube = threeZones(vmauth.port);
  // Valid as a spec (no wave of its own is wider than one zone), but a step over all three zones could drain two
  // and then wait for ever on the third: refused before anything is touched.
  const doc = JSON.parse(specDocument()) as Record<string, unknown>;
  doc.disruptionBudget = { maxZonesOut: 3, minZonesServing: 1 };
  const spec = JSON.stringify(doc);
  kube.put(rolloutObject('walk', { currentPodHash: 'r2', stableRS: 'r1', currentStepIndex: 0 }, spec));
  const wave = await stepPluginOf(kube, clock).run(zoneNames, 'drainReads');
  assert.equal(wave.phase, 'Failed', wave.message);
  assert.match(
    wave.message ?? '',
    /a wave of 3 zones \(zone-a, zone-b, zone-c\) can never drain: the spec's disruptionBudget\.minZonesServing is 1, but the spec has 3 zones: while a wave of 3 zones is out of reads at most 0 serve/,
  );
  const routed = zonesRoutedByVMUser(
    kube.getStored('VMUser', 'vmauth-read').spec?.targetRefs,
    ns,
    readBackends(parseSpecDocument(spec), ns),
  );
  assert.deepEqual(routed, zoneNames);
  for (const zone of zoneNames)
    assert.equal(zoneState(kube.getStored('VMCluster', `vm-${zone}`)).lease, undefined, zone);
});
