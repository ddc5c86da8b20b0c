// `vmzones status` from fixed objects: zones in walk order (unwalked ones last, flagged), the state mapping of
// observe/zone-states.ts, routing, lease, the newest gate reading of this Rollout, the last message (step status,
// or the reconciler's handoff), "not changed by revision X" after promote --full, the table drawing (columns
// aligned, wide, cut to the terminal), the reads from Kubernetes, --watch (in place / appended, exit codes) and
// the command line.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../../plugin/cli/io.ts';
import {
  readStatus,
  renderStatus,
  showCursor,
  type WatchOptions,
  walkExitCode,
  watchStatus,
} from '../../../plugin/cli/status.ts';
import { buildStatus, type RolloutStatus } from '../../../plugin/cli/status-model.ts';
import { age, bytes, formatStatusTable } from '../../../plugin/cli/status-table.ts';
import { ClusterRegistryError } from '../../../plugin/kube/cluster-registry.ts';
import { zoneHealth } from '../../../plugin/observe/zone-health.ts';
import { MemoryKube } from '../kube/memory-kube.ts';
import { run } from './run.ts';
import {
  analysisRuns,
  now,
  type RolloutFixture,
  rollout,
  specDocument,
  vmcluster,
  vmclusters,
  vmuser,
} from './status-fixtures.ts';

const routing = { routed: ['zone-a', 'zone-c', 'zone-d'] };

/** The fixture Rollout with some zones of its spec document replaced. */
function rolloutWithZones(zones: Record<string, Record<string, string>>): ReturnType<typeof rollout> {
  const object = rollout();
  const template = (object.spec as { template: { metadata: { annotations: Record<string, string> } } })
    .template;
  const logs = Object.values(zones).some((zone) => zone.vlcluster !== undefined);
  template.metadata.annotations['vmzones.io/spec'] = JSON.stringify({
    ...specDocument,
    ...(logs ? { vlagent: { vlagent: 'vlagent' } } : {}),
    zones: { ...specDocument.zones, ...zones },
  });
  return object;
}

function status(options: RolloutFixture = {}, clusters = vmclusters()): RolloutStatus {
  return buildStatus({
    rollout: rollout(options),
    zoneObjects: clusters,
    analysisRuns: analysisRuns(),
    routing,
    now,
  });
}

/** Runs --watch over `sequence` (the last reading repeats), capturing the output; table format, fixed clock. */
async function watchSequence(
  sequence: readonly RolloutStatus[],
  options: Pick<WatchOptions, 'inPlace' | 'framesPerPoll'>,
): Promise<{ code: number; reads: number; out: string }> {
  let reads = 0;
  let out = '';
  const code = await watchStatus({
    read: async () => sequence[Math.min(reads++, sequence.length - 1)] as RolloutStatus,
    out: (t) => {
      out += t;
    },
    format: 'table',
    now: () => now,
    pollMs: 0,
    ...options,
  });
  return { code, reads, out };
}

test('zones come in walk order, the zone no step walks last; the one being walked is current, with its progress', () => {
  const s = status();
  assert.deepEqual(
    s.zones.map((z) => [z.zone, z.walk, z.state, z.routed]),
    [
      ['zone-a', 'done', 'serving', true],
      ['zone-b', 'current', 'waiting-gate', false],
      ['zone-c', 'pending', 'serving', true],
      ['zone-d', 'unwalked', 'serving', true],
    ],
  );
  const b = s.zones[1];
  assert.deepEqual(b?.progress, { done: 2, total: 4, doing: 'gate' });
  assert.equal(b?.since, '2026-12-01T10:08:00Z', 'waiting-gate since the change was applied');
  assert.deepEqual(b?.lease, { rollout: 'vm/walk', revision: 'rev2' });
  assert.deepEqual([b?.generation, b?.observedGeneration, b?.updateStatus], [5, 5, 'operational']);
  assert.equal(
    b?.message,
    'zone zone-b: applied 1 field(s), generation 5',
    'the newest step status of the zone',
  );
  assert.equal(s.zones[3]?.message, 'not in the steps: never walked');
  assert.deepEqual(s.step, { index: 6, total: 12, kind: 'gate' });
  assert.equal(s.outcome, 'progressing');
  assert.deepEqual(s.problems, []);
});

