// Waves in the spec document (issue 24): `vmzones render` writes one set of steps per wave, a spec without waves
// renders exactly the steps it always did (pinned by the literal below, the output of render before waves), and
// a spec whose waves leave a zone out or name one twice is refused by lint, render and the step alike.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { rollout, run } from './run.ts';

const head = 'vmauth: {vmuser: vmauth-read}\nvmagent: {vmagent: vmagent}\n';
const zonesOf = (names: string[]) => `zones:\n${names.map((z) => `  ${z}: {vmcluster: vm-${z}}\n`).join('')}`;
const sixZones = ['zone-a', 'zone-b', 'zone-c', 'zone-d', 'zone-e', 'zone-f'];

/** `vmzones render --pause 1m` of this spec before waves existed (git history; 1m was then the default), as JSON. */
const todaysSteps = `[{"plugin":{"name":"vmzones/step","config":{"zone":"zone-a","action":"drainReads"}}},{"plugin":{"name":"vmzones/step","config":{"zone":"zone-a","action":"apply"}}},{"analysis":{"templates":[{"templateName":"vmzones-zone-healthy","clusterScope":true}],"args":[{"name":"zone","value":"zone-a"}]}},{"plugin":{"name":"vmzones/step","config":{"zone":"zone-a","action":"restoreReads"}}},{"pause":{"duration":"1m"}},{"plugin":{"name":"vmzones/step","config":{"zone":"zone-b","action":"drainReads"}}},{"plugin":{"name":"vmzones/step","config":{"zone":"zone-b","action":"apply"}}},{"analysis":{"templates":[{"templateName":"vmzones-zone-healthy","clusterScope":true}],"args":[{"name":"zone","value":"zone-b"}]}},{"plugin":{"name":"vmzones/step","config":{"zone":"zone-b","action":"restoreReads"}}}]`;

async function rendered(specText: string, ...flags: string[]) {
  const r = await run(['render', '--spec', 's.yaml', '-o', 'json', ...flags], { 's.yaml': specText });
  assert.equal(r.code, 0, r.err);
  return (JSON.parse(r.out) as { steps: unknown[] }).steps;
}

test('a spec without waves renders exactly the steps it rendered before waves', async () => {
  assert.deepEqual(
    await rendered(head + zonesOf(['zone-a', 'zone-b']), '--pause', '1m'),
    JSON.parse(todaysSteps),
  );
});

test('waves of one zone each render exactly the walk without waves', async () => {
  const steps = await rendered(
    `${head}waves: [[zone-a], [zone-b]]\n${zonesOf(['zone-a', 'zone-b'])}`,
    '--pause',
    '1m',
  );
  assert.deepEqual(steps, JSON.parse(todaysSteps));
});

test('waves 1, 2, 3: one set of steps per wave (drain all, apply, one gate for the wave, restore), a pause between waves', async () => {
  const steps = await rendered(
    `${head}waves: [[zone-a], [zone-b, zone-c], [zone-d, zone-e, zone-f]]\n${zonesOf(sixZones)}`,
    '--pause',
    'manual',
  );
  const action = (zones: string[], a: string) => ({
    plugin: {
      name: 'vmzones/step',
      config: zones.length === 1 ? { zone: zones[0], action: a } : { zones, action: a },
    },
  });
  const gate = (zones: string[]) => ({
    analysis: {
      templates: [{ templateName: 'vmzones-zone-healthy', clusterScope: true }],
      args: [{ name: 'zone', value: zones.join(',') }],
    },
  });
  const wave = (zones: string[]) => [
    action(zones, 'drainReads'),
    action(zones, 'apply'),
    gate(zones),
    action(zones, 'restoreReads'),
  ];
  assert.deepEqual(steps, [
    ...wave(['zone-a']),
    { pause: {} },
    ...wave(['zone-b', 'zone-c']),
    { pause: {} },
    ...wave(['zone-d', 'zone-e', 'zone-f']),
  ]);
});

