// The Argo CD health checks, run by real Lua engines against literal zone objects and AnalysisRuns: gopher-lua
// v1.1.1, Argo CD's own engine, loaded as Argo CD's util/lua loads it (test/lua-health, a Go program built like the
// other Go test peers), the Lua 5.1 interpreter from Debian (`apt-get install lua5.1`), and, once the sandbox has
// built it, the real Argo CD binary's offline `argocd admin settings resource-overrides health`.
// Rule: without Go or lua5.1 these tests FAIL (saying what is missing); they are never skipped into a pass. Only the
// Argo CD binary check is skipped (and reported as skipped) until ~/.cache/vmzones/bin/argocd exists.
// Each zone case is also computed by plugin/observe/zone-health.ts: the Lua and the TypeScript must give the same
// status and message, so that Argo CD and `vmzones status` say one thing.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { stringify } from 'yaml';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { type ZoneHealth, zoneHealth } from '../../../plugin/observe/zone-health.ts';
import {
  analysisHealthLua,
  argocdHealthData,
  operatorHealthLua,
  zoneHealthLua,
} from '../../../plugin/observe/zone-health-lua.ts';
import { argocdHealthPaths, argocdHealthText } from '../../../scripts/argocd-health.ts';
import { binaryPath, targets } from '../../env/build.ts';
import { goBinary } from '../../go-binary.ts';

/** 2026-12-01T10:05:00Z: five minutes after the fixtures' drain. */
const now = Date.parse('2026-12-01T10:05:00Z') / 1000;
const holder = { rollout: 'vm/walk', uid: 'uid-1', revision: 'rev-1' };
const reads = { ref: { kind: 'VMUser', namespace: 'vm', name: 'vmauth-read' }, zones: [] };

function lease(extra: object = {}): string {
  return JSON.stringify({ v: 1, ...holder, since: '2026-12-01T10:00:00Z', zone: 'zone-b', reads, ...extra });
}
function maintenance(extra: object = {}): string {
  return JSON.stringify({
    v: 1,
    zone: 'zone-b',
    since: '2026-12-01T10:00:00Z',
    reason: 'drainReads by Rollout vm/walk',
    ...extra,
  });
}
function rollback(extra: object = {}): string {
  return JSON.stringify({
    v: 1,
    ...holder,
    zone: 'zone-b',
    phase: 'applied',
    appliedAt: '2026-12-01T10:01:00Z',
    generation: 2,
    changes: [{ path: ['clusterVersion'], before: 'v1', after: 'v2' }],
    ...extra,
  });
}
function handoff(extra: object = {}): string {
  return JSON.stringify({
    v: 1,
    zone: 'zone-b',
    holder,
    requestedAt: '2026-12-01T10:03:00Z',
    by: 'Abort of apply by Rollout vm/walk (revision rev-1)',
    rollback: true,
    reads,
    drainGracePeriod: '30s',
    ...extra,
  });
}

function zoneObject(
  annotations: Record<string, string>,
  status: Record<string, unknown> | null = { updateStatus: 'operational', observedGeneration: 2 },
  kind = 'VMCluster',
): KubeObject {
  return {
    apiVersion:
      kind === 'VLCluster' ? 'operator.victoriametrics.com/v1' : 'operator.victoriametrics.com/v1beta1',
    kind,
    metadata: { name: 'vm-zone-b', namespace: 'vm', generation: 2, annotations },
    ...(status === null ? {} : { status }),
  };
}

const L = 'vmzones.io/lease';
const M = 'vmzones.io/maintenance';
const R = 'vmzones.io/rollback';
const H = 'vmzones.io/handoff';
const expanding = { updateStatus: 'expanding', observedGeneration: 2 };

interface ZoneCase {
  name: string;
  object: KubeObject;
  /** The literal result where the wording is pinned; every case is also compared with the TypeScript. */
  expected?: ZoneHealth;
}