test('the gate column is the newest AnalysisRun of this Rollout for the zone: pending bytes and rounds', () => {
  const s = status();
  assert.deepEqual(s.zones[1]?.gate, {
    analysisRun: 'walk-rev2-6',
    phase: 'Running',
    pendingBytes: 12_800,
    rounds: { good: 1, required: 3 },
    readings: 4,
    message: '1 of 3 good rounds; 12800 bytes pending',
  });
  assert.equal(s.zones[0]?.gate?.analysisRun, 'walk-rev2-2');
  assert.equal(s.zones[2]?.gate, undefined, 'zone-c has no AnalysisRun yet');
});

test('the table: a header line, aligned columns, the walked zone marked with its progress and spinner', () => {
  const text = formatStatusTable(status(), { now, frame: 1 });
  const lines = text.split('\n');
  assert.equal(lines[0], 'Rollout vm/walk  revision rev2 (stable rev1)  step 7/12 (gate)  Progressing');
  const head = lines[2] ?? '';
  const row = (zone: string) => lines.find((l) => l.includes(` ${zone} `)) ?? '';
  const b = row('zone-b');
  assert.match(
    b,
    /^>> {2}zone-b {2}\[##--\] gate \/ {2}waiting-gate {2}2m {5}5 {4}operational {2}no {6}walk {3}Running 12\.5KiB 1\/3 {2}zone zone-b: applied/,
  );
  assert.match(
    row('zone-a'),
    /^ok {2}zone-a {2}\[####\] +serving +- +3 +operational +yes +- +Successful 0B 3\/3 +zone zone-a: reads restored$/,
  );
  assert.match(row('zone-c'), /^ {4}zone-c {2}\[----\] +serving/);
  assert.match(row('zone-d'), /^!! {2}zone-d {2}- +serving .* not in the steps: never walked$/);
  for (const [column, cell] of [
    ['STATE', 'waiting-gate'],
    ['ROUTED', 'no'],
    ['GATE', 'Running'],
    ['MESSAGE', 'zone zone-b'],
  ] as const) {
    assert.equal(b.indexOf(` ${cell}`) + 1, head.indexOf(column), `${column} lines up`);
  }
  assert.doesNotMatch(formatStatusTable(status(), { now }), /gate [|/\\-]/, 'no spinner without a frame');
});

test('-o wide adds the zone’s object kind and name, observed generation, lease revision and AnalysisRun; the table is cut to the terminal', () => {
  const wide = formatStatusTable(status(), { now, wide: true, columns: 40 });
  assert.match(
    wide,
    /^ +ZONE +KIND +OBJECT +STEPS +STATE +SINCE +GEN +OBSERVED +UPDATE +ROUTED +LEASE +GATE +ANALYSISRUN +MESSAGE$/m,
  );
  assert.match(
    wide,
    /^>> +zone-b +VMCluster +vm\/vm-zone-b .* walk@rev2 +Running 12\.5KiB 1\/3 +walk-rev2-6 +zone zone-b: applied 1 field\(s\), generation 5$/m,
  );
  const narrow = formatStatusTable(status(), { now, columns: 40 });
  for (const line of narrow.split('\n')) assert.ok(line.length <= 40, line);
  assert.match(narrow, /\.\.\.$/m);
});

test('a handoff to the reconciler: its message is the zone’s message, the state restoring', () => {
  const clusters = vmclusters();
  clusters[0] = vmcluster('vm-zone-a', 3, {
    'vmzones.io/handoff': JSON.stringify({
      v: 1,
      zone: 'zone-a',
      holder: { rollout: 'vm/walk', uid: 'uid-walk', revision: 'rev2' },
      requestedAt: '2026-12-01T10:09:00Z',
      by: 'Terminate of restoreReads',
      rollback: false,
      reads: { ref: { kind: 'VMUser', namespace: 'vm', name: 'vmauth-read' }, zones: [] },
      drainGracePeriod: '3s',
      message: 'waiting for VMCluster vm/vm-zone-a to be operational',
    }),
  });
  const a = status({}, clusters).zones[0];
  assert.equal(a?.state, 'restoring');
  assert.equal(a?.since, '2026-12-01T10:09:00Z');
  assert.equal(a?.message, 'reconciler: waiting for VMCluster vm/vm-zone-a to be operational');
});

test('after promote --full: zones the promoted revision never changed say so, and are not marked walked', () => {
  const clusters = vmclusters();
  clusters[1] = vmcluster('vm-zone-b', 5); // released
  const s = status({ currentStepIndex: 12, phase: 'Healthy', stableRS: 'rev2' }, clusters);
  assert.equal(s.outcome, 'healthy');
  assert.equal(walkExitCode(s), 0);
  const byZone = Object.fromEntries(s.zones.map((z) => [z.zone, z]));
  assert.equal(byZone['zone-a']?.notChangedBy, undefined, 'zone-a holds rev2’s change');
  assert.equal(byZone['zone-c']?.notChangedBy, 'rev2', 'zone-c’s change is rev1’s');
  assert.equal(byZone['zone-b']?.notChangedBy, 'rev2', 'zone-b has no change recorded');
  assert.equal(byZone['zone-c']?.walk, 'skipped', 'no step of zone-c ran');
  assert.equal(byZone['zone-a']?.walk, 'done');
  const text = formatStatusTable(s, { now });
  assert.match(text, /^Rollout vm\/walk {2}revision rev2 {2}all 12 steps done {2}Healthy$/m);
  assert.match(text, /^-- {2}zone-c {2}\[----\] +serving .* not changed by revision rev2$/m);
  assert.match(text, /^ok {2}zone-a {2}\[####\] +serving .* zone zone-a: reads restored$/m);
});

test('the walk’s end: Healthy at the new revision 0, aborted or Degraded 1, Paused and a stale Healthy go on', () => {
  assert.equal(walkExitCode(status({ currentStepIndex: 12, phase: 'Healthy', stableRS: 'rev2' })), 0);
  assert.equal(walkExitCode(status({ abort: true, phase: 'Degraded' })), 1);
  assert.equal(walkExitCode(status({ phase: 'Degraded' })), 1);
  assert.equal(walkExitCode(status({ phase: 'Paused' })), undefined);
  assert.equal(
    walkExitCode(status({ currentStepIndex: 12, phase: 'Healthy', stableRS: 'rev1' })),
    undefined,
    'the new revision is not stable yet',
  );
  const unseen = rollout({ currentStepIndex: 12, phase: 'Healthy', stableRS: 'rev2' });
  unseen.metadata.generation = 5; // just applied: the controller still reports generation 4
  const stale = buildStatus({ rollout: unseen, zoneObjects: vmclusters(), analysisRuns: [], routing, now });
  assert.equal(walkExitCode(stale), undefined, 'a Healthy the controller wrote before the new spec');
});

test('a missing VMCluster, a malformed annotation and unreadable routing are shown, not hidden', () => {
  const clusters = vmclusters().filter((c) => c.metadata.name !== 'vm-zone-c');
  clusters[0] = vmcluster('vm-zone-a', 3, { 'vmzones.io/maintenance': '{not json' });
  const s = buildStatus({
    rollout: rollout(),
    zoneObjects: clusters,
    analysisRuns: [],
    routing: { error: 'reading VMUser vm/vmauth-read: HTTP 403: forbidden' },
    now,
  });
  const byZone = Object.fromEntries(s.zones.map((z) => [z.zone, z]));
  assert.equal(byZone['zone-c']?.state, 'unknown');
  assert.equal(byZone['zone-c']?.message, 'VMCluster vm/vm-zone-c does not exist');
  assert.equal(byZone['zone-a']?.state, 'unknown');
  assert.equal(byZone['zone-a']?.routed, undefined);
  assert.deepEqual(s.problems, ['read routing: reading VMUser vm/vmauth-read: HTTP 403: forbidden']);
  const text = formatStatusTable(s, { now });
  assert.match(text, /^! read routing: .*403/m);
  assert.match(text, /^ok {2}zone-a .* unknown .* \? /m);
});

test('readStatus reads the Rollout, its VMClusters, AnalysisRuns and the VMUser’s routing', async () => {
  const kube = new MemoryKube();
  kube.put(rollout()).put(vmuser());
  for (const c of vmclusters()) kube.put(c);
  for (const r of analysisRuns()) kube.put(r);
  const s = await readStatus(kube, 'vm', 'walk');
  assert.deepEqual(
    s.zones.map((z) => [z.zone, z.state, z.routed, z.gate?.analysisRun]),
    [
      ['zone-a', 'serving', true, 'walk-rev2-2'],
      ['zone-b', 'waiting-gate', false, 'walk-rev2-6'],
      ['zone-c', 'serving', true, undefined],
      ['zone-d', 'serving', true, undefined],
    ],
  );
  await assert.rejects(readStatus(kube, 'vm', 'nope'), (err: unknown) => {
    assert.ok(err instanceof InputError);
    assert.equal(err.message, 'Rollout vm/nope not found');
    return true;
  });
  assert.equal(JSON.parse(renderStatus(s, { format: 'json', now })).zones[1].gate.pendingBytes, 12_800);
});

test('--watch without a terminal appends a snapshot when something changed and exits 0 at Healthy', async () => {
  const sequence = [
    status({ phase: 'Paused' }),
    status({ phase: 'Paused' }),
    status({ currentStepIndex: 7, phase: 'Progressing' }),
    status({ currentStepIndex: 12, phase: 'Healthy', stableRS: 'rev2' }),
  ];
  const { code, reads, out } = await watchSequence(sequence, { inPlace: false });
  assert.equal(code, 0);
  assert.equal(reads, 4);
  assert.equal(out.match(/^Rollout vm\/walk/gm)?.length, 3, 'the repeated snapshot is not printed again');
  assert.ok(!out.includes('\x1b['), 'no ANSI codes in a pipe');
  assert.match(out, /all 12 steps done {2}Healthy/);
});

test('--watch on a terminal redraws in place with a spinner, restores the cursor, and exits 1 on abort', async () => {
  const sequence = [status(), status({ abort: true, phase: 'Degraded' })];
  const { code, out } = await watchSequence(sequence, { inPlace: true, framesPerPoll: 4 });
  assert.equal(code, 1);
  const frames = out.split('\x1b[H').slice(1);
  assert.equal(frames.length, 5, 'four spinner frames of the first reading, one of the last');
  assert.deepEqual(
    frames.slice(0, 4).map((f) => /\[##--\] gate (.)/.exec(f)?.[1]),
    ['|', '/', '-', '\\'],
  );
  assert.ok(frames.every((f) => f.endsWith('\x1b[J') || f.endsWith(`\x1b[J${showCursor}`)));
  assert.ok(out.endsWith(showCursor));
});

test('the command line: a Rollout name is needed, one only, and -o takes json or wide', async () => {
  const help = await run(['status', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.out, /^Usage: vmzones status ROLLOUT \[-n NS\] \[--watch\] \[-o json\|wide\]/m);
  assert.match((await run(['--help'])).out, /^ {2}status +the Rollout's zones in walk order/m);
  const none = await run(['status']);
  assert.equal(none.code, 2);
  assert.match(none.err, /status needs the Rollout name/);
  const two = await run(['status', 'a', 'b']);
  assert.equal(two.code, 2);
  const yaml = await run(['status', 'walk', '-o', 'yaml']);
  assert.equal(yaml.code, 2);
  assert.match(yaml.err, /-o must be json or wide \(got "yaml"\)/);
  const lint = await run(['lint', 'stray']);
  assert.equal(lint.code, 2, 'other commands still refuse positionals');
});

test('ages read like kubectl’s, bytes in binary units', () => {
  const at = (s: number) => new Date(now.getTime() - s * 1000).toISOString();
  assert.deepEqual(
    [45, 60, 192, 3600, 7500, 90_000].map((s) => age(at(s), now)),
    ['45s', '1m', '3m12s', '1h', '2h5m', '1d1h'],
  );
  assert.equal(age(undefined, now), '-');
  assert.deepEqual([0, 512, 12_800, 4 * 1024 * 1024].map(bytes), ['0B', '512B', '12.5KiB', '4.0MiB']);
});

test('--watch interrupted (Ctrl-C) stops at once with 130 and gives the cursor back', async () => {
  const abort = new AbortController();
  let out = '';
  const code = await watchStatus({
    read: async () => {
      abort.abort();
      return status({ phase: 'Paused' });
    },
    out: (t) => {
      out += t;
    },
    inPlace: true,
    format: 'table',
    now: () => now,
    pollMs: 60_000,
    signal: abort.signal,
  });
  assert.equal(code, 130);
  assert.ok(out.endsWith(showCursor));
});

test('a Rollout without a spec document ends --watch at once with one line, rather than waiting forever', async () => {
  const bare = rollout();
  delete (bare.spec as { template?: unknown }).template;
  const kube = new MemoryKube().put(bare);
  await assert.rejects(
    watchStatus({
      read: () => readStatus(kube, 'vm', 'walk'),
      out: () => undefined,
      inPlace: false,
      format: 'table',
      pollMs: 0,
    }),
    /Rollout vm\/walk carries no vmzones.io\/spec annotation on spec.template.metadata: it walks no zones/,
  );
});

test('with several balancers a zone serves reads while some balancer routes to it and none has it taken out', async () => {
  const kube = new MemoryKube();
  const object = rollout();
  const template = (object.spec as { template: { metadata: { annotations: Record<string, string> } } })
    .template;
  template.metadata.annotations['vmzones.io/spec'] = JSON.stringify({
    ...specDocument,
    vmauth: [{ vmuser: 'vmauth-read' }, { vmuser: 'vmauth-local' }],
  });
  // The first balancer routes zone-a..c; the second has zone-b taken out (its record says so) and alone routes zone-d.
  const hubUser = vmuser(['zone-a', 'zone-b', 'zone-c']);
  const localUser = vmuser(['zone-a', 'zone-c', 'zone-d']);
  localUser.metadata.name = 'vmauth-local';
  localUser.metadata.annotations = {
    'vmzones.io/drained': JSON.stringify({
      'zone-b': { vmcluster: 'vm/vm-zone-b', by: 'drainReads', at: '2026-12-01T10:00:00Z', removed: [] },
    }),
  };
  kube.put(object).put(hubUser).put(localUser);
  for (const c of vmclusters()) kube.put(c);
  const s = await readStatus(kube, 'vm', 'walk');
  assert.deepEqual(
    s.zones.map((z) => [z.zone, z.routed]),
    [
      ['zone-a', true],
      ['zone-b', false],
      ['zone-c', true],
      ['zone-d', true],
    ],
    'zone-b is out (taken out of one balancer: a drain part-way); zone-d is served by the one balancer that has it',
  );
});

test('readStatus reads a zone in a registered cluster there, and names a cluster it cannot reach', async () => {
  const hub = new MemoryKube();
  const remote = new MemoryKube();
  const object = rolloutWithZones({
    'zone-b': { cluster: 'eu-b', vmcluster: 'vm-zone-b' },
    'zone-c': { cluster: 'eu-gone', vmcluster: 'vm-zone-c' },
  });
  hub.put(object).put(vmuser());
  for (const c of vmclusters()) (c.metadata.name === 'vm-zone-b' ? remote : hub).put(c);
  for (const r of analysisRuns()) hub.put(r);
  const clusters = {
    client: async (cluster: string | undefined) => {
      if (cluster === undefined) return hub;
      if (cluster === 'eu-b') return remote;
      throw new ClusterRegistryError(`cluster "${cluster}" is not registered`);
    },
    registration: async () => undefined,
  };
  const s = await readStatus(hub, 'vm', 'walk', clusters);
  const b = s.zones.find((z) => z.zone === 'zone-b');
  assert.equal(b?.state, 'waiting-gate', 'read from its own cluster');
  assert.equal(b?.cluster, 'eu-b');
  const c = s.zones.find((z) => z.zone === 'zone-c');
  assert.equal(c?.state, 'unknown');
  assert.match(c?.message ?? '', /cluster "eu-gone" is not registered/);
  assert.match(formatStatusTable(s, { now, wide: true }), /eu-b:vm\/vm-zone-b/);
});

test('readStatus shows a VMSingle zone by its name and kind, and names a missing VLCluster by its kind', async () => {
  const kube = new MemoryKube();
  const object = rolloutWithZones({
    'zone-b': { vmsingle: 'vm-zone-b' },
    'zone-c': { vlcluster: 'vm-zone-c' },
  });
  kube.put(object).put(vmuser());
  // zone-b's object is a VMSingle with zone-b's lease and maintenance; a VMCluster of the same name holds nothing.
  const single = vmclusters().find((c) => c.metadata.name === 'vm-zone-b');
  assert.ok(single);
  kube.put({ ...single, kind: 'VMSingle' });
  kube.put(vmcluster('vm-zone-b', 9));
  for (const c of vmclusters()) if (!['vm-zone-b', 'vm-zone-c'].includes(c.metadata.name ?? '')) kube.put(c);
  for (const r of analysisRuns()) kube.put(r);

  const s = await readStatus(kube, 'vm', 'walk');
  const b = s.zones.find((z) => z.zone === 'zone-b');
  assert.equal(b?.kind, 'VMSingle');
  assert.equal(b?.vmcluster, 'vm-zone-b');
  assert.equal(b?.state, 'waiting-gate', 'the VMSingle’s annotations, not the VMCluster’s of the same name');
  assert.equal(b?.generation, 5);
  const c = s.zones.find((z) => z.zone === 'zone-c');
  assert.equal(c?.kind, 'VLCluster');
  assert.equal(c?.state, 'unknown');
  assert.equal(c?.message, 'VLCluster vm/vm-zone-c does not exist');
  assert.match(formatStatusTable(s, { now, wide: true }), /zone-b +VMSingle +vm\/vm-zone-b /);
});

test('each zone’s health line is the zone object’s health as Argo CD shows it with vmzones’ checks (one wording)', () => {
  const s = status();
  const text = formatStatusTable(s, { now });
  const lines = text.split('\n');
  const head = lines.findIndex((l) => l.startsWith('ZONE  ') && l.includes('HEALTH MESSAGE'));
  assert.ok(head > 0, text);
  for (const [i, zone] of s.zones.entries()) {
    const object = vmclusters().find((c) => c.metadata.name === zone.vmcluster);
    assert.ok(object, zone.zone);
    const expected = zoneHealth(object, { nowSeconds: now.getTime() / 1000 });
    assert.deepEqual(zone.health, expected, zone.zone);
    assert.match(
      lines[head + 1 + i] ?? '',
      new RegExp(`^${zone.zone} +${expected.status} +${regexText(expected.message)}$`),
    );
  }
  assert.match(
    text,
    /^zone-b +Healthy +zone-b: out of reads for Rollout vm\/walk since \S+; waiting for evidence since \S+; VMCluster: operational$/m,
  );
});

function regexText(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
