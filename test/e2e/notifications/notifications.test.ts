// The vmzones notifications (manifests/notifications/argo-rollouts-notification-configmap.yaml) delivered by the
// real Argo Rollouts controller's notification engine to a webhook receiver on loopback: the ConfigMap as users
// merge it (the webhook's URL pointed at the receiver), a Rollout subscribed with annotations, two walks on the
// sandbox (2 zones, the real operator): one through both zones with an approval between them (zone drained, changed,
// serving again, waiting for approval, walk finished), one whose gate refuses zone-a (gate failed with its code,
// rollback). Each kind must arrive at least once, naming its zone. One sandbox for the file; the tests run in order.
// Run `npm run build` first.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { parse, stringify } from 'yaml';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import {
  notificationKinds,
  notificationsPath,
  triggers,
  webhookService,
} from '../../../scripts/notifications-configmap.ts';
import { applyAnalysisTemplates } from '../../sandbox/analysis-templates.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { controllerNamespace } from '../../sandbox/manifests.ts';
import { leftoversIn } from '../reliability/support.ts';
import {
  eventually,
  latencyOffset,
  ns,
  type RolloutState,
  rolloutCanProgress,
  rolloutObject,
  rolloutStanding,
  rolloutState,
  sandboxKube,
  stepsFor,
} from '../step/harness.ts';

const name = 'notified';
const zones = ['zone-a', 'zone-b'];
const zoneList = zones.map((zone) => ({ zone, vmcluster: `vm-${zone}` }));
/** A gate that refuses zone-a: the vmclusterReady gate with a failureCondition on its zone (code ConditionFailed). */
const refusingTemplate = 'vmzones-e2e-refuse-zone-a';

interface Delivery {
  at: number;
  kind: string;
  zones: string[];
  code?: string;
  text: string;
}

let sandbox: Sandbox;
let kube: KubeObjects;
let receiver: Server;
const deliveries: Delivery[] = [];
const report: string[] = [];
const started = Date.now();

function spec(overrideSpec: object): Record<string, unknown> {
  return {
    overrideSpec,
    vmauth: { vmuser: 'vmauth-read', drainGracePeriod: '3s' },
    vmagent: { vmagent: 'vmagent' },
    zones: Object.fromEntries(zones.map((z) => [z, { vmcluster: `vm-${z}` }])),
  };
}

/** The Rollout, subscribed to every vmzones trigger through the webhook service. */
function subscribed(object: object): object {
  const rollout = object as { metadata: { annotations?: Record<string, string> } };
  rollout.metadata.annotations = Object.fromEntries(
    Object.keys(triggers).map((trigger) => [
      `notifications.argoproj.io/subscribe.${trigger}.${webhookService}`,
      '',
    ]),
  );
  return rollout;
}