const zoneCases: ZoneCase[] = [
  {
    name: 'no vmzones state: the operator verdict alone',
    object: zoneObject({}),
    expected: { status: 'Healthy', message: 'operational' },
  },
  {
    name: 'no status yet',
    object: zoneObject({}, null),
    expected: { status: 'Progressing', message: 'Waiting for the operator to report a status' },
  },
  {
    name: 'generation not observed',
    object: zoneObject({}, { updateStatus: 'operational', observedGeneration: 1 }),
    expected: { status: 'Progressing', message: 'Waiting for the operator to observe generation 2' },
  },
  {
    name: 'operator failed, no vmzones state',
    object: zoneObject({}, { updateStatus: 'failed', observedGeneration: 2, reason: 'cannot pull image' }),
    expected: { status: 'Degraded', message: 'cannot pull image' },
  },
  { name: 'paused', object: zoneObject({}, { updateStatus: 'paused', observedGeneration: 2 }) },
  {
    name: 'drained (lease and maintenance)',
    object: zoneObject({ [L]: lease(), [M]: maintenance() }),
    expected: {
      status: 'Healthy',
      message:
        'zone-b: out of reads for Rollout vm/walk since 2026-12-01T10:00:00Z; draining since 2026-12-01T10:00:00Z; VMCluster: operational',
    },
  },
  {
    name: 'applying: changed, the operator expanding',
    object: zoneObject({ [L]: lease(), [M]: maintenance(), [R]: rollback() }, expanding),
    expected: {
      status: 'Progressing',
      message:
        'zone-b: out of reads for Rollout vm/walk since 2026-12-01T10:00:00Z; applying the change since 2026-12-01T10:01:00Z; VMCluster: expanding',
    },
  },
  {
    name: 'waiting for evidence: changed and operational',
    object: zoneObject({ [L]: lease(), [M]: maintenance(), [R]: rollback() }),
    expected: {
      status: 'Healthy',
      message:
        'zone-b: out of reads for Rollout vm/walk since 2026-12-01T10:00:00Z; waiting for evidence since 2026-12-01T10:01:00Z; VMCluster: operational',
    },
  },
  {
    name: 'restoring reads',
    object: zoneObject({
      [L]: lease(),
      [M]: maintenance({ restoringSince: '2026-12-01T10:04:00Z' }),
      [R]: rollback(),
    }),
    expected: {
      status: 'Healthy',
      message:
        'zone-b: out of reads for Rollout vm/walk since 2026-12-01T10:00:00Z; restoring reads since 2026-12-01T10:04:00Z; VMCluster: operational',
    },
  },
  {
    name: 'serving with the change',
    object: zoneObject({ [R]: rollback() }),
    expected: {
      status: 'Healthy',
      message:
        'zone-b: serving reads; holds the change of Rollout vm/walk (revision rev-1) applied at 2026-12-01T10:01:00Z; VMCluster: operational',
    },
  },
  { name: 'leased, not yet out of reads', object: zoneObject({ [L]: lease() }) },
  {
    name: 'rolling back (handoff with a requested rollback)',
    object: zoneObject(
      {
        [L]: lease(),
        [M]: maintenance(),
        [R]: rollback({ phase: 'requested', requestedAt: '2026-12-01T10:03:00Z' }),
        [H]: handoff({ message: 'rollback: waiting until vmauth serves reads without zone zone-b' }),
      },
      expanding,
    ),
    expected: {
      status: 'Progressing',
      message:
        'zone-b: out of reads for Rollout vm/walk since 2026-12-01T10:00:00Z; rolling back since 2026-12-01T10:03:00Z: rollback: waiting until vmauth serves reads without zone zone-b; VMCluster: expanding',
    },
  },
  {
    name: 'handed over without a rollback: the reconciler finishes',
    object: zoneObject({ [L]: lease(), [M]: maintenance(), [H]: handoff({ rollback: false }) }),
  },
  {
    name: 'reverted but not yet operational: still rolling back',
    object: zoneObject(
      {
        [L]: lease(),
        [M]: maintenance(),
        [R]: rollback({
          phase: 'reverted',
          requestedAt: '2026-12-01T10:03:00Z',
          revertedAt: '2026-12-01T10:04:00Z',
        }),
        [H]: handoff(),
      },
      { updateStatus: 'expanding', observedGeneration: 2 },
    ),
  },
  {
    name: 'applying past readyTimeout: Degraded with ReadyTimeout',
    object: zoneObject(
      { [L]: lease(), [M]: maintenance(), [R]: rollback({ appliedAt: '2026-12-01T09:40:00Z' }) },
      expanding,
    ),
    expected: {
      status: 'Degraded',
      message:
        'zone-b: out of reads for Rollout vm/walk since 2026-12-01T10:00:00Z; applying the change since 2026-12-01T09:40:00Z; held past its deadline: the operator reporting the change operational did not come within 15m (ReadyTimeout)',
    },
  },
  {
    name: 'drained past 2 x readyTimeout: Degraded, no code',
    object: zoneObject({ [L]: lease(), [M]: maintenance({ since: '2026-12-01T09:00:00Z' }) }),
  },
  {
    name: 'reconciler past 2 x readyTimeout: HandoffTimeout',
    object: zoneObject({
      [L]: lease(),
      [M]: maintenance(),
      [H]: handoff({ requestedAt: '2026-12-01T08:00:00Z' }),
    }),
  },
  {
    name: 'operator failed while held: Degraded with ZoneFailed',
    object: zoneObject(
      { [L]: lease(), [M]: maintenance(), [R]: rollback() },
      { updateStatus: 'failed', observedGeneration: 2, reason: 'vmstorage crash loop' },
    ),
    expected: {
      status: 'Degraded',
      message:
        'zone-b: out of reads for Rollout vm/walk since 2026-12-01T10:00:00Z; applying the change since 2026-12-01T10:01:00Z; ZoneFailed: VMCluster failed: vmstorage crash loop',
    },
  },
  {
    name: 'an annotation that is not JSON: StateInvalid',
    object: zoneObject({ [L]: lease(), [M]: '{"zone": "zone-b", ' }),
    expected: {
      status: 'Degraded',
      message:
        'StateInvalid: annotation vmzones.io/maintenance is not what vmzones writes; see `vmzones status` and docs/step-plugin.md',
    },
  },
  {
    name: 'a record without a required field',
    object: zoneObject({ [L]: lease(), [M]: JSON.stringify({ zone: 'zone-b', since: 'x' }) }),
  },
  { name: 'a record that is a list', object: zoneObject({ [R]: '[1, 2]' }) },
  { name: 'a record of a newer format', object: zoneObject({ [L]: lease({ v: 2 }) }) },
  { name: 'a rollback phase vmzones never writes', object: zoneObject({ [R]: rollback({ phase: 'done' }) }) },
  {
    name: 'escapes and non-ASCII text in a record',
    object: zoneObject({
      [L]: lease(),
      [M]: maintenance(),
      [H]: handoff({ message: 'zone "b" \\ é 😀\n\ttab \u0001', rollback: false }),
    }),
  },
  {
    name: 'times with an offset and a fraction',
    object: zoneObject(
      { [L]: lease(), [M]: maintenance({ since: '2026-12-01T10:00:00.123+01:00' }) },
      { updateStatus: 'operational', observedGeneration: 2 },
    ),
  },
  {
    name: 'a time that does not parse: no deadline',
    object: zoneObject({ [L]: lease(), [M]: maintenance({ since: 'yesterday' }) }),
  },
  {
    name: 'VMSingle names its kind',
    object: zoneObject({ [L]: lease(), [M]: maintenance() }, undefined, 'VMSingle'),
  },
  {
    name: 'VLCluster names its kind',
    object: zoneObject({ [L]: lease(), [M]: maintenance(), [R]: rollback() }, expanding, 'VLCluster'),
  },
];

