// Evidence that every vmauth replica serves the config written at `since`: each pod listed by the selector is
// scraped, and a pod counts as serving it only on a figure that proves it, never on the absence of one. The
// facts relied on are in docs/victoriametrics.md ("vmauth reload evidence"); in short:
// - The operator's config-reloader sidecar exposes `configreloader_reload_content_hash{key="main"}`, the CRC32
//   of the Secret content it last handed to vmauth with a successful reload. Equal to the CRC32 of the content we
//   want served is evidence, whatever happened in between (an A→B→A edit included); different means "not yet".
// - vmauth (≥ 1.94) stamps `vmauth_config_last_reload_success_timestamp_seconds` at start-up and whenever a
//   reload loaded *changed* content. The stamp is lib/fasttime: whole seconds, refreshed once a second, so it
//   is never later than the real load and up to 2 s earlier. Hence a stamp ≥ `since` proves a load after the
//   write, but a load just after the write may carry a stamp just before it. That gap is closed with a
//   baseline: the stamps the writer saw just before it wrote (read-routing.ts, which also waits until the
//   newest of them is 2 s old, so that a load of its write cannot share their second); a stamp above its
//   baseline proves a load after the write.
// - A stamp that is the start-up load (within a second of `process_start_time_seconds`) proves nothing: a
//   restarted vmauth reads whatever file is there, possibly the old one — unless the process started after the
//   write (by 2 s) and vmauth reads the written Secret or ConfigMap itself (not a VMUser rendered later).
// - A stamp not above the one the same process showed before the write proves nothing, even when it reads as
//   later than the write: vmauth's clock may run ahead of ours.
// - A stamp equal to the one seen before a drain, when the restore brings back exactly the content served
//   then, means the pod never loaded the drained config: it serves what we want (the A→B→A case).
// - A failed last reload (`..._successful 0`) is never evidence: vmauth keeps serving the previous config.
// - Older vmauth (e.g. Debian's 1.79.5) exposes none of these: `unsupported`, with a message saying so.

import { crc32 } from 'node:zlib';
import { z } from 'zod';
import type { ClusterRegistration } from '../kube/cluster-registry.ts';
import type { KubeObjects } from '../kube/objects.ts';
import type { MetricSample } from './metrics-text.ts';
import { podScrapeFailure, podScrapeTarget } from './pod-proxy.ts';
import { describePod, listSelectedPods } from './pods.ts';
import { ScrapeError, type ScrapeLimits, type ScrapeTarget, scrapeMetrics } from './scrape.ts';
import {
  readSecretBytes,
  resolveScrapeAccess,
  type ScrapeAccess,
  type ScrapeAuthRefs,
  type ScrapeTlsRefs,
  type SecretKeyRef,
} from './scrape-credentials.ts';

export interface VmauthPods {
  namespace: string;
  labelSelector: string;
  /** vmauth's HTTP port: a number or a container port name (the operator names it `http`). */
  port: number | string;
  scheme?: 'http' | 'https';
  /** TLS material and credentials from Secrets in `namespace`. */
  tls?: ScrapeTlsRefs;
  auth?: ScrapeAuthRefs;
  /** The operator's config-reloader sidecar and the Secret key it watches (operator: `config.yaml.gz` of
   *  Secret `vmauth-config-<name>`). The sidecar is scraped over plain HTTP, as the operator does. */
  reloader?: { port: number | string; configSecret: SecretKeyRef };
  limits?: ScrapeLimits;
}

export type ReloadState = 'reloaded' | 'waiting' | 'unreachable' | 'unsupported';

/** What proved that a pod serves the config. */
export type ReloadProof =
  | 'configHash'
  | 'reloadTimestamp'
  | 'reloadAfterBaseline'
  | 'unchangedSinceDrain'
  | 'startedAfterWrite';