before(async () => {
  receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString('utf8');
    });
    request.on('end', () => {
      try {
        const parsed = JSON.parse(body) as Omit<Delivery, 'at'>;
        deliveries.push({ ...parsed, at: Date.now() });
      } catch {
        deliveries.push({ at: Date.now(), kind: 'not-json', zones: [], text: body.slice(0, 500) });
      }
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/vmzones`;

  sandbox = await startSandbox({ zones: zones.length, podRestartSeconds: 2, plugin: true });
  report.push(`sandbox start: ${sandbox.state.startSeconds?.toFixed(1)} s`);
  kube = sandboxKube(sandbox);
  await applyAnalysisTemplates(sandbox.kubectl);
  await sandbox.kubectl.apply([
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'ClusterAnalysisTemplate',
      metadata: { name: refusingTemplate },
      spec: {
        args: [{ name: 'zone' }],
        metrics: [
          {
            name: 'vmcluster-ready',
            failureCondition: 'result.zone == "zone-a"',
            provider: { plugin: { 'vmzones/gates': { gate: 'vmclusterReady', zone: '{{args.zone}}' } } },
          },
        ],
      },
    },
  ]);
  // The ConfigMap as a user merges it, with the example webhook's URL replaced by the receiver's.
  const configMap = parse(readFileSync(notificationsPath, 'utf8')) as {
    metadata: Record<string, unknown>;
    data: Record<string, string>;
  };
  const service = parse(configMap.data[`service.webhook.${webhookService}`] ?? '') as { url: string };
  configMap.data[`service.webhook.${webhookService}`] = stringify({ ...service, url });
  configMap.metadata.namespace = controllerNamespace;
  await sandbox.kubectl.apply([
    configMap,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'argo-rollouts-notification-secret', namespace: controllerNamespace },
      stringData: { 'slack-token': 'not-used-here' },
    },
  ]);
  const first = spec({});
  await sandbox.kubectl.apply([
    subscribed(rolloutObject(name, first, stepsFor(first, 'manual', 'vmzones-vmcluster-ready'))),
  ]);
  await eventually(
    'the first revision (no steps run) to be Healthy',
    async () => ((await rolloutState(kube, name)).status.phase === 'Healthy' ? true : undefined),
    { unless: rolloutCanProgress(kube, name) },
  );
});

after(async () => {
  report.push(`e2e wall time (sandbox start included): ${((Date.now() - started) / 1000).toFixed(0)} s`);
  console.log(`\n---- notifications: figures ----\n${report.join('\n')}\n`);
  receiver?.close();
  if (sandbox) await sandbox.stop();
});

function since(t0: number): Delivery[] {
  return deliveries.filter((d) => d.at >= t0);
}

function describe(list: readonly Delivery[]): string {
  return list.map((d) => `  ${d.kind}: ${d.text}`).join('\n');
}

/** How long the controller may take to notify once the Rollout is in the state a trigger names. */
const notifyWithinMs = 90_000;

/**
 * Waits for a delivery of `kind` since `t0`. While none came, the wait's last error says where the Rollout stands and
 * what did arrive; once the Rollout has been in the state the trigger names (`shows`) for notifyWithinMs with still
 * no delivery, the wait fails at once: the walk was on time and the notification was not.
 */
async function delivered(
  kind: string,
  what: string,
  t0: number,
  timeoutMs: number,
  walk: { shows?: (s: RolloutState) => boolean; mustProgress: boolean },
): Promise<Delivery> {
  const { shows } = walk;
  let showingSince: number | undefined;
  const silent = async (): Promise<string | undefined> => {
    if (shows === undefined) return undefined;
    const s = await rolloutState(kube, name).catch(() => undefined);
    if (s === undefined || !shows(s)) {
      showingSince = undefined;
      return undefined;
    }
    showingSince ??= Date.now();
    if (since(t0).some((d) => d.kind === kind)) return undefined;
    return Date.now() - showingSince > notifyWithinMs
      ? `the Rollout has shown it for ${((Date.now() - showingSince) / 1000).toFixed(0)} s (${rolloutStanding(s)}) but no ${kind} notification came; delivered since:\n${describe(since(t0))}`
      : undefined;
  };
  return eventually(
    what,
    async () => {
      const got = since(t0).find((d) => d.kind === kind);
      if (got !== undefined) return got;
      const s = await rolloutState(kube, name);
      throw new Error(`none yet; ${rolloutStanding(s)}; delivered since:\n${describe(since(t0))}`);
    },
    { timeoutMs, unless: walk.mustProgress ? [rolloutCanProgress(kube, name), silent] : [silent] },
  );
}

/** The Rollout is paused at a step for approval. */
const pausedForApproval = (s: RolloutState) =>
  (s.status.pauseConditions ?? []).some((p) => p.reason === 'CanaryPauseStep');
/** The walk ended: Healthy on the new revision. */
const walkedThrough = (s: RolloutState) =>
  s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash;

test('a walk through two zones with an approval: drained, changed, serving again, waiting for approval, walk finished — each naming its zone', async () => {
  const t0 = Date.now();
  const change = spec(latencyOffset('6s'));
  await sandbox.kubectl.apply([
    subscribed(rolloutObject(name, change, stepsFor(change, 'manual', 'vmzones-vmcluster-ready'))),
  ]);
  const approval = await delivered(
    'waiting-for-approval',
    'the webhook to be told the Rollout waits for approval',
    t0,
    240_000,
    { shows: pausedForApproval, mustProgress: true },
  );
  assert.deepEqual(approval.zones, ['zone-b'], 'the next zone');
  assert.match(approval.text, /zone zone-a walked, zone zone-b next/);
  await sandbox.rollouts(['promote', name, '-n', ns]);
  const finished = await delivered('walk-finished', 'the webhook to be told the walk finished', t0, 360_000, {
    shows: walkedThrough,
    mustProgress: true,
  });
  assert.deepEqual(finished.zones, zones);
  const seen = since(t0);
  report.push(
    `walk (${((finished.at - t0) / 1000).toFixed(0)} s), notifications in order:\n${describe(seen)}`,
  );
  for (const zone of zones) {
    for (const kind of ['zone-drained', 'zone-changed', 'zone-restored']) {
      const got = seen.filter((d) => d.kind === kind && d.zones.includes(zone));
      assert.equal(got.length, 1, `${kind} for ${zone} once:\n${describe(seen)}`);
      assert.match(got[0]?.text ?? '', new RegExp(`zone ${zone}`), `${kind} names ${zone}`);
    }
  }
  const order = seen.map((d) => `${d.kind}:${d.zones.join(',')}`);
  assert.deepEqual(
    order,
    [
      'zone-drained:zone-a',
      'zone-changed:zone-a',
      'zone-restored:zone-a',
      'waiting-for-approval:zone-b',
      'zone-drained:zone-b',
      'zone-changed:zone-b',
      'zone-restored:zone-b',
      'walk-finished:zone-a,zone-b',
    ],
    describe(seen),
  );
});

test('a gate that fails zone-a: gate failed with its code and zone, then the rollback naming the changed zone', async () => {
  const t0 = Date.now();
  const change = spec(latencyOffset('7s'));
  await sandbox.kubectl.apply([
    subscribed(rolloutObject(name, change, stepsFor(change, 'none', refusingTemplate))),
  ]);
  const failed = await delivered('gate-failed', 'the webhook to be told zone-a’s gate failed', t0, 180_000, {
    mustProgress: false,
  });
  assert.deepEqual(failed.zones, ['zone-a']);
  assert.equal(failed.code, 'ConditionFailed');
  assert.match(
    failed.text,
    /zone zone-a: gate vmcluster-ready Failed \(ConditionFailed\): failureCondition is true/,
  );
  const rollback = await delivered('rollback', 'the webhook to be told of the rollback', t0, 120_000, {
    mustProgress: false,
  });
  assert.deepEqual(rollback.zones, ['zone-a'], 'the zone this revision changed');
  assert.match(rollback.text, /rolls back the zones this revision changed \(zone-a\)/);
  report.push(`gate failure, notifications in order:\n${describe(since(t0))}`);
  // Every way a walk ends ends with every zone released and serving: wait for the reconciler's rollback.
  await eventually(
    'every zone rolled back or released, and serving',
    async () => {
      const left = await leftoversIn(Object.fromEntries(zones.map((z) => [z, kube])), kube, change, zoneList);
      return left.length === 0 ? true : undefined;
    },
    { timeoutMs: 180_000 },
  );
  const kindsSeen = new Set(deliveries.map((d) => d.kind));
  for (const kind of notificationKinds) assert.ok(kindsSeen.has(kind), `no ${kind} notification arrived`);
  assert.ok(!kindsSeen.has('not-json'), 'every body is JSON');
});