const analysisCases: {
  name: string;
  object: object;
  expected: ZoneHealth | { status: 'Unknown'; message: string };
}[] = [
  {
    name: 'a failed vmzones gate names its zone and code',
    object: {
      kind: 'AnalysisRun',
      spec: { args: [{ name: 'zone', value: 'zone-b' }] },
      status: {
        phase: 'Failed',
        message: 'Metric "queue-drained" assessed Failed due to failed (1) > failureLimit (0)',
        metricResults: [
          {
            name: 'queue-drained',
            phase: 'Failed',
            measurements: [
              { phase: 'Running', message: 'waiting' },
              {
                phase: 'Failed',
                message: 'pending data 4.0MiB after 10m',
                metadata: { 'vmzones.io/failure-code': 'QueueNotDrained' },
              },
            ],
          },
        ],
      },
    },
    expected: {
      status: 'Degraded',
      message: 'zone-b: gate queue-drained Failed (QueueNotDrained): pending data 4.0MiB after 10m',
    },
  },
  {
    name: 'a failed run of another provider keeps its message',
    object: { kind: 'AnalysisRun', status: { phase: 'Failed', message: 'Metric "x" assessed Failed' } },
    expected: { status: 'Degraded', message: 'Metric "x" assessed Failed' },
  },
  {
    name: 'running',
    object: { kind: 'AnalysisRun', status: { phase: 'Running' } },
    expected: { status: 'Progressing', message: 'Analysis run is running' },
  },
  {
    name: 'inconclusive',
    object: { kind: 'AnalysisRun', status: { phase: 'Inconclusive' } },
    expected: { status: 'Unknown', message: 'Analysis run was inconclusive' },
  },
  {
    name: 'no status',
    object: { kind: 'AnalysisRun' },
    expected: {
      status: 'Progressing',
      message: 'Waiting for analysis run to finish: status has not been reconciled.',
    },
  },
];

