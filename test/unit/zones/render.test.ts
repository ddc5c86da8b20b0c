import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderSteps, zoneWalk } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';

const spec = parseSpecDocument(`
vmauth: {vmuser: reads}
vmagent: {vmagent: agent}
zones: {zone-a: {vmcluster: a}, zone-b: {vmcluster: b}, zone-c: {vmcluster: c}}
`);

function summary(steps: ReturnType<typeof renderSteps>): string[] {
  return steps.map((s) => {
    if ('plugin' in s) return `${s.plugin.config.zone}:${s.plugin.config.action}`;
    if ('analysis' in s) return `analysis(${s.analysis.args[0]?.value})`;
    return `pause(${s.pause.duration ?? 'manual'})`;
  });
}

test('by default each zone is drained, changed, gated and restored, the next zone right after', () => {
  assert.deepEqual(summary(renderSteps(spec)), [
    'zone-a:drainReads',
    'zone-a:apply',
    'analysis(zone-a)',
    'zone-a:restoreReads',
    'zone-b:drainReads',
    'zone-b:apply',
    'analysis(zone-b)',
    'zone-b:restoreReads',
    'zone-c:drainReads',
    'zone-c:apply',
    'analysis(zone-c)',
    'zone-c:restoreReads',
  ]);
});

test('a pause asked for goes between zones but not after the last', () => {
  assert.deepEqual(summary(renderSteps(spec, { pauseBetweenZones: '1m' })), [
    'zone-a:drainReads',
    'zone-a:apply',
    'analysis(zone-a)',
    'zone-a:restoreReads',
    'pause(1m)',
    'zone-b:drainReads',
    'zone-b:apply',
    'analysis(zone-b)',
    'zone-b:restoreReads',
    'pause(1m)',
    'zone-c:drainReads',
    'zone-c:apply',
    'analysis(zone-c)',
    'zone-c:restoreReads',
  ]);
});

test('a subset (only), manual approval and no gate are options', () => {
  const steps = renderSteps(spec, {
    only: ['zone-c', 'zone-a'],
    pauseBetweenZones: 'manual',
    healthTemplate: '',
  });
  assert.deepEqual(summary(steps), [
    'zone-c:drainReads',
    'zone-c:apply',
    'zone-c:restoreReads',
    'pause(manual)',
    'zone-a:drainReads',
    'zone-a:apply',
    'zone-a:restoreReads',
  ]);
  assert.deepEqual(steps[3], { pause: {} });
});

test('bad options are refused', () => {
  assert.throws(
    () => renderSteps(spec, { order: ['zone-x'] }),
    /unknown zone\(s\) zone-x \(known: zone-a, zone-b, zone-c\)/,
  );
  assert.throws(() => renderSteps(spec, { only: ['zone-a', 'zone-a'] }), {
    code: 'SpecInvalid',
    message: /zone-a/,
  });
  assert.throws(
    () => renderSteps(spec, { order: ['zone-c', 'zone-a'] }),
    /the order leaves out zone-b: list every zone, or walk a subset explicitly/,
  );
  assert.throws(() => renderSteps(spec, { order: ['zone-a'], only: ['zone-a'] }), { code: 'SpecInvalid' });
  assert.throws(() => renderSteps(spec, { only: [] }), { code: 'SpecInvalid' });
  assert.throws(() => renderSteps(spec, { pauseBetweenZones: 'soon' }), {
    code: 'SpecInvalid',
    message: /"soon"/,
  });
});

test('zoneWalk names the zones a subset leaves out; a full order leaves none out', () => {
  assert.deepEqual(zoneWalk(spec, { only: ['zone-b'] }), {
    zones: ['zone-b'],
    leftOut: ['zone-a', 'zone-c'],
  });
  assert.deepEqual(zoneWalk(spec, { order: ['zone-c', 'zone-b', 'zone-a'] }), {
    zones: ['zone-c', 'zone-b', 'zone-a'],
    leftOut: [],
  });
  assert.deepEqual(zoneWalk(spec), { zones: ['zone-a', 'zone-b', 'zone-c'], leftOut: [] });
});

test('zones in other clusters walk the same: the steps name zones, never clusters', () => {
  const base = 'vmauth: {vmuser: r}\nvmagent: {vmagent: a}\nzones:\n';
  const local = parseSpecDocument(`${base}  zone-a: {vmcluster: vm}\n  zone-b: {vmcluster: vm-b}\n`);
  const remote = parseSpecDocument(
    `${base}  zone-a: {vmcluster: vm}\n  zone-b: {cluster: eu-west-1b, vmcluster: vm-b}\n`,
  );
  const steps = renderSteps(remote, {});
  assert.deepEqual(steps, renderSteps(local, {}));
  assert.doesNotMatch(JSON.stringify(steps), /eu-west-1b/);
});

test('zones of every kind render the same walk, in the document order', () => {
  const mixed = parseSpecDocument(`
vmauth: {vmuser: reads}
vmagent: {vmagent: agent}
vlagent: {vlagent: logs}
zones: {zone-a: {vmsingle: a}, zone-b: {vlcluster: b}, zone-c: {vmcluster: c}}
`);
  assert.deepEqual(summary(renderSteps(mixed)), summary(renderSteps(spec)));
});
