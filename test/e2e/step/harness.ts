// Helpers for the step-plugin tests on the sandbox: a Kubernetes client on its API server, waiting, Rollouts
// that carry a spec document, a continuous read prober through vmauth, a watcher of the "never route reads to a
// zone that is not operational" invariant, and a crash-and-restart of the real Argo Rollouts controller.

import { readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { z } from 'zod';
import { kubeconfigConnection } from '../../../plugin/kube/kube-config.ts';
import { type KubeObject, type KubeObjects, kubeObjects } from '../../../plugin/kube/objects.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import { vmApiVersion, vmclusterReadiness, vmclusterRef } from '../../../plugin/vm/vmcluster.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { type ZoneKindName, zoneKindOrDefault, zoneObjectRef } from '../../../plugin/vm/zone-kinds.ts';
import { type CanaryStep, renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { readBackends } from '../../../plugin/zones/step/target.ts';
import {
  type EventuallyOptions,
  type StillPossible,
  eventually as waitUntil,
} from '../../sandbox/eventually.ts';
import type { Sandbox } from '../../sandbox/helper.ts';
import { fetchFrom } from '../../sandbox/http.ts';
import { type DaemonRecord, expectEnd, startDaemon } from '../../sandbox/processes.ts';
import type { ZoneClusterState } from '../../sandbox/zone-clusters.ts';

export const ns = 'vm';

export function sandboxKube(sandbox: Sandbox): KubeObjects {
  return kubeObjects(kubeconfigConnection([sandbox.state.kubeconfig]));
}

/** test/sandbox/eventually.ts's, waiting longer by default: a zone walk includes restarts and vmauth reloads. */
export function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutOrOptions: number | EventuallyOptions = {},
  intervalMs?: number,
) {
  const options = typeof timeoutOrOptions === 'number' ? { timeoutMs: timeoutOrOptions } : timeoutOrOptions;
  return waitUntil(what, check, { timeoutMs: 120_000, ...options }, intervalMs);
}

/**
 * For a wait on a Rollout's progress (Healthy, a pause): it can no longer come once the Rollout is aborted or
 * Degraded, and the wait fails at once naming the phase and the controller's message.
 */
export function rolloutCanProgress(kube: KubeObjects, name: string): StillPossible {
  return async () => {
    const s = await rolloutState(kube, name).catch(() => undefined);
    if (s?.status.abort === true) return `Rollout ${name} was aborted: ${s.status.message ?? ''}`;
    if (s?.status.phase === 'Degraded') return `Rollout ${name} is Degraded: ${s.status.message ?? ''}`;
    return undefined;
  };
}

/** The sandbox's three zones and their VMClusters (zoneSpec names the same). */
export const sandboxZones = [
  { zone: 'zone-a', vmcluster: 'vm-zone-a' },
  { zone: 'zone-b', vmcluster: 'vm-zone-b' },
  { zone: 'zone-c', vmcluster: 'vm-zone-c' },
];

/** A change that restarts a zone: a vmstorage flag. */
export const latencyOffset = (value: string) => ({
  vmstorage: { extraArgs: { 'search.latencyOffset': value } },
});

// ---- Rollouts carrying a spec document ----

export interface SpecDocument {
  [key: string]: unknown;
}

export function zoneSpec(overrideSpec: object, extra: Partial<SpecDocument> = {}): SpecDocument {
  return {
    overrideSpec,
    vmauth: { vmuser: 'vmauth-read', drainGracePeriod: '3s' },
    vmagent: { vmagent: 'vmagent' },
    zones: {
      'zone-a': { vmcluster: 'vm-zone-a' },
      'zone-b': { vmcluster: 'vm-zone-b' },
      'zone-c': { vmcluster: 'vm-zone-c' },
    },
    ...extra,
  };
}

/**
 * The spec's `zones` map for zones spread over the sandbox's clusters: a zone of a zone cluster names that cluster
 * and reaches its data plane at the cluster's published address; the others live in the hub.
 */
export function zonesAcrossClusters(
  zones: readonly { zone: string; vmcluster: string }[],
  zoneClusters: readonly ZoneClusterState[],
): Record<string, object> {
  const remote = new Map(zoneClusters.map((c) => [c.zone, c]));
  return Object.fromEntries(
    zones.map((z) => {
      const zc = remote.get(z.zone);
      return [
        z.zone,
        zc === undefined
          ? { vmcluster: z.vmcluster }
          : {
              cluster: zc.name,
              vmcluster: z.vmcluster,
              vmselectHosts: [zc.address],
              vminsertHosts: [zc.address],
            },
      ];
    }),
  );
}

/** The steps `vmzones render` writes; without a health template (the default here) no analysis runs. */
export function stepsFor(
  spec: SpecDocument,
  pauseBetweenZones: 'none' | 'manual',
  healthTemplate = '',
): CanaryStep[] {
  return renderSteps(parseSpecDocument(stringify(spec)), { healthTemplate, pauseBetweenZones });
}

/**
 * The steps with each gate's scrape rounds `spacing` apart, by default the templates' own 1.5 s
 * (analysis-templates/, docs/gates.md "Why rounds 1.5 s apart"): the sandbox's load generator writes every second,
 * so each round sees data delivered. A test that needs rounds a call apart passes a longer spacing.
 */
export function withRoundSpacing(steps: CanaryStep[], spacing = '1.5s'): CanaryStep[] {
  return steps.map((step) =>
    'analysis' in step
      ? {
          analysis: {
            ...step.analysis,
            args: [
              ...step.analysis.args.filter((a) => a.name !== 'roundSpacing'),
              { name: 'roundSpacing', value: spacing },
            ],
          },
        }
      : step,
  );
}

let revisions = 0;

/**
 * A Rollout whose pod template carries the spec document. Each call gets its own revision annotation: a template
 * equal to the stable one is a rollback to stable for Argo Rollouts, which skips every step.
 */
export function rolloutObject(name: string, spec: SpecDocument | string, steps: object[]): object {
  revisions++;
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: {
          labels: { app: name },
          annotations: {
            'vmzones.io/spec': typeof spec === 'string' ? spec : stringify(spec),
            'e2e.vmzones.io/revision': String(revisions),
          },
        },
        spec: { containers: [{ name: 'placeholder', image: 'registry.k8s.io/pause:3.10' }] },
      },
      strategy: { canary: { steps } },
    },
  };
}