// --- A Lua 5.1 harness: the objects as Lua tables (as Argo CD hands them over), os.time() on the fake clock.

function luaStringLiteral(text: string): string {
  let out = '"';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte >= 0x20 && byte < 0x7f && c !== '"' && c !== '\\' ? c : `\\${String(byte).padStart(3, '0')}`;
  }
  return `${out}"`;
}

function luaLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'string') return luaStringLiteral(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `{${value.map(luaLiteral).join(', ')}}`;
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `[${luaStringLiteral(k)}] = ${luaLiteral(v)}`)
    .join(', ')}}`;
}

function luaEngine(): string | undefined {
  for (const candidate of ['lua5.1', 'lua']) {
    const probe = spawnSync(candidate, ['-v'], { encoding: 'utf8' });
    if (probe.status === 0 && /Lua 5\.1/.test(`${probe.stdout}${probe.stderr}`)) return candidate;
  }
  return undefined;
}

/** Runs `script` once per object; `openLibs` false runs it without the string and math libraries, as Argo CD runs
 *  a check without useOpenLibs. */
function runLua(script: string, objects: readonly object[], openLibs: boolean): ZoneHealth[] {
  const engine = luaEngine();
  assert.ok(
    engine,
    'no Lua 5.1 interpreter: install it (apt-get install lua5.1, or npm run env:build as root); the Argo CD health checks are only tested by a real Lua engine',
  );
  const dir = mkdtempSync(join(tmpdir(), 'vmzones-lua-'));
  try {
    writeFileSync(join(dir, 'check.lua'), script);
    const harness = `
local check = assert(loadfile(${luaStringLiteral(join(dir, 'check.lua'))}))
local cases = { ${objects.map(luaLiteral).join(',\n')} }
local hex = function(s) return (string.gsub(s, ".", function(c) return string.format("%02x", string.byte(c)) end)) end
local realString, realMath, realFormat = string, math, string.format
for i, object in ipairs(cases) do
  local env = { obj = object, os = { time = function(t) assert(t == nil) return ${now} end }, ipairs = ipairs,
    pairs = pairs, type = type, tostring = tostring, tonumber = tonumber, pcall = pcall, error = error,
    table = table, assert = assert }
  if ${openLibs ? 'true' : 'false'} then env.string = realString env.math = realMath end
  setfenv(check, env)
  local ok, hs = pcall(check)
  if not ok then io.write(i, "\\terror\\t", hex(tostring(hs)), "\\n")
  else io.write(i, "\\t", tostring(hs.status), "\\t", hex(tostring(hs.message)), "\\n") end