export interface PodReloadEvidence {
  pod: string;
  /** When the pod last loaded changed config, by vmauth's own clock. */
  reloadedAt?: string;
  error?: string;
  state?: ReloadState;
  evidence?: ReloadProof;
  /** `vm_app_version`'s short_version, when exposed. */
  version?: string;
  /** Why the pod is waiting or unsupported. */
  detail?: string;
  /** Its last config reload failed (`vmauth_config_last_reload_successful 0`). */
  reloadFailed?: boolean;
  /** The stamp and process start seen, for a later reading to compare with. */
  seen?: ReloadStamp;
}

export interface ReloadEvidence {
  state: ReloadState;
  message: string;
  pods: PodReloadEvidence[];
}

/** One pod's reload stamp and process start, both in Unix seconds, as seen at one moment. */
export const reloadStampSchema = z.object({ stamp: z.number(), start: z.number().nullable() });
export type ReloadStamp = z.infer<typeof reloadStampSchema>;

/**
 * Stamps seen just before a write (`pods`), for the change written at `at`; `unchanged`: stamps seen before the
 * drain that this write undoes, when the content is back to what was served then. Keyed by `namespace/pod`.
 */
export const reloadBaselineSchema = z.object({
  v: z.literal(1),
  at: z.string(),
  pods: z.record(z.string(), reloadStampSchema),
  unchanged: z.record(z.string(), reloadStampSchema).optional(),
});
export type ReloadBaseline = z.infer<typeof reloadBaselineSchema>;

const vmauthReloadMetricNames = {
  successful: 'vmauth_config_last_reload_successful',
  successTimestamp: 'vmauth_config_last_reload_success_timestamp_seconds',
  errors: 'vmauth_config_last_reload_errors_total',
  version: 'vm_app_version',
  processStart: 'process_start_time_seconds',
} as const;

/** How much earlier than the real load vmauth's stamp may read: fasttime's 1 s tick plus truncation. */
export const reloadStampLagMs = 2_000;

const configReloaderMetricNames = {
  contentHash: 'configreloader_reload_content_hash',
} as const;

function first(samples: readonly MetricSample[], name: string): MetricSample | undefined {
  return samples.find((sample) => sample.name === name);
}

/** vmauth's own figures of one pod. */
interface VmauthFigures {
  successful: number | undefined;
  stamp: number | undefined;
  start: number | undefined;
  version: string | undefined;
}

async function scrapeVmauth(target: ScrapeTarget, limits: ScrapeLimits | undefined): Promise<VmauthFigures> {
  const page = await scrapeMetrics(target, Object.values(vmauthReloadMetricNames), limits);
  return {
    successful: first(page.samples, vmauthReloadMetricNames.successful)?.value,
    stamp: first(page.samples, vmauthReloadMetricNames.successTimestamp)?.value,
    start: first(page.samples, vmauthReloadMetricNames.processStart)?.value,
    version: first(page.samples, vmauthReloadMetricNames.version)?.labels.short_version,
  };
}

type HashVerdict = { kind: 'match' } | { kind: 'mismatch'; detail: string } | { kind: 'absent' };

/** What the stamp-based rules compare with, for one pod. */
interface PodBaselines {
  /** Seen just before the write of `since`. */
  beforeWrite: ReloadStamp | undefined;
  /** Seen before the drain whose content this write brought back. */
  beforeDrain: ReloadStamp | undefined;
  /** The pods read the written object itself at start-up (not a rendering of it made later). */
  startupLoadProves: boolean;
}

