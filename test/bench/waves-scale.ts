// `npm run bench` part: a walk over many zones (default 40) in waves against the same walk one zone at a time, with
// the real Argo Rollouts controller and the real plugins (behind the sandbox's fault proxy in pass-through mode,
// which counts every request they make). The steps are what `vmzones render` writes for the spec document
// (drainReads, apply, one gate AnalysisRun, restoreReads per wave), with the readiness gate only
// (vmzones-vmcluster-ready): placeholder zones have no vmagent queue for the drain gate to read.
//
// The zones are placeholders, as in test/bench/scale.ts: VMClusters in namespace `scale` that no operator
// reconciles (the real operator watches only `vm`; the data plane finds no version to run). This bench's fixtures,
// in the open:
//   - the operator's status: whenever a placeholder VMCluster's generation is ahead of its status, it is written
//     operational at that generation (what the operator reports once a change has rolled out, without the time
//     the rollout takes);
//   - the read balancer: a real vmauth process whose config is a Secret (a helm-managed vmauth,
//     test/e2e/step/helm-vmauth.ts) routing reads to every placeholder zone's vmselect URL; the step plugin
//     takes zones out and puts them back, and vmauth's reload metrics are the evidence, as in a cluster. No query
//     reaches the placeholder URLs, so the drain waits its grace period (drainQueryCheck: grace).
//
// Two Rollouts, each over its own placeholder zones, walked one after the other with the same timings:
//   waves          — `waves`: a canary zone, then doubling waves up to 8 zones, then waves of 8 (40 zones: 1, 2, 4,
//                    8, 8, 8, 9); the budget's maxZonesOut defaults to the widest wave;
//   one_at_a_time  — no waves: today's walk, one zone per wave.
// Prints `name value` lines: waves<N>_wall_s_<way>, waves<N>_wall_ratio_waves_over_one, waves<N>_analysisruns_<way>,
// waves<N>_kube_requests_<way> and _per_s_<way>, the time in each action's steps (step_s_<way>_<action>, summed
// from the controller's startedAt/finishedAt), what the walk left (zones serving and changed), the Rollout's
// stored size at the end of each walk with every step status (waves<N>_rollout_bytes_<way>, the largest seen during
// the walk, and _per_zone_<way>) and where etcd's default request limit (1.5 MiB, --max-request-bytes) falls:
// waves<N>_zones_at_etcd_limit_<way>; last, the larger of the two (waves<N>_rollout_bytes, _zones_at_etcd_limit).
// Flags: --zones N (default 40), --only waves|one_at_a_time (walk one way only: no ratio).

import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { KubeObject } from '../../plugin/kube/objects.ts';
import { renderSteps } from '../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../plugin/zones/spec.ts';
import { rolloutObject, sandboxKube } from '../e2e/step/harness.ts';
import { helmPodLabels, helmSecret, helmUser, startHelmVmauth } from '../e2e/step/helm-vmauth.ts';
import { applyAnalysisTemplates } from '../sandbox/analysis-templates.ts';
import { FaultControl } from '../sandbox/fault-proxy.ts';
import { startSandbox } from '../sandbox/helper.ts';
import { placeholderNamespace, placeholderVmagent, placeholderVmcluster } from './placeholders.ts';
import { fixed } from './rollout-sandbox.ts';
import { waitFor } from './rollout-vmzones.ts';

const { values } = parseArgs({
  options: { zones: { type: 'string', default: '40' }, only: { type: 'string' } },
});
const zoneCount = Number(values.zones);
if (!Number.isInteger(zoneCount) || zoneCount < 2 || zoneCount > 99) {
  console.error('waves bench: --zones must be a whole number from 2 to 99');
  process.exit(2);
}
if (values.only !== undefined && values.only !== 'waves' && values.only !== 'one_at_a_time') {
  console.error('waves bench: --only must be waves or one_at_a_time');
  process.exit(2);
}
const prefix = `waves${zoneCount}`;
const started = Date.now();
const log = (line: string) =>
  console.error(`[waves bench ${fixed((Date.now() - started) / 1000, 0).padStart(4)} s] ${line}`);
const out = (name: string, value: number | string) =>
  console.log(`${prefix}_${name} ${typeof value === 'number' ? fixed(value, 2) : value}`);

/** etcd's default --max-request-bytes: a write of a larger object is refused. */
const etcdRequestLimitBytes = 1.5 * 1024 * 1024;
const scaleNs = 'scale';
const vmGroup = { group: 'operator.victoriametrics.com', version: 'v1beta1' };
const ways = ['waves', 'one_at_a_time'] as const;
type Way = (typeof ways)[number];
const rolloutName: Record<Way, string> = { waves: 'waves', one_at_a_time: 'one-at-a-time' };
const zoneNames = Array.from({ length: zoneCount }, (_, i) => `zone-${String(i).padStart(2, '0')}`);
const vmclusterOf = (way: Way, zone: string) => `${way === 'waves' ? 'w' : 'o'}-${zone}`;

