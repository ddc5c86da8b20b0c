// render --write: the walk in a Rollout's steps is replaced and every other byte of the file stays.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { action, gate, rollout, run, spec, zoneSteps } from './run.ts';

const configMap =
  '---\n# another object, its own style\napiVersion: v1\nkind: ConfigMap\nmetadata:\n    name: four-indent\ndata: {a: b}\n';

function stepsOf(text: string): unknown[] {
  const doc = parseAllDocuments(text)[0];
  assert.ok(doc !== undefined && 'getIn' in doc);
  return (doc.toJS() as { spec: { strategy: { canary: { steps: unknown[] } } } }).spec.strategy.canary.steps;
}

/** The lines of `after` that are not in `before` and the other way round (an LCS line diff). */
function lineDiff(before: string, after: string): { added: string[]; removed: string[] } {
  const a = before.split('\n');
  const b = after.split('\n');
  const lcs = a.map(() => new Array<number>(b.length + 1).fill(0));
  lcs.push(new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const added: string[] = [];
  const removed: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) added.push(b[j++]!);
    else removed.push(a[i++]!);
  }
  return { added, removed };
}

test('--write adds the missing zone and gates, keeps comments, the pause, the user steps and the other documents', async () => {
  const three = spec.replace('zone-b: {vmcluster: b}}', 'zone-b: {vmcluster: b}, zone-c: {vmcluster: c}}');
  const walk = `# zone-a\n${zoneSteps('zone-a', false)}- pause: {duration: 5m}  # soak\n# zone-b\n${zoneSteps('zone-b', false)}`;
  const before = `${rollout(three, `- setWeight: 0  # first, ours\n${walk}- setWeight: 100\n`)}${configMap}`;
  const r = await run(['render', '--write', 'r.yaml'], { 'r.yaml': before });
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, '');
  assert.match(r.err, /r\.yaml: Rollout vm: wrote 14 steps walking zone-a, zone-b, zone-c/);
  const after = r.files['r.yaml']!;
  const indent = (yaml: string) =>
    yaml
      .trimEnd()
      .split('\n')
      .map((l) => `        ${l}`);
  assert.deepEqual(lineDiff(before, after), {
    added: indent(`${gate('zone-a')}${gate('zone-b')}- pause: {duration: 5m}\n${zoneSteps('zone-c')}`),
    removed: [],
  });
  assert.ok(after.endsWith(configMap));
  const steps = stepsOf(after);
  assert.deepEqual([steps[0], steps[steps.length - 1]], [{ setWeight: 0 }, { setWeight: 100 }]);

  const lint = await run(['lint', '--spec', 'r.yaml'], { 'r.yaml': after });
  assert.equal(lint.code, 0, lint.err);
  const again = await run(['render', '--write', 'r.yaml'], { 'r.yaml': after });
  assert.equal(again.files['r.yaml'], after);
  assert.match(again.err, /already up to date/);
});

test('--write replaces a stale walk (a zone missing, steps out of order); a user step stays after the action it followed', async () => {
  const three = spec.replace('zone-b: {vmcluster: b}}', 'zone-b: {vmcluster: b}, zone-c: {vmcluster: c}}');
  const old = `${action('zone-a', 'apply')}${action('zone-a', 'drainReads')}${gate('zone-a')}${action('zone-a', 'restoreReads')}- setWeight: 50\n- pause: {}\n${zoneSteps('zone-c')}`;
  const r = await run(
    ['render', '--write', 'r.yaml', '--spec', 's.yaml', '--order', 'zone-a,zone-b,zone-c'],
    {
      'r.yaml': rollout(spec, old),
      's.yaml': three,
    },
  );
  assert.equal(r.code, 0, r.err);
  const steps = stepsOf(r.files['r.yaml']!).map((s) => JSON.stringify(s));
  assert.equal(steps.length, 15);
  assert.equal(steps[4], '{"setWeight":50}', 'after zone-a restoreReads, before the pause');
  assert.equal(steps[5], '{"pause":{}}', 'the manual pause is kept between zones');
  assert.match(steps[6]!, /"zone":"zone-b","action":"drainReads"/);
  const lint = await run(['lint', '--spec', 's.yaml'], {
    's.yaml': r.files['r.yaml']!.replace(spec.split('\n')[2]!, three.split('\n')[2]!),
  });
  assert.equal(lint.code, 0, lint.err);
});

