import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { type CliIo, runCli } from '../../plugin/cli/cli.ts';

function run(argv: string[], files: Record<string, string>) {
  let out = '';
  let err = '';
  const io: CliIo = {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
    readFile: (p) => {
      const f = files[p];
      if (f === undefined) throw new Error(`ENOENT: ${p}`);
      return f;
    },
  };
  return { code: runCli(argv, io), out, err };
}

const spec =
  'vmauth: {vmuser: r}\nvmagent: {vmagent: a}\nzones: {zone-a: {vmcluster: a}, zone-b: {vmcluster: b}}\n';
const rollout = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: vm}
spec:
  template:
    metadata:
      annotations:
        vmzones.io/spec: |
${spec.replace(/^/gm, '          ')}
`;

test('lint accepts a spec document and a Rollout manifest carrying it', () => {
  assert.deepEqual(run(['lint', '--spec', 's.yaml'], { 's.yaml': spec }), {
    code: 0,
    out: 's.yaml: ok (2 zones: zone-a, zone-b)\n',
    err: '',
  });
  assert.equal(run(['lint', '--spec', 'r.yaml'], { 'r.yaml': rollout }).code, 0);
});

test('lint lists every problem and exits 1', () => {
  const r = run(['lint', '--spec', 's.yaml'], { 's.yaml': 'zones: {Bad: {}}\n' });
  assert.equal(r.code, 1);
  assert.match(r.err, /s\.yaml: \d+ problem\(s\)/);
  assert.match(r.err, /- zones\.Bad: zone names must be DNS labels/);
  assert.match(r.err, /- vmauth: /);
});

test('render prints the steps as YAML', () => {
  const r = run(['render', '--spec', 's.yaml', '--pause', 'manual', '--order', 'zone-b,zone-a'], {
    's.yaml': spec,
  });
  assert.equal(r.code, 0, r.err);
  const steps = parse(r.out).steps as {
    plugin?: { config: { zone: string; action: string } };
    pause?: object;
  }[];
  assert.equal(steps.length, 9);
  assert.deepEqual(steps[0], {
    plugin: { name: 'vmzones/step', config: { zone: 'zone-b', action: 'drainReads' } },
  });
  assert.deepEqual(steps[4], { pause: {} });
});

test('usage errors exit 2', () => {
  assert.equal(run(['frobnicate', '--spec', 'x'], {}).code, 2);
  assert.equal(run(['render'], {}).code, 2);
  assert.equal(run(['render', '--spec', 'x', '--bogus'], {}).code, 2);
  const missing = run(['lint', '--spec', 'nope.yaml'], {});
  assert.equal(missing.code, 1);
  assert.match(missing.err, /ENOENT: nope\.yaml/);
});