/** The verdict on one pod from its figures; pure, so that every rule is tested on its own. */
function judgeVmauthPod(
  pod: string,
  figures: VmauthFigures,
  hash: HashVerdict,
  since: Date,
  baselines: PodBaselines,
): PodReloadEvidence {
  const { successful, stamp, start, version } = figures;
  const base: PodReloadEvidence = {
    pod,
    ...(version === undefined ? {} : { version }),
    ...(stamp === undefined ? {} : { seen: { stamp, start: start ?? null } }),
  };
  const reloadedAt = stamp === undefined ? undefined : new Date(stamp * 1000).toISOString();
  const withTime = reloadedAt === undefined ? base : { ...base, reloadedAt };
  if (successful === undefined && stamp === undefined && hash.kind === 'absent') {
    return {
      ...base,
      state: 'unsupported',
      detail:
        `vmauth ${version ?? '(version unknown)'} exposes no ${vmauthReloadMetricNames.successTimestamp} ` +
        '(added in vmauth v1.94.0) and no config-reloader content hash was available; nothing proves which config it serves',
    };
  }
  if (successful === 0) {
    return {
      ...withTime,
      state: 'waiting',
      reloadFailed: true,
      detail: 'its last config reload failed, so it still serves the previous config (see the vmauth log)',
    };
  }
  if (hash.kind === 'match') return { ...withTime, state: 'reloaded', evidence: 'configHash' };
  if (hash.kind === 'mismatch') return { ...withTime, state: 'waiting', detail: hash.detail };
  if (stamp === undefined) {
    return {
      ...withTime,
      state: 'waiting',
      detail: `no ${vmauthReloadMetricNames.successTimestamp} on the page`,
    };
  }
  const sameProcess = (seen: ReloadStamp | undefined): seen is ReloadStamp =>
    seen !== undefined && seen.start === (start ?? null);
  const { beforeDrain, beforeWrite } = baselines;
  if (sameProcess(beforeDrain) && stamp === beforeDrain.stamp) {
    return { ...withTime, state: 'reloaded', evidence: 'unchangedSinceDrain' };
  }
  // Only a strictly newer load than the one this pod showed before the write proves anything: with vmauth's
  // clock ahead of ours, the old load's stamp can read as late as the write itself (docs/victoriametrics.md).
  if (sameProcess(beforeWrite) && stamp <= beforeWrite.stamp) {
    return {
      ...withTime,
      state: 'waiting',
      detail: `it shows the load it showed before the write (${reloadedAt}); no newer load proves the write was loaded`,
    };
  }
  // A process that started after the write read the file at start: when vmauth reads the written object itself
  // (a Secret or ConfigMap balancer, mounted at pod start), that start-up load is of the written config. Not so
  // for a VMUser, which the operator renders into its Secret some time after the write. The stamp-lag margin
  // keeps a start in the write's own second (by a clock that may run ahead) out.
  if (
    baselines.startupLoadProves &&
    start !== undefined &&
    !sameProcess(beforeWrite) &&
    start * 1000 >= since.getTime() + reloadStampLagMs
  ) {
    return { ...withTime, state: 'reloaded', evidence: 'startedAfterWrite' };
  }
  // Checked before the start-up rule: the same process showed a load before the write, so a strictly newer stamp
  // is a later load even when it falls within a second of the start (a write 2 s after a start, loaded at once,
  // may carry the start's second + 1: fasttime's lag). A stamp at or after `since` is named by that, the
  // plainer proof, as it was before this rule moved up.
  if (sameProcess(beforeWrite) && stamp > beforeWrite.stamp) {
    const evidence = stamp * 1000 >= since.getTime() ? 'reloadTimestamp' : 'reloadAfterBaseline';
    return { ...withTime, state: 'reloaded', evidence };
  }
  if (start !== undefined && stamp <= start + 1) {
    return {
      ...withTime,
      state: 'waiting',
      detail:
        `its process started at ${new Date(start * 1000).toISOString()} and has loaded no changed config since; ` +
        'a start-up load is no evidence (it reads whatever file is there, possibly the old one); the config-reloader content hash would prove it',
    };
  }
  if (stamp * 1000 >= since.getTime()) {
    return { ...withTime, state: 'reloaded', evidence: 'reloadTimestamp' };
  }
  return {
    ...withTime,
    state: 'waiting',
    detail: `it last loaded changed config at ${reloadedAt}, which does not prove a load after ${since.toISOString()}`,
  };
}

async function reloaderHash(
  target: ScrapeTarget,
  expected: number,
  limits: ScrapeLimits | undefined,
): Promise<HashVerdict> {
  const page = await scrapeMetrics(target, [configReloaderMetricNames.contentHash], limits);
  const hash = page.samples.find(
    (sample) => sample.name === configReloaderMetricNames.contentHash && sample.labels.key === 'main',
  )?.value;
  if (hash === undefined) return { kind: 'absent' };
  if (hash === expected) return { kind: 'match' };
  return {
    kind: 'mismatch',
    detail: `the config-reloader confirmed content hash ${hash}, the Secret's content hashes to ${expected}`,
  };
}

