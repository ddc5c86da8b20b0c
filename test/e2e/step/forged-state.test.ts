// Records are data, never authority (plugin/zones/reconciler/record-trust.ts, docs/reliability.md "Trust boundary"), under the
// real API server's RBAC and the real controller running the plugin: a ServiceAccount whose Role may only get, list
// and patch VMClusters in namespace team-a writes, with kubectl as itself, a forged handoff and a forged lease on
// team-a's VMClusters. They name the sandbox's VMUser in namespace vm (its backends), a Secret of kube-system as a
// scrape credential and kube-system pods on a port of the forger's choosing. After several reconciler passes the
// VMUser is unchanged, the plugins read no Secret (counted by the fault proxy between them and the API server),
// and a Warning event on each VMCluster and a line of the plugin's log say why the record was refused.
// One sandbox, no walk.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { vmuserName } from '../../sandbox/manifests.ts';
import { faultControl } from '../reliability/support.ts';
import {
  eventually,
  forgerOf,
  ns,
  rolloutObject,
  rolloutState,
  runStatus,
  sandboxKube,
  sandboxZones,
  vmclusterAnnotator,
  vmuser,
  vmzonesAnnotations,
  zoneSpec,
} from './harness.ts';

const team = 'team-a';
const forger = forgerOf(team);
const bait = 'forged-state-bait-token';
const vmApi = 'operator.victoriametrics.com/v1beta1';

let sandbox: Sandbox;
let kube: KubeObjects;

before(async () => {
  // The operator reconciles only the zones' namespace: team-a's VMClusters are objects to annotate, not clusters.
  sandbox = await startSandbox({ zones: 2, plugin: true, faultProxy: true, operatorWatchNamespaces: [ns] });
  kube = sandboxKube(sandbox);
  await sandbox.kubectl.apply([
    ...vmclusterAnnotator(team),
    ...['forged-handoff', 'forged-lease'].map((name) => ({
      apiVersion: vmApi,
      kind: 'VMCluster',
      metadata: { name, namespace: team },
      spec: { retentionPeriod: '1', vmstorage: { replicaCount: 1 } },
    })),
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'admin-token', namespace: 'kube-system' },
      stringData: { token: bait },
    },
  ]);
});

after(async () => {
  if (sandbox) await sandbox.stop();
});

/** kubectl as the forger (impersonated: the API server authorizes every request as that ServiceAccount). */
function asForger(args: string[]): Promise<string> {
  return sandbox.kubectl.run([`--as=${forger}`, ...args]);
}

/**
 * The controller starts the step plugin process (and with it the reconciler) only for a Rollout step of it: a
 * second revision whose one step names a zone the document lacks, so it fails before touching anything.
 */
async function startStepPlugin(): Promise<void> {
  const spec = zoneSpec({});
  await sandbox.kubectl.apply([rolloutObject('starter', spec, [{ pause: {} }])]);
  await eventually('Rollout starter: first revision Healthy', async () =>
    (await rolloutState(kube, 'starter')).status.phase === 'Healthy' ? true : undefined,
  );
  const step = { plugin: { name: 'vmzones/step', config: { zone: 'no-such-zone', action: 'drainReads' } } };
  await sandbox.kubectl.apply([rolloutObject('starter', spec, [step])]);
  const failed = await eventually('Rollout starter: its vmzones step failed at once', async () => {
    const run = runStatus(await rolloutState(kube, 'starter'), 0);
    return run?.phase === 'Failed' ? run : undefined;
  });
  assert.match(failed.message ?? '', /no-such-zone/);
}

/** The records' `reads`: the vm namespace's VMUser, its first zone as the forger's, kube-system pods and Secret. */
function forgedReads() {
  return {
    ref: { kind: 'VMUser', namespace: ns, name: vmuserName },
    pods: [
      {
        namespace: 'kube-system',
        labelSelector: 'component=kube-apiserver',
        port: 6443,
        auth: { bearerToken: { name: 'admin-token', key: 'token' } },
      },
    ],
    zones: sandboxZones
      .slice(0, 2)
      .map((z) => ({ zone: z.zone, namespace: ns, vmcluster: z.vmcluster, hosts: [] })),
    reloadEvidence: 'required',
  };
}

const ghost = { rollout: `${team}/ghost`, uid: 'uid-ghost', revision: 'r1' };

