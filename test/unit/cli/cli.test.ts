// The CLI's conventions, in-process: help, version, exit codes (0 ok, 1 problems, 2 usage), stdout for output
// and stderr for diagnostics, -o yaml|json, stdin as `-`, manifests wherever a spec is read, --order / --only.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import type { Flags } from '../../../plugin/cli/args.ts';
import { type Command, commands } from '../../../plugin/cli/commands.ts';
import { rollout, run, spec, zoneSteps } from './run.ts';

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

test('--help and COMMAND --help print to stdout and exit 0; no command is a usage error on stderr', async () => {
  const global = await run(['--help']);
  assert.equal(global.code, 0);
  assert.equal(global.err, '');
  for (const c of ['lint', 'render', 'version']) assert.match(global.out, new RegExp(`^  ${c} `, 'm'));
  assert.match(global.out, /Exit codes: 0 success, 1 problems found or the command failed, 2 usage error/);
  for (const argv of [
    ['render', '--help'],
    ['render', '--spec', 'x', '-h'],
    ['help', 'render'],
  ]) {
    const r = await run(argv);
    assert.equal(r.code, 0, argv.join(' '));
    assert.match(r.out, /^Usage: vmzones render /m);
    assert.match(r.out, /--only ZONE/);
  }
  const none = await run([]);
  assert.equal(none.code, 2);
  assert.equal(none.out, '');
  assert.match(none.err, /^Usage: vmzones COMMAND/m);
});

test('--version and version report the package.json version', async () => {
  assert.deepEqual(await run(['--version']), {
    code: 0,
    out: `vmzones ${pkg.version}\n`,
    err: '',
    files: {},
  });
  const v = await run(['version', '-o', 'json']);
  assert.equal(v.code, 0);
  assert.deepEqual(
    { version: JSON.parse(v.out).version, node: JSON.parse(v.out).node },
    { version: pkg.version, node: process.version },
  );
});

test('usage errors exit 2 and name the flag; a file that cannot be read exits 1 naming it', async () => {
  for (const argv of [
    ['frobnicate'],
    ['--spec', 'x'],
    ['render'],
    ['render', '--spec', 'x', '--bogus'],
    ['render', '--spec', 's.yaml', '-o', 'xml'],
    ['render', '--spec', 's.yaml', '--order', 'zone-a', '--only', 'zone-a'],
    ['render', '--spec', 's.yaml', '--pause', 'soon'],
    ['render', '--spec', '-', '--write', '-'],
    ['render', '--write', 'r.yaml', '-o', 'json'],
    ['lint'],
    ['lint', '--spec', 's.yaml', '--context', 'prod'],
  ]) {
    const r = await run(argv, { 's.yaml': spec, 'r.yaml': rollout(spec, zoneSteps('zone-a')) });
    assert.equal(r.code, 2, `${argv.join(' ')}: ${r.err}`);
    assert.equal(r.out, '', argv.join(' '));
    assert.doesNotMatch(r.err, /\n\s+at /, 'no stack trace');
  }
  assert.match((await run(['render', '--spec', 'x', '--bogus'])).err, /Unknown option '--bogus'/);
  assert.match(
    (await run(['lint', '--spec', 's.yaml', '--context', 'p'], { 's.yaml': spec })).err,
    /--context/,
  );
  const missing = await run(['lint', '--spec', 'nope.yaml']);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /nope\.yaml: 1 problem\(s\)\n {2}- cannot read nope\.yaml: ENOENT/);
});