export interface StepPluginStatus {
  index: number;
  name: string;
  operation: 'Run' | 'Abort' | 'Terminate';
  phase?: string;
  message?: string;
  executions?: number;
  status?: Record<string, unknown>;
}

export interface RolloutState {
  metadata: { uid: string; generation: number };
  status: {
    phase?: string;
    message?: string;
    abort?: boolean;
    currentStepIndex?: number;
    currentPodHash?: string;
    stableRS?: string;
    canary?: { stepPluginStatuses?: StepPluginStatus[] };
    pauseConditions?: { reason: string }[] | null;
  };
}

/** Only what the tests read is checked; a Rollout the controller has not given a status yet has an empty one
 *  (a poll right after the apply must see "not Healthy yet", not crash on `status.phase`). */
const rolloutStateSchema = z.looseObject({
  metadata: z.looseObject({ uid: z.string(), generation: z.number() }),
  status: z
    .looseObject({
      phase: z.string().optional(),
      message: z.string().optional(),
      abort: z.boolean().optional(),
      currentStepIndex: z.number().optional(),
      currentPodHash: z.string().optional(),
      stableRS: z.string().optional(),
      canary: z
        .looseObject({
          stepPluginStatuses: z.array(z.custom<StepPluginStatus>((v) => typeof v === 'object')).optional(),
        })
        .optional(),
      pauseConditions: z.array(z.looseObject({ reason: z.string() })).nullish(),
    })
    .default({}),
});