interface GroupContext {
  access: ScrapeAccess;
  /** The registered cluster the vmauth runs in; with pod access `proxy` its pods are scraped through its API server. */
  cluster: ClusterRegistration | undefined;
  /** CRC32 of the config Secret's content, when a config-reloader is configured and the Secret exists. */
  expectedHash: number | undefined;
  pods: VmauthPods;
}

async function podEvidence(
  object: Parameters<typeof describePod>[0],
  context: GroupContext,
  since: Date,
  baseline: ReloadBaseline | undefined,
  startupLoadProves: boolean,
): Promise<PodReloadEvidence> {
  const pod = describePod(object, context.pods.port);
  const namespace = context.pods.namespace;
  if (pod.address === undefined) {
    return { pod: pod.key, state: 'unreachable', error: pod.problem ?? 'no address' };
  }
  const reloader = context.pods.reloader;
  let hash: HashVerdict = { kind: 'absent' };
  try {
    if (reloader !== undefined && context.expectedHash !== undefined) {
      const sidecar = describePod(object, reloader.port);
      if (sidecar.address === undefined) {
        return { pod: pod.key, state: 'unreachable', error: `config-reloader: ${sidecar.problem ?? ''}` };
      }
      hash = await reloaderHash(
        podScrapeTarget(
          { namespace, name: pod.name, address: sidecar.address },
          { scheme: 'http' },
          context.cluster,
        ),
        context.expectedHash,
        context.pods.limits,
      );
    }
  } catch (error) {
    if (!(error instanceof ScrapeError)) throw error;
    return {
      pod: pod.key,
      state: 'unreachable',
      error: `config-reloader: ${podScrapeFailure(context.cluster, namespace, error)}`,
    };
  }
  let figures: VmauthFigures;
  try {
    figures = await scrapeVmauth(
      podScrapeTarget({ namespace, name: pod.name, address: pod.address }, context.access, context.cluster),
      context.pods.limits,
    );
  } catch (error) {
    if (!(error instanceof ScrapeError)) throw error;
    return { pod: pod.key, state: 'unreachable', error: podScrapeFailure(context.cluster, namespace, error) };
  }
  const current = baseline !== undefined && baseline.at === since.toISOString() ? baseline : undefined;
  return judgeVmauthPod(pod.key, figures, hash, since, {
    beforeWrite: current?.pods[pod.key],
    beforeDrain: current?.unchanged?.[pod.key],
    startupLoadProves,
  });
}

async function groupContext(
  kube: KubeObjects,
  pods: VmauthPods,
  cluster: ClusterRegistration | undefined,
): Promise<GroupContext> {
  const access = await resolveScrapeAccess(kube, pods.namespace, pods.scheme ?? 'http', pods.tls, pods.auth);
  const reloader = pods.reloader;
  const expectedHash =
    reloader === undefined
      ? undefined
      : crc32(await readSecretBytes(kube, pods.namespace, reloader.configSecret));
  return { access, cluster, expectedHash, pods };
}

/**
 * Every vmauth pod of every group answered and serves the config written at `since`. `baseline`: what the
 * writer saw just before writing (see the top of this file); it counts only for the change written at `since`.
 */
export async function vmauthReloadEvidence(
  kube: KubeObjects,
  groups: VmauthPods | readonly VmauthPods[],
  since: Date,
  baseline?: ReloadBaseline,
  options: { startupLoadProves?: boolean } = {},
): Promise<ReloadEvidence> {
  const all: PodReloadEvidence[] = [];
  for (const pods of Array.isArray(groups) ? groups : [groups]) {
    const { active } = await listSelectedPods(kube, pods.namespace, pods.labelSelector);
    if (active.length === 0) {
      return {
        state: 'unreachable',
        message: `no vmauth pod matches ${pods.labelSelector} in namespace ${pods.namespace}`,
        pods: all,
      };
    }
    const context = await groupContext(kube, pods, kube.registration);
    all.push(
      ...(await Promise.all(
        active.map((pod) => podEvidence(pod, context, since, baseline, options.startupLoadProves === true)),
      )),
    );
  }
  return summarize(all, since);
}