end
`;
    writeFileSync(join(dir, 'harness.lua'), harness);
    const run = spawnSync(engine, [join(dir, 'harness.lua')], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(run.status, 0, `lua failed: ${run.stderr}`);
    return run.stdout
      .trim()
      .split('\n')
      .map((line) => {
        const [, status = '', message = ''] = line.split('\t');
        const text = Buffer.from(message, 'hex').toString('utf8');
        assert.notEqual(status, 'error', `the Lua check raised: ${text}`);
        return { status: status as ZoneHealth['status'], message: text };
      });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The same in gopher-lua, Argo CD's engine (test/lua-health). */
function runGopherLua(script: string, objects: readonly object[], openLibs: boolean): ZoneHealth[] {
  const dir = mkdtempSync(join(tmpdir(), 'vmzones-gopher-lua-'));
  try {
    writeFileSync(join(dir, 'check.lua'), script);
    writeFileSync(join(dir, 'objects.json'), JSON.stringify(objects));
    const run = spawnSync(
      goBinary('test/lua-health'),
      [join(dir, 'check.lua'), openLibs ? 'open' : 'closed', join(dir, 'objects.json'), String(now)],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(run.status, 0, `lua-health failed: ${run.stderr}`);
    return run.stdout
      .trim()
      .split('\n')
      .map((line) => {
        const result = JSON.parse(line) as ZoneHealth & { error?: string };
        assert.equal(result.error, undefined, `the Lua check raised in gopher-lua: ${result.error}`);
        return result;
      });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each zone case's result of a Lua engine equals the TypeScript's (status and message). */
function assertSameAsTypeScript(engine: string, results: readonly ZoneHealth[]): void {
  assert.equal(results.length, zoneCases.length);
  for (const [i, c] of zoneCases.entries()) {
    assert.deepEqual(
      results[i],
      zoneHealth(c.object, { nowSeconds: now }),
      `${c.name}: ${engine} and TypeScript differ`,
    );
  }
}

test('zone health in gopher-lua (Argo CD’s engine, as Argo CD loads it): the TypeScript verdict and sentence for every case', () => {
  assertSameAsTypeScript(
    'gopher-lua',
    runGopherLua(
      zoneHealthLua(),
      zoneCases.map((c) => c.object),
      true,
    ),
  );
  const analysis = runGopherLua(
    analysisHealthLua(),
    analysisCases.map((c) => c.object),
    false,
  );
  for (const [i, c] of analysisCases.entries()) assert.deepEqual(analysis[i], c.expected, c.name);
  const operator = runGopherLua(operatorHealthLua(), [zoneObject({}, expanding, 'VMAgent')], false);
  assert.deepEqual(operator, [{ status: 'Progressing', message: 'expanding' }]);
});

test('zone health: the generated Lua gives the TypeScript verdict and sentence for every literal zone object', () => {
  assertSameAsTypeScript(
    'lua5.1',
    runLua(
      zoneHealthLua(),
      zoneCases.map((c) => c.object),
      true,
    ),
  );
  for (const c of zoneCases) {
    if (c.expected)
      assert.deepEqual(zoneHealth(c.object, { nowSeconds: now }), c.expected, `${c.name}: the wording`);
  }
});

test('zone health: every step, deadline and failure shows up in the cases (no state left untested)', () => {
  const messages = zoneCases.map((c) => zoneHealth(c.object, { nowSeconds: now }).message).join('\n');
  for (const word of [
    'draining since',
    'applying the change since',
    'waiting for evidence since',
    'restoring reads since',
    'rolling back since',
    'finishing in the vmzones reconciler since',
    'serving reads; holds the change',
    '(ReadyTimeout)',
    '(HandoffTimeout)',
    'ZoneFailed',
    'state format v2',
    'VMSingle: operational',
    'VLCluster: expanding',
  ]) {
    assert.ok(messages.includes(word), `no case says "${word}"`);
  }
  const drainedLate = zoneHealth(
    zoneCases.find((c) => c.name.startsWith('drained past'))?.object as KubeObject,
    {
      nowSeconds: now,
    },
  );
  assert.equal(drainedLate.status, 'Degraded');
  assert.ok(drainedLate.message.endsWith('did not come within 30m'), drainedLate.message);
});

test('zone health: the deadline follows the readyTimeout the check is generated for', () => {
  const object = zoneObject(
    { [L]: lease(), [M]: maintenance(), [R]: rollback({ appliedAt: '2026-12-01T09:40:00Z' }) },
    expanding,
  );
  const [fifteen] = runLua(zoneHealthLua(), [object], true);
  const [hour] = runLua(zoneHealthLua(3600), [object], true);
  assert.equal(fifteen?.status, 'Degraded');
  assert.equal(hour?.status, 'Progressing');
  assert.deepEqual(hour, zoneHealth(object, { nowSeconds: now, readyTimeoutSeconds: 3600 }));
});

test('operator check (VMAgent, VMAuth, VMUser): the verdict without any Lua library', () => {
  const objects = zoneCases.slice(0, 5).map((c) => ({ ...c.object, kind: 'VMAgent' }));
  const lua = runLua(operatorHealthLua(), objects, false);
  objects.forEach((object, i) => {
    const { status, message } = zoneHealth(
      { ...object, metadata: { ...object.metadata, annotations: {} } },
      { nowSeconds: now },
    );
    assert.deepEqual(lua[i], { status, message });
  });
});

test('AnalysisRun check: Argo CD’s verdict by phase, a failed vmzones gate with its zone and code, no Lua library', () => {
  const lua = runLua(
    analysisHealthLua(),
    analysisCases.map((c) => c.object),
    false,
  );
  for (const [i, c] of analysisCases.entries()) assert.deepEqual(lua[i], c.expected, c.name);
});

test('the argocd-cm patches in manifests/ and examples/gitops/ are generated from the TypeScript', () => {
  const text = argocdHealthText();
  for (const path of argocdHealthPaths) {
    assert.equal(readFileSync(path, 'utf8'), text, `${path} is stale: run node scripts/argocd-health.ts`);
  }
  const data = argocdHealthData();
  for (const kind of ['VMCluster', 'VMSingle', 'VLCluster']) {
    assert.equal(data[`resource.customizations.useOpenLibs.operator.victoriametrics.com_${kind}`], 'true');
  }
  assert.equal(data['resource.customizations.useOpenLibs.argoproj.io_AnalysisRun'], undefined);
  assert.equal(
    data['resource.customizations.health.argoproj.io_Rollout'],
    undefined,
    'the Rollout keeps Argo CD’s own check',
  );
});

const argocdTarget = targets.find((t) => t.name === 'argocd');
/** Where the sandbox build puts the Argo CD binary of this checkout's pinned version (test/env/build.ts). */
const argocdBinary = argocdTarget === undefined ? '' : binaryPath(argocdTarget);

test('the real Argo CD binary (argocd admin settings resource-overrides health) gives the same verdicts', {
  skip: existsSync(argocdBinary) ? false : `${argocdBinary} is not built yet (the sandbox build makes it)`,
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'vmzones-argocd-health-'));
  try {
    const cm = join(dir, 'argocd-cm.yaml');
    writeFileSync(cm, argocdHealthText());
    // Times relative to the real clock: Argo CD's os.time() is not ours to move.
    const real = Math.floor(Date.now() / 1000);
    const at = (secondsAgo: number) =>
      new Date((real - secondsAgo) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const cases = [
      zoneObject({}),
      zoneObject({ [L]: lease({ since: at(60) }), [M]: maintenance({ since: at(60) }) }),
      zoneObject(
        { [L]: lease(), [M]: maintenance({ since: at(120) }), [R]: rollback({ appliedAt: at(60) }) },
        expanding,
      ),
      zoneObject(
        { [L]: lease(), [M]: maintenance({ since: at(7200) }), [R]: rollback({ appliedAt: at(3600) }) },
        expanding,
      ),
      zoneObject({ [M]: '{"zone": ' }),
      ...zoneCases.filter((c) => c.name.includes('escapes')).map((c) => c.object),
    ].map((object) => ({ object, expected: zoneHealth(object, { nowSeconds: real }) }));
    const gate = analysisCases[0];
    assert.ok(gate);
    cases.push({
      object: { apiVersion: 'argoproj.io/v1alpha1', ...gate.object } as KubeObject,
      expected: gate.expected as ZoneHealth,
    });
    for (const [i, { object, expected }] of cases.entries()) {
      const file = join(dir, `zone-${i}.yaml`);
      writeFileSync(file, stringify(object));
      const run = spawnSync(
        argocdBinary,
        ['admin', 'settings', 'resource-overrides', 'health', file, '--argocd-cm-path', cm],
        {
          env: { ...process.env, ARGOCD_BINARY_NAME: 'argocd', HOME: dir },
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      assert.equal(run.status, 0, `argocd failed: ${run.stderr}`);
      const status = /^STATUS: (.*)$/m.exec(run.stdout)?.[1];
      // The message runs to the end of the output (it may hold newlines of its own).
      const at = run.stdout.indexOf('MESSAGE: ');
      const message = at < 0 ? undefined : run.stdout.slice(at + 'MESSAGE: '.length).replace(/\n$/, '');
      assert.deepEqual({ status, message }, expected, `case ${i}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