export async function rolloutState(kube: KubeObjects, name: string): Promise<RolloutState> {
  const object = await kube.get({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', namespace: ns, name });
  return rolloutStateSchema.parse(object);
}

export function pluginStatuses(state: RolloutState): StepPluginStatus[] {
  return (state.status.canary?.stepPluginStatuses ?? []).map((s) => ({ ...s, index: s.index ?? 0 }));
}

export function runStatus(state: RolloutState, index: number): StepPluginStatus | undefined {
  return pluginStatuses(state).find((s) => s.index === index && s.operation === 'Run');
}

/** Where a Rollout stands, for a wait's message: its phase, step, that step's plugin status, pauses, abort. */
export function rolloutStanding(s: RolloutState, name?: string): string {
  const at = s.status.currentStepIndex;
  const step = at === undefined ? undefined : runStatus(s, at);
  const pauses = (s.status.pauseConditions ?? []).map((p) => p.reason).join(',');
  return [
    `${name === undefined ? '' : `${name}: `}phase ${s.status.phase ?? '-'} at step ${at ?? '-'}`,
    step === undefined ? '' : ` (${step.phase}: ${step.message ?? ''})`,
    pauses === '' ? '' : `, paused ${pauses}`,
    s.status.abort === true ? ', aborted' : '',
    s.status.message ? ` — ${s.status.message}` : '',
  ].join('');
}

/** A view of a Rollout as the plugin receives it, for in-process runs against the sandbox. */
export function rolloutView(name: string, uid: string, revision: string, spec: SpecDocument): RolloutView {
  return {
    metadata: { name, namespace: ns, uid },
    spec: { template: { metadata: { annotations: { 'vmzones.io/spec': stringify(spec) } } }, strategy: {} },
    status: { currentPodHash: revision },
  };
}

// ---- A user who may only annotate zone objects of its own namespace ----

/**
 * The manifests of an RBAC-limited user: namespace `team`, its ServiceAccount `forger`, and a Role that lets it get,
 * list and patch VMClusters there and nothing else. `forgerOf(team)` is the user kubectl impersonates (`--as`).
 */
export function vmclusterAnnotator(team: string): object[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: team } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'forger', namespace: team } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'vmcluster-annotator', namespace: team },
      rules: [
        {
          apiGroups: ['operator.victoriametrics.com'],
          resources: ['vmclusters'],
          verbs: ['get', 'list', 'patch'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'forger', namespace: team },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'vmcluster-annotator' },
      subjects: [{ kind: 'ServiceAccount', name: 'forger', namespace: team }],
    },
  ];
}

export const forgerOf = (team: string) => `system:serviceaccount:${team}:forger`;

// ---- Cluster facts ----

export async function cluster(kube: KubeObjects, name: string, kind?: ZoneKindName): Promise<KubeObject> {
  return kube.get(
    kind === undefined ? vmclusterRef(ns, name) : zoneObjectRef(zoneKindOrDefault(kind), ns, name),
  );
}

export async function vmuser(kube: KubeObjects): Promise<KubeObject> {
  return kube.get({ apiVersion: vmApiVersion, kind: 'VMUser', namespace: ns, name: 'vmauth-read' });
}

export async function routedZones(kube: KubeObjects, spec: SpecDocument = zoneSpec({})): Promise<string[]> {
  const backends = readBackends(parseSpecDocument(stringify(spec)), ns);
  return zonesRoutedByVMUser((await vmuser(kube)).spec?.targetRefs, ns, backends);
}

export function vmzonesAnnotations(object: KubeObject): Record<string, string> {
  return Object.fromEntries(
    Object.entries(object.metadata.annotations ?? {}).filter(([k]) => k.startsWith('vmzones.io/')),
  );
}

// ---- Reads through vmauth, counted ----

export interface ReadFigures {
  sent: number;
  failed: number;
  failures: string[];
  /** vmauth's own count of requests to a backend that failed (also those it retried elsewhere). */
  backendErrors: number;
}