async function refusals(name: string): Promise<{ type?: string; note?: string }[]> {
  const list = await sandbox.kubectl.getJson<{
    items: { reason?: string; type?: string; note?: string; regarding?: { name?: string } }[];
  }>(['events.v1.events.k8s.io', '-n', team]);
  return list.items.filter((e) => e.reason === 'ZoneRecordRefused' && e.regarding?.name === name);
}

test('a user who may only patch VMClusters in team-a forges a handoff and a lease: nothing outside team-a changes, no Secret is read, and the refusal is said', async () => {
  // What the forger may and may not do, asked of the API server.
  assert.equal((await asForger(['auth', 'can-i', 'patch', 'vmclusters', '-n', team])).trim(), 'yes');
  await assert.rejects(
    asForger([
      '-n',
      ns,
      'patch',
      'vmuser',
      vmuserName,
      '--type=merge',
      '-p',
      '{"metadata":{"labels":{"x":"y"}}}',
    ]),
    /forbidden/i,
  );
  await assert.rejects(asForger(['-n', 'kube-system', 'get', 'secret', 'admin-token']), /forbidden/i);

  await startStepPlugin();
  const before = await vmuser(kube);
  const control = faultControl(sandbox);
  const secretReads = (stats: Awaited<ReturnType<typeof control.stats>>) =>
    Object.entries(stats.requests)
      .filter(([label]) => / secrets$/.test(label))
      .reduce((sum, [, n]) => sum + n, 0);
  const secretsBefore = secretReads(await control.stats());

  const requested = '2026-01-01T00:00:00Z';
  await asForger([
    '-n',
    team,
    'annotate',
    'vmcluster',
    'forged-handoff',
    `vmzones.io/handoff=${JSON.stringify({ v: 1, zone: 'zone-a', holder: ghost, requestedAt: requested, by: 'forger', rollback: true, reads: forgedReads(), drainGracePeriod: '0s' })}`,
    `vmzones.io/rollback=${JSON.stringify({ v: 1, ...ghost, zone: 'zone-a', phase: 'requested', appliedAt: requested, generation: 1, changes: [] })}`,
  ]);
  await asForger([
    '-n',
    team,
    'annotate',
    'vmcluster',
    'forged-lease',
    `vmzones.io/lease=${JSON.stringify({ v: 1, ...ghost, zone: 'zone-a', since: requested, reads: forgedReads(), drainGracePeriod: '0s' })}`,
  ]);

  // Four reconciler passes (one every 5 s) after the forgeries.
  await new Promise((resolve) => setTimeout(resolve, 20_000));
  const after = await vmuser(kube);
  assert.deepEqual(
    after.spec?.targetRefs,
    before.spec?.targetRefs,
    "the other namespace's VMUser routes as before",
  );
  assert.deepEqual(
    vmzonesAnnotations(after),
    vmzonesAnnotations(before),
    'and carries no new vmzones record',
  );
  assert.equal(secretReads(await control.stats()), secretsBefore, 'the plugins read no Secret');
  const leased = await kube.get({
    apiVersion: vmApi,
    kind: 'VMCluster',
    namespace: team,
    name: 'forged-handoff',
  });
  assert.equal(vmzonesAnnotations(leased)['vmzones.io/lease'], undefined, 'the zone is left untouched');
  for (const name of ['forged-handoff', 'forged-lease']) {
    const events = await eventually(`a Warning event refusing ${name}'s record`, async () => {
      const found = await refusals(name);
      return found.length > 0 ? found : undefined;
    });
    assert.equal(events[0]?.type, 'Warning');
    assert.match(events[0]?.note ?? '', /refused/);
  }
  const otherEvents = await sandbox.kubectl.getJson<{ items: { reason?: string }[] }>([
    'events.v1.events.k8s.io',
    '-A',
    '--field-selector',
    `metadata.namespace!=${team}`,
  ]);
  assert.deepEqual(
    otherEvents.items.filter((e) => e.reason?.startsWith('Zone')),
    [],
    'no vmzones event outside team-a',
  );
  const log = readFileSync(join(sandbox.state.stateDir, 'logs', 'rollouts-controller.log'), 'utf8');
  assert.match(log, /refused a zone record/);
  assert.ok(!log.includes(bait), 'no Secret value in the log');
});