test('--write into an empty or flow list writes a block list under the key; --write - filters stdin to stdout', async () => {
  const empty = rollout(spec, '').replace('steps:\n', 'steps: []  # to fill\n');
  const r = await run(['render', '--write', '-'], { '-': empty });
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /\n {6}steps:\n {8}- plugin:\n {12}name: vmzones\/step\n/);
  assert.match(r.out, /action: restoreReads {2}# to fill\n$/);
  assert.equal(stepsOf(r.out).length, 8, 'two zones of 4 steps, no pause between them by default');
  assert.equal((await run(['lint', '--spec', '-'], { '-': r.out })).code, 0);
});

test('--write refuses what it cannot do cleanly, and leaves the file alone', async () => {
  const blueGreen = rollout(spec, '').replace(
    'canary:\n      steps:\n',
    'blueGreen: {activeService: a}\n    canary:\n      steps: []\n',
  );
  const orphan = rollout(spec, `${zoneSteps('zone-a')}- setWeight: 5\n${zoneSteps('zone-b')}`);
  for (const [argv, text, message] of [
    [['render', '--write', 'r.yaml'], blueGreen, /uses the blueGreen strategy/],
    [
      ['render', '--write', 'r.yaml', '--only', 'zone-b'],
      orphan,
      /steps\[4\] \(setWeight\) follows zone-a's restoreReads, which the new walk leaves out/,
    ],
    [
      ['render', '--write', 'r.yaml'],
      rollout(spec, '').replace(/ {4}canary:\n {6}steps:\n/, '    canary: {}\n'),
      /no spec\.strategy\.canary\.steps list/,
    ],
  ] as const) {
    const r = await run([...argv], { 'r.yaml': text });
    assert.equal(r.code, 1, r.err);
    assert.equal(r.files['r.yaml'], text);
    assert.match(r.err, message);
  }
});

test('--write keeps a walk without pauses without them, and asks which pause when the walk has several', async () => {
  const three = spec.replace('zone-b: {vmcluster: b}', 'zone-b: {vmcluster: b}, zone-c: {vmcluster: c}');
  const bare = rollout(three, `${zoneSteps('zone-a')}${zoneSteps('zone-b')}`);
  const kept = await run(['render', '--write', 'r.yaml'], { 'r.yaml': bare });
  assert.equal(kept.code, 0, kept.err);
  assert.ok(
    !stepsOf(kept.files['r.yaml'] ?? '').some((step) => 'pause' in (step as object)),
    'no pause added',
  );

  const mixed = rollout(
    three,
    `${zoneSteps('zone-a')}- pause: {duration: 5m}\n${zoneSteps('zone-b')}- pause: {}\n${zoneSteps('zone-c')}`,
  );
  const refused = await run(['render', '--write', 'r.yaml'], { 'r.yaml': mixed });
  assert.equal(refused.code, 2, refused.err);
  assert.match(
    refused.err,
    /different pauses between zones \(5m, manual\); say which one every zone gets with --pause/,
  );
  assert.equal(refused.files['r.yaml'], mixed, 'the file is left alone');
  const chosen = await run(['render', '--write', 'r.yaml', '--pause', 'manual'], { 'r.yaml': mixed });
  assert.equal(chosen.code, 0, chosen.err);
  const pauses = stepsOf(chosen.files['r.yaml'] ?? '').filter((step) => 'pause' in (step as object));
  assert.deepEqual(pauses, [{ pause: {} }, { pause: {} }]);

  const unreadable = rollout(
    three,
    `${zoneSteps('zone-a')}- pause: {duration: soon}\n${zoneSteps('zone-b')}${zoneSteps('zone-c')}`,
  );
  const bad = await run(['render', '--write', 'r.yaml'], { 'r.yaml': unreadable });
  assert.equal(bad.code, 2, bad.err);
  assert.match(bad.err, /pause between zones "soon" is not a Go duration/);
});

test("kustomize build output: lint finds the zone its steps miss; --write adds only that, in kustomize's list style", async () => {
  const built = readFileSync(new URL('fixtures/kustomize-build.out', import.meta.url), 'utf8');
  const lint = await run(['lint', '--spec', '-'], { '-': built });
  assert.equal(lint.code, 1);
  assert.match(lint.err, /stdin: Rollout vm-zones: 1 problem\(s\)\n {2}- zone zone-c is never walked/);
  const r = await run(['render', '--write', 'k.yaml'], { 'k.yaml': built });
  assert.equal(r.code, 0, r.err);
  const diff = lineDiff(built, r.files['k.yaml']!);
  assert.deepEqual(diff.removed, []);
  assert.equal(diff.added.length, 24);
  assert.deepEqual(diff.added.slice(0, 2), ['      - pause:', '          duration: 5m']);
  assert.ok(
    diff.added.includes('          - templateName: vmzones-zone-healthy'),
    "a list at its key's column",
  );
  assert.equal((await run(['lint', '--spec', 'k.yaml'], r.files)).code, 0);
});