/** A canary zone, then doubling waves up to 8 zones, then waves of 8; a remainder of 1 or 2 joins the last wave. */
function growingWaves(zones: readonly string[], widest = 8): string[][] {
  const waves: string[][] = [];
  let next = 0;
  for (let size = 1; next < zones.length; size = Math.min(size * 2, widest)) {
    waves.push(zones.slice(next, next + size));
    next += size;
  }
  const last = waves.at(-1) ?? [];
  if (waves.length > 1 && last.length <= 2 && (waves.at(-2)?.length ?? 0) === widest) {
    waves.pop();
    waves.at(-1)?.push(...last);
  }
  return waves;
}

function vmselectUrl(vmcluster: string): string {
  return `http://vmselect-${vmcluster}.${scaleNs}.svc:8481/select/0/prometheus/`;
}

/** The vmauth config: one user whose reads go to every placeholder zone of both Rollouts. */
function balancerConfig(): string {
  const urls = ways.flatMap((way) => zoneNames.map((z) => `        - ${vmselectUrl(vmclusterOf(way, z))}`));
  return [
    'users:',
    `  - username: ${helmUser.username}`,
    `    password: '${helmUser.password}'`,
    '    url_map:',
    '      - src_paths: ["/api/v1/.*"]',
    '        url_prefix:',
    ...urls,
    '',
  ].join('\n');
}

function specDocument(way: Way, overrideSpec: object): string {
  return stringify({
    overrideSpec,
    readyTimeout: '5m',
    vmauth: {
      secret: helmSecret,
      pods: [
        {
          labelSelector: Object.entries(helmPodLabels)
            .map(([k, v]) => `${k}=${v}`)
            .join(','),
          port: 'http',
        },
      ],
      drainGracePeriod: '2s',
      drainQueryCheck: 'grace',
    },
    vmagent: { vmagent: placeholderVmagent },
    zones: Object.fromEntries(zoneNames.map((z) => [z, { vmcluster: vmclusterOf(way, z) }])),
    ...(way === 'waves' ? { waves: growingWaves(zoneNames) } : {}),
  });
}

function placeholderRollout(way: Way, overrideSpec: object): object {
  const spec = specDocument(way, overrideSpec);
  const steps = renderSteps(parseSpecDocument(spec), {
    pauseBetweenZones: 'none',
    healthTemplate: 'vmzones-vmcluster-ready',
  });
  const rollout = rolloutObject(rolloutName[way], spec, steps) as {
    metadata: { namespace: string };
    spec: Record<string, unknown>;
  };
  rollout.metadata.namespace = scaleNs;
  // Keep every AnalysisRun of the walk (the controller deletes successful ones beyond 5 by default) to count them.
  rollout.spec.analysis = { successfulRunHistoryLimit: 1000, unsuccessfulRunHistoryLimit: 1000 };
  return rollout;
}

function placeholderObjects(): object[] {
  return [
    ...placeholderNamespace(scaleNs),
    ...ways.flatMap((way) => zoneNames.map((zone) => placeholderVmcluster(vmclusterOf(way, zone), scaleNs))),
  ];
}

// ---- the run ----

