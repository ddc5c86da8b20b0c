// `vmzones diff` against the sandbox's real kube-apiserver with the VictoriaMetrics operator's CRDs: a server-side
// dry run per zone shows the changed fields, the fields the CRD schema prunes and a refusal (422) with the server's
// message, exits non-zero for them, and writes nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { stringify } from 'yaml';
import { Flags } from '../../../plugin/cli/args.ts';
import { diffExitCode, diffZones, formatZoneDiffs, run } from '../../../plugin/cli/diff.ts';
import { vmclusterRef } from '../../../plugin/vm/vmcluster.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { ns, sandboxKube } from '../step/harness.ts';

let sandbox: Sandbox;
before(async () => {
  sandbox = await startSandbox({ zones: 2, plugin: false });
});
after(async () => {
  await sandbox?.stop();
});

function spec(zones: Record<string, object>) {
  return parseSpecDocument(
    stringify({
      overrideSpec: { retentionPeriod: '2' },
      vmauth: { vmuser: 'vmauth-read' },
      vmagent: { vmagent: 'vmagent' },
      zones,
    }),
  );
}

test('diff shows each zone’s changes, pruned fields and refusals from a dry run, and changes nothing', async () => {
  const kube = sandboxKube(sandbox);
  const before = await Promise.all(
    ['vm-zone-a', 'vm-zone-b'].map((name) => kube.get(vmclusterRef(ns, name))),
  );

  const fine = await diffZones({
    spec: spec({
      'zone-a': { vmcluster: 'vm-zone-a', overrideSpec: { vmstorage: { replicaCount: 2 } } },
      'zone-b': { vmcluster: 'vm-zone-b' },
    }),
    namespace: ns,
    kube,
  });
  const text = formatZoneDiffs(fine);
  process.stderr.write(text);
  assert.equal(diffExitCode(fine), 0, text);
  assert.match(text, /zone zone-a: VMCluster vm\/vm-zone-a: 2 field\(s\) change/);
  assert.match(text, / {2}~ spec\.retentionPeriod: "1" → "2"\n/);
  assert.match(text, / {2}[~+] spec\.vmstorage\.replicaCount: (1 → )?2\n/);
  assert.match(text, /zone zone-b: VMCluster vm\/vm-zone-b: 1 field\(s\) change/);

  const bad = await diffZones({
    spec: spec({
      'zone-a': { vmcluster: 'vm-zone-a', overrideSpec: { vmstorage: { noSuchField: 3 } } },
      'zone-b': { vmcluster: 'vm-zone-b', overrideSpec: { vmstorage: { replicaCount: 'many' } } },
      'zone-c': { vmcluster: 'vm-zone-c' },
    }),
    namespace: ns,
    kube,
  });
  const badText = formatZoneDiffs(bad);
  process.stderr.write(badText);
  assert.equal(diffExitCode(bad), 1);
  assert.match(badText, / {2}! spec\.vmstorage\.noSuchField: PRUNED by the API server/);
  assert.match(
    badText,
    /zone zone-b: VMCluster vm\/vm-zone-b: REFUSED: dry-run patching VMCluster vm\/vm-zone-b: HTTP 422: .*replicaCount/,
  );
  assert.match(
    badText,
    /zone zone-c: VMCluster vm\/vm-zone-c: MISSING: VMCluster vm\/vm-zone-c does not exist/,
  );

  const afterward = await Promise.all(
    ['vm-zone-a', 'vm-zone-b'].map((name) => kube.get(vmclusterRef(ns, name))),
  );
  assert.deepEqual(
    afterward.map((c) => [c.metadata.generation, c.spec?.retentionPeriod]),
    before.map((c) => [c.metadata.generation, c.spec?.retentionPeriod]),
    'a dry run stores nothing',
  );
});

test('the diff command reads a Rollout manifest, talks to the cluster of --kubeconfig and exits 1 on a refusal', async () => {
  const rollout = (overrideSpec: object) =>
    stringify({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name: 'walk', namespace: ns },
      spec: {
        template: {
          metadata: {
            annotations: {
              'vmzones.io/spec': stringify({
                namespace: ns,
                overrideSpec,
                vmauth: { vmuser: 'vmauth-read' },
                vmagent: { vmagent: 'vmagent' },
                zones: { 'zone-a': { vmcluster: 'vm-zone-a' } },
              }),
            },
          },
        },
      },
    });
  const files: Record<string, string> = {
    'ok.yaml': rollout({ clusterVersion: 'v9.9.9-cluster' }),
    'bad.yaml': rollout({ vmstorage: { replicaCount: 'many' } }),
  };
  const runFile = async (name: string) => {
    let out = '';
    const io = {
      out: (text: string) => {
        out += text;
      },
      err: () => undefined,
      readFile: (path: string) => files[path] ?? '',
      writeFile: () => undefined,
    };
    const flags = new Flags({ spec: name, kubeconfig: sandbox.state.kubeconfig }, []);
    return { code: await run(flags, { io, program: 'vmzones' }), out };
  };
  const ok = await runFile('ok.yaml');
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, /zone zone-a: VMCluster vm\/vm-zone-a: 1 field\(s\) change/);
  const bad = await runFile('bad.yaml');
  assert.equal(bad.code, 1, bad.out);
  assert.match(bad.out, /REFUSED: .*replicaCount/);
});