async function backendErrorCount(vmauthUrl: string, username: string | undefined): Promise<number> {
  const text = await (await fetchFrom('vmauth’s /metrics', `${vmauthUrl}/metrics`)).text();
  const prefix =
    username === undefined
      ? 'vmauth_unauthorized_user_request_backend_errors_total'
      : `vmauth_user_request_backend_errors_total{username="${username}"}`;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/**
 * Sends an instant query through vmauth every `intervalMs` until stopped; every non-2xx answer is a failure. Without
 * `user`, the queries carry no credentials (a vmauth whose routes are for its unauthorized_user). A `path` with a
 * query string is sent as it is (a LogsQL query of VictoriaLogs zones); otherwise `?query=vector(1)` is added.
 */
export function startReadProber(
  vmauthUrl: string,
  user: { username: string; password: string } | undefined,
  path = '/select/0/prometheus/api/v1/query',
  intervalMs = 50,
) {
  const figures: ReadFigures = { sent: 0, failed: 0, failures: [], backendErrors: 0 };
  const headers: Record<string, string> =
    user === undefined
      ? {}
      : { authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` };
  let stopped = false;
  const baseline = backendErrorCount(vmauthUrl, user?.username).catch(() => 0);
  const loop = (async () => {
    while (!stopped) {
      figures.sent++;
      try {
        const response = await fetch(`${vmauthUrl}${path.includes('?') ? path : `${path}?query=vector(1)`}`, {
          headers,
          signal: AbortSignal.timeout(5000),
        });
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
      } catch (error) {
        figures.failed++;
        if (figures.failures.length < 10)
          figures.failures.push(`${new Date().toISOString()} ${String(error)}`);
      }
      await sleep(intervalMs);
    }
  })();
  let result: Promise<ReadFigures> | undefined;
  return {
    figures,
    /** Stops the prober (again: the same figures). */
    stop(): Promise<ReadFigures> {
      stopped = true;
      result ??= (async () => {
        await loop;
        figures.backendErrors = (await backendErrorCount(vmauthUrl, user?.username)) - (await baseline);
        return figures;
      })();
      return result;
    },
  };
}

/** The zones out of reads from `at` (ms since the epoch) until the next entry: each change the watcher saw. */
export interface OutOfReads {
  at: number;
  zones: string[];
}

/**
 * Polls the VMUser and the VMClusters: a zone the VMUser routes reads to must be operational at its current
 * generation, every time we look. Returns the violations seen, and each change of the zones out of reads.
 */
export function startRoutingWatcher(
  kube: KubeObjects,
  zones: { zone: string; vmcluster: string; kind?: ZoneKindName }[],
  intervalMs = 300,
  spec: SpecDocument = zoneSpec({}),
  /** Where each zone's object is read (zones in other clusters); default `kube`, where the VMUser is. */
  kubeOf: Record<string, KubeObjects> = {},
) {
  const violations: string[] = [];
  const outOfReads: OutOfReads[] = [];
  let checks = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const routed = await routedZones(kube, spec);
        const out = zones.filter((zone) => !routed.includes(zone.zone)).map((zone) => zone.zone);
        if (outOfReads.at(-1)?.zones.join() !== out.join()) outOfReads.push({ at: Date.now(), zones: out });
        for (const z of zones.filter((zone) => routed.includes(zone.zone))) {
          const readiness = vmclusterReadiness(await cluster(kubeOf[z.zone] ?? kube, z.vmcluster, z.kind));
          // The routing was read before the object: on a loaded machine seconds apart, in which the zone may have
          // been drained and changed. A violation only if it is still routed once the object was read.
          if (readiness.state !== 'ready' && (await routedZones(kube, spec)).includes(z.zone)) {
            violations.push(`${new Date().toISOString()} ${z.zone} routed while ${readiness.message}`);
          }
        }
        checks++;
      } catch {
        // an API hiccup is not a violation
      }
      await sleep(intervalMs);
    }
  })();
  return {
    /** Stops the watcher (again: the same result). */
    async stop(): Promise<{ checks: number; violations: string[]; outOfReads: OutOfReads[] }> {
      stopped = true;
      await loop;
      return { checks, violations, outOfReads };
    },
  };
}

// ---- The real controller, crashed and restarted ----

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * SIGKILLs the Argo Rollouts controller's process group (the controller and the plugin processes it started),
 * runs `whileDown`, then starts the controller again exactly as it ran (same argv, environment and working
 * directory) and records the new process in the sandbox state so that teardown stops it.
 */
export async function crashController(sandbox: Sandbox, whileDown: () => Promise<void>): Promise<void> {
  const stateFile = join(sandbox.state.stateDir, 'state.json');
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as { daemons: DaemonRecord[] };
  const record = state.daemons.find((d) => d.name === 'rollouts-controller');
  if (!record) throw new Error('no rollouts-controller in the sandbox state');
  const argv = readFileSync(`/proc/${record.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const env = Object.fromEntries(
    readFileSync(`/proc/${record.pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const cwd = readlinkSync(`/proc/${record.pid}/cwd`);
  expectEnd(record.pid);
  process.kill(-record.pid, 'SIGKILL');
  await eventually(
    'the controller process group to die',
    async () => (groupAlive(record.pid) ? undefined : true),
    10_000,
    100,
  );
  await whileDown();
  const restarted = startDaemon({
    name: record.name,
    command: argv[0] as string,
    args: argv.slice(1),
    log: record.log,
    cwd,
    env,
    ports: record.ports,
  });
  state.daemons = state.daemons.map((d) => (d.name === record.name ? restarted : d));
  writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`);
  sandbox.state.daemons = state.daemons;
  const healthz = argv.find((a) => a.startsWith('--healthzPort='))?.split('=')[1];
  await eventually(
    'the restarted controller to be healthy',
    async () => ((await fetch(`http://127.0.0.1:${healthz}/healthz`)).ok ? true : undefined),
    60_000,
    250,
  );
}

/**
 * A real Rollout for the in-process tests, parked at a pause before steps of `zone`: its second revision is
 * current, not stable, and its step index is before the zone's steps — so the controller's own plugin process
 * (whose reconciler finishes zones of deleted, promoted or superseded Rollouts) sees a walk in progress and leaves
 * the zone to the test. Returns the view the test passes to the plugin, with the real uid and revision.
 */
export async function parkedRollout(
  sandbox: Sandbox,
  kube: KubeObjects,
  name: string,
  zone: string,
  spec: SpecDocument,
): Promise<RolloutView> {
  await sandbox.kubectl.apply([rolloutObject(name, spec, [{ pause: {} }])]);
  const first = await eventually(
    `${name}: first revision Healthy`,
    async () => {
      const s = await rolloutState(kube, name);
      return s.status.phase === 'Healthy' ? s : undefined;
    },
    { unless: rolloutCanProgress(kube, name) },
  );
  const zoneSteps = ['drainReads', 'apply', 'restoreReads'].map((action) => ({
    plugin: { name: 'vmzones/step', config: { zone, action } },
  }));
  await sandbox.kubectl.apply([rolloutObject(name, spec, [{ pause: {} }, ...zoneSteps])]);
  const parked = await eventually(`${name}: second revision paused before zone ${zone}`, async () => {
    const s = await rolloutState(kube, name);
    return s.status.currentPodHash !== first.status.currentPodHash &&
      s.status.phase === 'Paused' &&
      (s.status.currentStepIndex ?? 0) === 0
      ? s
      : undefined;
  });
  return rolloutView(name, parked.metadata.uid, parked.status.currentPodHash ?? '', spec);
}

/**
 * Applies the walk of `spec` (the steps `vmzones render` writes, no pause between zones) with a manual pause
 * inserted before step `pauseAt`, and waits until the Rollout is Paused there: e.g. `pauseAt` 6 stops after
 * zone-b's restoreReads, 5 inside zone-b's walk. Returns the state at the pause.
 */
export async function walkToPause(
  sandbox: Sandbox,
  kube: KubeObjects,
  name: string,
  spec: SpecDocument,
  pauseAt: number,
  timeoutMs = 240_000,
): Promise<RolloutState> {
  const walk = stepsFor(spec, 'none');
  await sandbox.kubectl.apply([
    rolloutObject(name, spec, [...walk.slice(0, pauseAt), { pause: {} }, ...walk.slice(pauseAt)]),
  ]);
  return eventually(
    `${name}: the pause before step ${pauseAt}`,
    async () => {
      const s = await rolloutState(kube, name);
      return s.status.phase === 'Paused' && s.status.currentStepIndex === pauseAt ? s : undefined;
    },
    timeoutMs,
    1000,
  );
}