log(`starting a sandbox (real operator watching vm only, fault proxy, 2 × ${zoneCount} placeholder zones)`);
const sandbox = await startSandbox({
  zones: 1,
  plugin: true,
  faultProxy: true,
  operatorWatchNamespaces: ['vm'],
  log: () => {},
});
let failed = false;
let stopOperator = false;
let operatorLoop: Promise<void> = Promise.resolve();
let vmauth: { stop(): Promise<void> } | undefined;
try {
  const kube = sandboxKube(sandbox);
  const kc = new KubeConfig();
  kc.loadFromFile(sandbox.state.kubeconfig);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const proxyControl = sandbox.state.faultProxy?.controlUrl;
  if (proxyControl === undefined) throw new Error('the sandbox started without its fault proxy');
  const proxy = new FaultControl(proxyControl);

  await applyAnalysisTemplates(sandbox.kubectl);
  await sandbox.kubectl.apply(placeholderObjects());

  // Plays the operator for the placeholder zones: a generation ahead of the status becomes operational at it.
  const reportOperational = async () => {
    const clusters = await kube.list('operator.victoriametrics.com/v1beta1', 'VMCluster', scaleNs);
    const behind = clusters.filter((c) => {
      const status = c.status as { observedGeneration?: number; updateStatus?: string } | undefined;
      return status?.updateStatus !== 'operational' || status.observedGeneration !== c.metadata.generation;
    });
    await Promise.all(
      behind.map((c) =>
        custom.patchNamespacedCustomObjectStatus(
          {
            ...vmGroup,
            namespace: scaleNs,
            plural: 'vmclusters',
            name: c.metadata.name ?? '',
            body: {
              status: {
                updateStatus: 'operational',
                observedGeneration: c.metadata.generation ?? 1,
                reason: '',
              },
            },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
      ),
    );
    return behind.length;
  };
  await reportOperational();
  operatorLoop = (async () => {
    while (!stopOperator) {
      try {
        await reportOperational();
      } catch (error) {
        log(`placeholder operator: ${error instanceof Error ? error.message : String(error)} (retrying)`);
      }
      await sleep(500);
    }
  })();

  vmauth = await startHelmVmauth(sandbox, kube, [], { namespace: scaleNs, config: balancerConfig() });
  log('placeholder zones operational, vmauth routing reads to all of them; first revisions');
  await sandbox.kubectl.apply(ways.map((way) => placeholderRollout(way, {})));

  const rolloutRaw = async (way: Way) =>
    sandbox.kubectl.run([
      'get',
      '--raw',
      `/apis/argoproj.io/v1alpha1/namespaces/${scaleNs}/rollouts/${rolloutName[way]}`,
    ]);
  interface WalkStatus {
    phase?: string;
    message?: string;
    abort?: boolean;
    currentPodHash?: string;
    stableRS?: string;
  }
  const rolloutNow = (way: Way) =>
    kube.get({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Rollout',
      namespace: scaleNs,
      name: rolloutName[way],
    });
  const statusOf = async (way: Way) => ((await rolloutNow(way)).status ?? {}) as WalkStatus;
  /** Healthy at a revision other than `previousHash` (the one before the apply), its walk finished. */
  const done = async (way: Way, previousHash: string | undefined) => {
    const status = await statusOf(way);
    if (status.abort === true || status.phase === 'Degraded')
      throw new Error(`Rollout ${rolloutName[way]} ${status.phase ?? 'aborted'}: ${status.message ?? ''}`);
    const current = status.currentPodHash;
    return status.phase === 'Healthy' &&
      current !== undefined &&
      current !== previousHash &&
      status.stableRS === current
      ? true
      : undefined;
  };
  for (const way of ways) await waitFor(() => done(way, undefined), 600_000);
  log('both Rollouts Healthy at their first revision');

  const analysisRunsOf = async (way: Way) =>
    (await kube.list('argoproj.io/v1alpha1', 'AnalysisRun', scaleNs)).filter((a) =>
      a.metadata.ownerReferences?.some((o) => o.kind === 'Rollout' && o.name === rolloutName[way]),
    );
  const wall: Partial<Record<Way, number>> = {};
  const rolloutBytes: number[] = [];
  const zonesAtLimit: number[] = [];
  for (const way of ways.filter((w) => values.only === undefined || w === values.only)) {
    const before = new Set((await analysisRunsOf(way)).map((a) => a.metadata.name));
    const rollout = placeholderRollout(way, { retentionPeriod: '2' }) as {
      spec: { strategy: { canary: { steps: unknown[] } } };
    };
    const stepCount = rollout.spec.strategy.canary.steps.length;
    const previousHash = (await statusOf(way)).currentPodHash;
    log(`${way}: second revision, ${stepCount} steps`);
    await proxy.reset();
    const from = Date.now();
    await sandbox.kubectl.apply([rollout]);
    let largest = 0;
    // Polled every 2 s, in process: the walk's own requests are what is measured, not this loop's.
    for (const until = from + 3_600_000; ; await sleep(2000)) {
      largest = Math.max(largest, JSON.stringify(await rolloutNow(way)).length);
      if ((await done(way, previousHash)) === true) break;
      if (Date.now() > until) throw new Error(`${way}: the walk did not finish within an hour`);
    }
    const seconds = (Date.now() - from) / 1000;
    const stats = await proxy.stats();
    wall[way] = seconds;
    // What the walk left: every zone back in the balancer and at the new generation (a walk that skipped its
    // moves would show here, not only in the wall time).
    const secret = (await kube.get({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: scaleNs,
      name: helmSecret.name,
    })) as {
      data?: Record<string, string>;
    };
    const served = Buffer.from(secret.data?.[helmSecret.key] ?? '', 'base64').toString('utf8');
    out(
      `zones_serving_after_${way}`,
      zoneNames.filter((z) => served.includes(vmselectUrl(vmclusterOf(way, z)))).length,
    );
    const clusters = await kube.list('operator.victoriametrics.com/v1beta1', 'VMCluster', scaleNs);
    out(
      `zones_changed_${way}`,
      clusters.filter(
        (c) =>
          zoneNames.some((z) => vmclusterOf(way, z) === c.metadata.name) &&
          (c.spec as { retentionPeriod?: string } | undefined)?.retentionPeriod === '2',
      ).length,
    );
    const raw = await rolloutRaw(way);
    // Where the time went: each plugin step's Run, from the controller's own record of it, summed by action.
    const steps = rollout.spec.strategy.canary.steps as { plugin?: { config?: { action?: string } } }[];
    const byAction = new Map<string, number>();
    for (const st of (JSON.parse(raw) as { status?: { canary?: { stepPluginStatuses?: StepRecord[] } } })
      .status?.canary?.stepPluginStatuses ?? []) {
      const action = steps[st.index ?? -1]?.plugin?.config?.action;
      if (action === undefined || st.operation !== 'Run' || !st.startedAt || !st.finishedAt) continue;
      const ms = Date.parse(st.finishedAt) - Date.parse(st.startedAt);
      byAction.set(action, (byAction.get(action) ?? 0) + ms);
    }
    for (const [action, ms] of byAction) out(`step_s_${way}_${action}`, ms / 1000);
    const runs = (await analysisRunsOf(way)).filter((a) => !before.has(a.metadata.name));
    log(`${way}: Healthy after ${fixed(seconds, 0)} s`);
    out(`wall_s_${way}`, seconds);
    out(`steps_${way}`, stepCount);
    out(`analysisruns_${way}`, runs.length);
    out(`kube_requests_${way}`, stats.requestsTotal);
    out(`kube_requests_per_s_${way}`, stats.requestsTotal / seconds);
    for (const [key, count] of Object.entries(stats.requests)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 16))
      out(`kube_requests_${way}_${key.replace(/[ /]/g, '_')}`, count);
    const size = rolloutSize(JSON.parse(raw) as KubeObject, raw.length);
    out(`rollout_bytes_${way}`, raw.length);
    out(`rollout_bytes_largest_${way}`, Math.max(largest, raw.length));
    out(`rollout_step_statuses_${way}`, size.stepStatuses);
    out(`rollout_bytes_per_zone_${way}`, size.perZone);
    out(`zones_at_etcd_limit_${way}`, Math.floor(size.zonesAt(etcdRequestLimitBytes)));
    rolloutBytes.push(Math.max(largest, raw.length));
    zonesAtLimit.push(Math.floor(size.zonesAt(etcdRequestLimitBytes)));
  }
  const wavesWall = wall.waves;
  const oneWall = wall.one_at_a_time;
  if (wavesWall !== undefined && oneWall !== undefined) out('wall_ratio_waves_over_one', wavesWall / oneWall);
  // The larger Rollout of the two ways, and so the fewer zones before etcd's limit.
  out('rollout_bytes', Math.max(...rolloutBytes));
  out('zones_at_etcd_limit', Math.min(...zonesAtLimit));
} catch (error) {
  failed = true;
  console.error(`waves bench did not complete: ${error instanceof Error ? error.message : String(error)}`);
  console.error(`  logs: ${sandbox.state.stateDir}/logs`);
} finally {
  stopOperator = true;
  await operatorLoop;
  await vmauth?.stop();
  await sandbox.stop();
}
if (failed) process.exitCode = 1;

/** One step's record in the Rollout's status, as the controller writes it. */
interface StepRecord {
  index?: number;
  operation?: string;
  startedAt?: string;
  finishedAt?: string;
}

interface RolloutParts {
  metadata?: { annotations?: Record<string, string>; managedFields?: unknown[] };
  spec?: {
    template?: { metadata?: { annotations?: Record<string, string> } };
    strategy?: { canary?: { steps?: unknown[] } };
  };
  status?: { canary?: { stepPluginStatuses?: unknown[] } };
}

/**
 * The stored Rollout split into what grows with the zones — the spec document (one entry per zone), the steps (per
 * wave or zone), the step statuses (per step run) — and the rest, so that the size at another zone count is the
 * rest plus that many times the part per zone. Managed fields count as growing: an overestimate per zone, so the
 * zone count at the limit errs low.
 */
function rolloutSize(object: KubeObject, bytes: number) {
  const zoneFree = structuredClone(object) as RolloutParts;
  const template = zoneFree.spec?.template?.metadata?.annotations;
  if (template !== undefined) delete template['vmzones.io/spec'];
  if (zoneFree.spec?.strategy?.canary !== undefined) zoneFree.spec.strategy.canary.steps = [];
  const stepStatuses = zoneFree.status?.canary?.stepPluginStatuses?.length ?? 0;
  if (zoneFree.status?.canary !== undefined) zoneFree.status.canary.stepPluginStatuses = [];
  if (zoneFree.metadata !== undefined) {
    delete zoneFree.metadata.managedFields;
    delete zoneFree.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration'];
  }
  const fixedBytes = JSON.stringify(zoneFree).length;
  const perZone = (bytes - fixedBytes) / zoneCount;
  return { stepStatuses, perZone, zonesAt: (limit: number) => (limit - fixedBytes) / perZone };
}