/** The reload stamps of every pod that answers now (others are left out: they get no baseline). */
export async function vmauthReloadStamps(
  kube: KubeObjects,
  groups: readonly VmauthPods[],
): Promise<Record<string, ReloadStamp>> {
  const stamps: Record<string, ReloadStamp> = {};
  for (const pods of groups) {
    const { active } = await listSelectedPods(kube, pods.namespace, pods.labelSelector);
    const access = await resolveScrapeAccess(
      kube,
      pods.namespace,
      pods.scheme ?? 'http',
      pods.tls,
      pods.auth,
    );
    await Promise.all(
      active.map(async (object) => {
        const pod = describePod(object, pods.port);
        if (pod.address === undefined) return;
        try {
          const figures = await scrapeVmauth(
            podScrapeTarget(
              { namespace: pods.namespace, name: pod.name, address: pod.address },
              access,
              kube.registration,
            ),
            pods.limits,
          );
          if (figures.stamp !== undefined) {
            stamps[pod.key] = { stamp: figures.stamp, start: figures.start ?? null };
          }
        } catch (error) {
          if (!(error instanceof ScrapeError)) throw error;
        }
      }),
    );
  }
  return stamps;
}

const proofText: Record<ReloadProof, (pod: PodReloadEvidence) => string> = {
  configHash: () => 'config-reloader content hash matches',
  reloadTimestamp: (pod) => `reloaded at ${pod.reloadedAt}`,
  reloadAfterBaseline: (pod) => `reloaded at ${pod.reloadedAt}, after the stamp it showed before the write`,
  unchangedSinceDrain: () => 'loaded nothing since before the drain, whose content is back',
  startedAfterWrite: (pod) => `started after the write and loaded it at start-up (${pod.reloadedAt})`,
};

function summarize(pods: PodReloadEvidence[], since: Date): ReloadEvidence {
  const inState = (state: ReloadState) => pods.filter((pod) => pod.state === state);
  const list = (items: PodReloadEvidence[], what: (pod: PodReloadEvidence) => string) =>
    items
      .slice(0, 3)
      .map((pod) => `${pod.pod}: ${what(pod)}`)
      .join('; ') + (items.length > 3 ? `; and ${items.length - 3} more` : '');
  const unreachable = inState('unreachable');
  if (unreachable.length > 0) {
    return {
      state: 'unreachable',
      message: `${unreachable.length} of ${pods.length} vmauth pods could not be checked: ${list(unreachable, (p) => p.error ?? '')}`,
      pods,
    };
  }
  const unsupported = inState('unsupported');
  if (unsupported.length > 0) {
    return {
      state: 'unsupported',
      message: `no reload evidence from ${unsupported.length} of ${pods.length} vmauth pods: ${list(unsupported, (p) => p.detail ?? '')}`,
      pods,
    };
  }
  // A replica whose reload failed needs a human (its config is refused): named first, whatever the count.
  const waiting = inState('waiting').sort(
    (a, b) => Number(b.reloadFailed === true) - Number(a.reloadFailed === true),
  );
  if (waiting.length > 0) {
    const failedReloads = waiting.filter((pod) => pod.reloadFailed === true);
    const failedNote =
      failedReloads.length === 0
        ? ''
        : ` (last reload failed on ${failedReloads.map((pod) => pod.pod).join(', ')})`;
    return {
      state: 'waiting',
      message: `${waiting.length} of ${pods.length} vmauth pods have not loaded the config written since ${since.toISOString()}${failedNote}: ${list(waiting, (p) => p.detail ?? '')}`,
      pods,
    };
  }
  return {
    state: 'reloaded',
    message: `all ${pods.length} vmauth pods serve the config written since ${since.toISOString()} (${list(
      pods,
      (pod) => proofText[pod.evidence ?? 'reloadTimestamp'](pod),
    )})`,
    pods,
  };
}