test('maxParallelZones cuts the order (the spec order, or --order) into waves', async () => {
  const spec = `${head}maxParallelZones: 2\n${zonesOf(['zone-a', 'zone-b', 'zone-c'])}`;
  const waveOf = (steps: unknown[]) =>
    steps.flatMap((s) => {
      const config = (s as { plugin?: { config: { zone?: string; zones?: string[]; action: string } } })
        .plugin?.config;
      return config?.action === 'drainReads' ? [config.zones ?? [config.zone]] : [];
    });
  assert.deepEqual(waveOf(await rendered(spec)), [['zone-a', 'zone-b'], ['zone-c']]);
  assert.deepEqual(waveOf(await rendered(spec, '--order', 'zone-c,zone-b,zone-a')), [
    ['zone-c', 'zone-b'],
    ['zone-a'],
  ]);
  const inSpec = `${head}maxParallelZones: 2\norder: [zone-b, zone-c, zone-a]\n${zonesOf(['zone-a', 'zone-b', 'zone-c'])}`;
  assert.deepEqual(waveOf(await rendered(inSpec)), [['zone-b', 'zone-c'], ['zone-a']]);
});

test('waves that leave a zone out or name one twice are refused by render and lint, naming the zone', async () => {
  const leftOut = `${head}waves: [[zone-a], [zone-b]]\n${zonesOf(['zone-a', 'zone-b', 'zone-c'])}`;
  const twice = `${head}waves: [[zone-a], [zone-b, zone-a], [zone-c]]\n${zonesOf(['zone-a', 'zone-b', 'zone-c'])}`;
  for (const [text, problem] of [
    [leftOut, /waves: the walk in waves leaves out zone-c/],
    [twice, /waves: zone\(s\) listed twice: zone-a/],
  ] as const) {
    const r = await run(['render', '--spec', 's.yaml'], { 's.yaml': text });
    assert.notEqual(r.code, 0);
    assert.match(r.err, problem);
    const lint = await run(['lint', '--spec', 'r.yaml'], { 'r.yaml': rollout(text, '[]\n') });
    assert.notEqual(lint.code, 0);
    assert.match(lint.out + lint.err, problem);
  }
});

test('a disruption budget narrower than a wave is refused; waves with --order are refused', async () => {
  const narrow = `${head}waves: [[zone-a], [zone-b, zone-c]]\ndisruptionBudget: {maxZonesOut: 1}\n${zonesOf(['zone-a', 'zone-b', 'zone-c'])}`;
  const r = await run(['render', '--spec', 's.yaml'], { 's.yaml': narrow });
  assert.notEqual(r.code, 0);
  assert.match(r.err, /disruptionBudget\.maxZonesOut: is 1, but a wave takes 2 zones out of reads at once/);
  const waves = `${head}waves: [[zone-a], [zone-b]]\n${zonesOf(['zone-a', 'zone-b'])}`;
  const ordered = await run(['render', '--spec', 's.yaml', '--order', 'zone-b,zone-a'], { 's.yaml': waves });
  assert.notEqual(ordered.code, 0);
  assert.match(ordered.err, /--order: the spec document lists its waves/);
});

test('render --write puts the waves into the Rollout, and lint accepts them; zones of different waves must not overlap', async () => {
  const spec = `${head}waves: [[zone-a], [zone-b, zone-c]]\n${zonesOf(['zone-a', 'zone-b', 'zone-c'])}`;
  const written = await run(['render', '--write', 'r.yaml', '--pause', '1m'], {
    'r.yaml': rollout(spec, '[]\n'),
  });
  assert.equal(written.code, 0, written.err);
  assert.match(written.err, /wrote 9 steps walking zone-a, zone-b\+zone-c/);
  const file = written.files['r.yaml'] ?? '';
  const lint = await run(['lint', '--spec', 'r.yaml'], { 'r.yaml': file });
  assert.equal(lint.code, 0, lint.out + lint.err);
  // zone-c's wave starting before zone-a's ends is an overlap, as between zones.
  const steps = (parse(file) as { spec: { strategy: { canary: { steps: unknown[] } } } }).spec.strategy.canary
    .steps;
  const swapped = [steps[0], steps[5], steps[1], steps[2], steps[3], steps[4], ...steps.slice(6)];
  const bad = rollout(spec, `${swapped.map((s) => `- ${JSON.stringify(s)}`).join('\n')}\n`);
  const overlap = await run(['lint', '--spec', 'r.yaml'], { 'r.yaml': bad });
  assert.notEqual(overlap.code, 0);
  assert.match(overlap.out + overlap.err, /overlap/);
});
