// lint's check of a Rollout's steps against its spec: each rule has the walk that breaks it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { checkWalk } from '../../../plugin/cli/walk-check.ts';
import { renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { action, gate, spec as specText, zoneSteps } from './run.ts';

const spec = parseSpecDocument(specText);
const steps = (yaml: string) => parse(yaml) as unknown[];

test("what render writes passes, in any zone order, with pauses and the user's own steps anywhere", () => {
  assert.deepEqual(checkWalk(spec, renderSteps(spec)), []);
  assert.deepEqual(
    checkWalk(spec, renderSteps(spec, { order: ['zone-b', 'zone-a'], pauseBetweenZones: 'manual' })),
    [],
  );
  const mixed = `- setWeight: 10\n${action('zone-b', 'drainReads')}- pause: {}\n${action('zone-b', 'apply')}- setCanaryScale: {replicas: 1}\n${gate('zone-b')}${action('zone-b', 'restoreReads')}- plugin: {name: other/step}\n${zoneSteps('zone-a')}- setWeight: 100\n`;
  assert.deepEqual(checkWalk(spec, steps(mixed)), []);
});

test('a zone never walked fails', () => {
  assert.deepEqual(checkWalk(spec, steps(zoneSteps('zone-a'))), [
    'zone zone-b is never walked (no vmzones/step steps for it): it would never get the change; `vmzones render --write FILE` writes the steps for every zone',
  ]);
  assert.deepEqual(checkWalk(spec, steps(zoneSteps('zone-a')), { only: ['zone-a'] }), []);
  assert.match(checkWalk(spec, []).join(), /has no vmzones\/step steps/);
});

test('actions out of order or repeated fail', () => {
  const swapped = `${action('zone-a', 'apply')}${action('zone-a', 'drainReads')}${gate('zone-a')}${action('zone-a', 'restoreReads')}${zoneSteps('zone-b')}`;
  assert.match(
    checkWalk(spec, steps(swapped)).join('\n'),
    /zone zone-a: its steps run apply \(spec\.strategy\.canary\.steps\[0\]\), drainReads \(spec\.strategy\.canary\.steps\[1\]\), gate .*; expected drainReads, apply, gate, restoreReads/,
  );
  const twice = zoneSteps('zone-a') + action('zone-a', 'apply') + zoneSteps('zone-b');
  assert.match(
    checkWalk(spec, steps(twice)).join('\n'),
    /zone zone-a: its steps run .*apply \(spec\.strategy\.canary\.steps\[4\]\)/,
  );
});

test("a gate left out fails unless --template '' says the walk runs without gates", () => {
  const noGate = zoneSteps('zone-a', false) + zoneSteps('zone-b');
  assert.deepEqual(checkWalk(spec, steps(noGate)), [
    "zone zone-a: no gate between apply (spec.strategy.canary.steps[1]) and restoreReads (spec.strategy.canary.steps[2]): add the analysis step with arg zone=zone-a (`vmzones render` writes it), or lint with --template '' for a walk without gates",
  ]);
  assert.deepEqual(checkWalk(spec, steps(noGate), { template: '' }), []);
  assert.match(
    checkWalk(spec, steps(zoneSteps('zone-a') + zoneSteps('zone-b')), { template: 'mine' }).join(),
    /the gate of zone-a runs vmzones-zone-healthy, not mine/,
  );
});

test('two zones drained at once fail', () => {
  const overlap = `${action('zone-a', 'drainReads')}${action('zone-a', 'apply')}${gate('zone-a')}${action('zone-b', 'drainReads')}${action('zone-a', 'restoreReads')}${action('zone-b', 'apply')}${gate('zone-b')}${action('zone-b', 'restoreReads')}`;
  assert.deepEqual(checkWalk(spec, steps(overlap)), [
    "zones zone-a and zone-b overlap: zone-b's drainReads (spec.strategy.canary.steps[3]) runs before zone-a's restoreReads (spec.strategy.canary.steps[4]); one zone's walk must end before the next one's starts",
  ]);
});

test('a step the plugin would refuse fails: unknown zone, bad action', () => {
  const bad = `${zoneSteps('zone-a')}${zoneSteps('zone-b')}${action('zone-x', 'apply')}${action('zone-a', 'frobnicate')}`;
  assert.deepEqual(checkWalk(spec, steps(bad)), [
    'spec.strategy.canary.steps[8]: zone "zone-x" is not in the spec (known: zone-a, zone-b)',
    'spec.strategy.canary.steps[9]: config.action "frobnicate" is not one of drainReads, apply, restoreReads',
  ]);
});