test('lint accepts a spec document, a Rollout, a multi-document file, a List and stdin', async () => {
  const good = rollout(spec, zoneSteps('zone-a') + zoneSteps('zone-b'));
  const service = 'apiVersion: v1\nkind: Service\nmetadata: {name: s}\n';
  const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [parse(service), parse(good)] });
  const files = {
    's.yaml': spec,
    'r.yaml': good,
    'k.yaml': `${service}---\n${good}`,
    'l.json': list,
    '-': good,
  };
  assert.deepEqual(await run(['lint', '--spec', 's.yaml'], files), {
    code: 0,
    out: 's.yaml: ok (2 zones: zone-a, zone-b)\n',
    err: '',
    files,
  });
  for (const f of ['r.yaml', 'k.yaml', 'l.json']) {
    const r = await run(['lint', '--spec', f], files);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, `${f}: Rollout vm: ok (2 zones: zone-a, zone-b; the steps walk every zone)\n`);
  }
  const stdin = await run(['lint', '--spec', '-'], files);
  assert.equal(stdin.out, 'stdin: Rollout vm: ok (2 zones: zone-a, zone-b; the steps walk every zone)\n');
  const none = await run(['lint', '--spec', 'svc.yaml'], { 'svc.yaml': service });
  assert.equal(none.code, 1);
  assert.match(none.err, /holds no vmzones spec/);
});

test('lint lists every problem of a spec on stderr and exits 1; -o json puts the report on stdout', async () => {
  const r = await run(['lint', '--spec', 's.yaml'], { 's.yaml': 'zones: {Bad: {}}\n' });
  assert.equal(r.code, 1);
  assert.equal(r.out, '');
  assert.match(r.err, /s\.yaml: \d+ problem\(s\)/);
  assert.match(r.err, /- zones\.Bad: zone names must be DNS labels/);
  assert.match(r.err, /- vmauth: /);
  const j = await run(['lint', '--spec', 's.yaml', '-o', 'json'], { 's.yaml': 'zones: {Bad: {}}\n' });
  assert.equal(j.code, 1);
  const report = JSON.parse(j.out) as { ok: boolean; reports: { problems: string[] }[] };
  assert.equal(report.ok, false);
  assert.ok(report.reports[0]?.problems.some((p) => p.startsWith('zones.Bad:')));
});

test('lint fails a Rollout whose annotation sits on its metadata instead of its pod template', async () => {
  const onMetadata = rollout(spec, zoneSteps('zone-a') + zoneSteps('zone-b')).replace(
    /metadata:\n {2}name: vm {2}# keep me\n/,
    `metadata:\n  name: vm\n  annotations:\n    vmzones.io/spec: |\n${spec.replace(/^(?=.)/gm, '      ')}`,
  );
  const moved = onMetadata.replace(
    / {2}template:\n {4}metadata:\n {6}annotations:\n {8}vmzones.io\/spec: \|\n(?: {10}.*\n)+/,
    '',
  );
  assert.notEqual(moved, onMetadata);
  const r = await run(['lint', '--spec', 'r.yaml'], { 'r.yaml': moved });
  assert.equal(r.code, 1);
  assert.match(
    r.err,
    /metadata\.annotations carries vmzones\.io\/spec, but the plugin reads it from spec\.template/,
  );
  const both = await run(['lint', '--spec', 'r.yaml'], { 'r.yaml': onMetadata });
  assert.equal(both.code, 1);
  assert.match(both.err, /a second vmzones\.io\/spec that the plugin ignores/);
  const render = await run(['render', '--spec', 'r.yaml'], { 'r.yaml': moved });
  assert.equal(render.code, 1);
  assert.equal(render.out, '');
});

test('render prints the steps as YAML or JSON; --order must list every zone, --only says what it leaves out', async () => {
  const files = { 's.yaml': spec };
  const r = await run(['render', '--spec', 's.yaml', '--pause', 'manual', '--order', 'zone-b,zone-a'], files);
  assert.equal(r.code, 0, r.err);
  const steps = parse(r.out).steps as { plugin?: { config: { zone: string } }; pause?: object }[];
  assert.equal(steps.length, 9);
  assert.deepEqual(steps[0], {
    plugin: { name: 'vmzones/step', config: { zone: 'zone-b', action: 'drainReads' } },
  });
  assert.deepEqual(steps[4], { pause: {} });
  const json = await run(['render', '--spec', 's.yaml', '-o', 'json'], files);
  assert.deepEqual(JSON.parse(json.out), parse((await run(['render', '--spec', 's.yaml'], files)).out));

  const partial = await run(['render', '--spec', 's.yaml', '--order', 'zone-b'], files);
  assert.equal(partial.code, 2);
  assert.equal(partial.out, '', 'a walk that skips zone-a is never printed');
  assert.match(partial.err, /--order: the order leaves out zone-a: .* with --only/);

  const only = await run(['render', '--spec', 's.yaml', '--only', 'zone-b'], files);
  assert.equal(only.code, 0, only.err);
  assert.match(only.out, /^# vmzones render walks zone-b only \(--only\); left out: zone-a\n/);
  assert.match(only.err, /left out: zone-a/);
  const zones = new Set(
    (parse(only.out).steps as { plugin?: { config: { zone: string } } }[]).map((s) => s.plugin?.config.zone),
  );
  assert.deepEqual([...zones].filter(Boolean), ['zone-b']);

  for (const [flag, value, message] of [
    ['--only', 'zone-b,zone-b', /listed twice: zone-b/],
    ['--order', 'zone-b,zone-x', /unknown zone\(s\) zone-x/],
    ['--only', 'zone-a,', /comma-separated/],
  ] as const) {
    const bad = await run(['render', '--spec', 's.yaml', flag, value], files);
    assert.equal(bad.code, 2, `${flag} ${value}`);
    assert.match(bad.err, message);
  }
});

test('render takes its spec from a Rollout manifest, and asks which one when a file holds several', async () => {
  const two = `${rollout(spec, zoneSteps('zone-a'), 'one')}---\n${rollout(spec, zoneSteps('zone-a'), 'two')}`;
  const r = await run(['render', '--spec', 'm.yaml'], { 'm.yaml': two });
  assert.equal(r.code, 2);
  assert.match(r.err, /holds the Rollouts one, two: pick one with --rollout NAME/);
  const picked = await run(['render', '--spec', 'm.yaml', '--rollout', 'two'], { 'm.yaml': two });
  assert.equal(picked.code, 0, picked.err);
  assert.equal(
    (parse(picked.out).steps as unknown[]).length,
    8,
    'two zones of 4 steps, no pause between them',
  );
});

test('kubectl flags reach a command that talks to Kubernetes, which first checks the Node it runs on', async () => {
  let seen: unknown;
  const probe: Command = {
    name: 'probe',
    summary: 'a command that talks to Kubernetes',
    synopsis: 'probe',
    flagHelp: '',
    examples: '',
    options: {},
    dataOutput: false,
    talksToKubernetes: true,
    load: async () => ({
      run: (flags: Flags) => {
        seen = flags.kubeTarget();
        return 0;
      },
    }),
  };
  const table = [...commands, probe];
  const argv = ['probe', '--kubeconfig', '/k', '--context', 'prod', '-n', 'vm'];
  const ok = await run(argv, {}, { commands: table, program: 'kubectl vmzones' });
  assert.equal(ok.code, 0, ok.err);
  assert.deepEqual(seen, { kubeconfig: '/k', context: 'prod', namespace: 'vm' });
  assert.match((await run(['probe', '--help'], {}, { commands: table })).out, /-n, --namespace NS/);

  seen = undefined;
  const old = await run(argv, {}, { commands: table, nodeVersion: '20.19.0' });
  assert.equal(old.code, 1);
  assert.equal(seen, undefined, 'the command did not run');
  assert.equal(old.err.split('\n').length, 2, `one line: ${old.err}`);
  assert.match(
    old.err,
    /^vmzones: vmzones probe needs Node >=24\.\S+ <25, found v20\.19\.0: install Node 24, or .*npx -y node@24 /,
  );
});

test('render --spec names the spec, --write and --rollout the Rollout of another file', async () => {
  const two = `${rollout(spec, zoneSteps('zone-a'), 'one')}---\n${rollout(spec, zoneSteps('zone-a'), 'two')}`;
  const r = await run(['render', '--spec', 's.yaml', '--write', 'm.yaml', '--rollout', 'two'], {
    's.yaml': spec,
    'm.yaml': two,
  });
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /m\.yaml: Rollout two: wrote 8 steps walking zone-a, zone-b/);
  const [one, written] = (r.files['m.yaml'] ?? '').split('---\n');
  assert.equal(one, rollout(spec, zoneSteps('zone-a'), 'one'), 'the other Rollout is left alone');
  assert.match(written ?? '', /zone: zone-b, action: restoreReads/);
});
