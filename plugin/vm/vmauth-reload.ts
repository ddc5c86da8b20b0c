// Evidence that every vmauth replica serves the current config: each pod listed by the selector is scraped,
// and a pod counts as reloaded only on a figure that proves it, never on the absence of one.
//
// Evidence by version (victoriametrics-facts.md §3):
// - vmauth ≥ 1.94 exposes `vmauth_config_last_reload_successful` and
//   `vmauth_config_last_reload_success_timestamp_seconds`; the timestamp moves at start-up and whenever a
//   reload loaded *changed* content (app/vmauth/auth_config.go), so a timestamp at or after `since` (taken
//   before the config was written) proves the pod loaded content written after `since`. The timestamp is
//   whole seconds and reads up to 1 s late, so it is compared with `since` rounded down, minus 1 s: a change
//   loaded in the two seconds before `since` would pass too (the content-hash evidence below is exact).
// - The operator's config-reloader sidecar (port `reloader-http`, 8435) exposes
//   `configreloader_reload_content_hash{key="main"}`, the CRC32 of the Secret content it last confirmed with a
//   successful /-/reload. When `reloader` is configured, a hash equal to the CRC32 of the Secret's current
//   content is evidence too, and a different hash means "not yet" whatever the timestamp says.
// - Older vmauth (e.g. Debian's 1.79.5) exposes neither: `unsupported`, with a message saying so.
// A last reload that failed (`..._successful 0`) is never evidence: vmauth keeps serving the previous config.

import { crc32 } from 'node:zlib';
import type { KubeObjects } from '../kube/objects.ts';
import type { MetricSample } from './metrics-text.ts';
import { type DiscoveredPod, describePod, listSelectedPods } from './pods.ts';
import { ScrapeError, type ScrapeLimits, scrapeMetrics } from './scrape.ts';
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

export interface PodReloadEvidence {
  pod: string;
  /** When the pod last loaded changed config, by vmauth's own clock. */
  reloadedAt?: string;
  error?: string;
  state?: ReloadState;
  /** What proved the reload: the reload timestamp, or the config-reloader's content hash. */
  evidence?: 'reloadTimestamp' | 'configHash';
  /** `vm_app_version`'s short_version, when exposed. */
  version?: string;
  /** Why the pod is waiting or unsupported. */
  detail?: string;
}

export interface ReloadEvidence {
  state: ReloadState;
  message: string;
  pods: PodReloadEvidence[];
}

export const vmauthReloadMetricNames = {
  successful: 'vmauth_config_last_reload_successful',
  successTimestamp: 'vmauth_config_last_reload_success_timestamp_seconds',
  errors: 'vmauth_config_last_reload_errors_total',
  version: 'vm_app_version',
} as const;

/** How far behind vmauth's reload timestamp may read (lib/fasttime ticks once a second). */
export const fasttimeLagSeconds = 1;

export const configReloaderMetricNames = {
  contentHash: 'configreloader_reload_content_hash',
} as const;

function first(samples: readonly MetricSample[], name: string): MetricSample | undefined {
  return samples.find((sample) => sample.name === name);
}

interface PodContext {
  since: Date;
  access: ScrapeAccess;
  expectedHash: number | undefined;
  /** The pod's config-reloader, when configured. */
  reloader: DiscoveredPod | undefined;
  limits: ScrapeLimits | undefined;
}

async function podEvidence(pod: DiscoveredPod, context: PodContext): Promise<PodReloadEvidence> {
  if (pod.address === undefined) {
    return { pod: pod.key, state: 'unreachable', error: pod.problem ?? 'no address' };
  }
  let samples: MetricSample[];
  try {
    const page = await scrapeMetrics(
      {
        url: `${context.access.scheme}://${pod.address}/metrics`,
        ...(context.access.tls === undefined ? {} : { tls: context.access.tls }),
        ...(context.access.auth === undefined ? {} : { auth: context.access.auth }),
      },
      Object.values(vmauthReloadMetricNames),
      context.limits,
    );
    samples = page.samples;
  } catch (error) {
    if (!(error instanceof ScrapeError)) throw error;
    return { pod: pod.key, state: 'unreachable', error: error.message };
  }
  const version = first(samples, vmauthReloadMetricNames.version)?.labels.short_version;
  const base: PodReloadEvidence = { pod: pod.key, ...(version === undefined ? {} : { version }) };
  const successful = first(samples, vmauthReloadMetricNames.successful)?.value;
  const timestamp = first(samples, vmauthReloadMetricNames.successTimestamp)?.value;
  const reloadedAt = timestamp === undefined ? undefined : new Date(timestamp * 1000).toISOString();
  const withTime = reloadedAt === undefined ? base : { ...base, reloadedAt };

  let hashVerdict: 'match' | 'mismatch' | 'absent' = 'absent';
  let hashDetail = '';
  if (context.expectedHash !== undefined && context.reloader !== undefined) {
    const reloaderAddress = context.reloader.address;
    if (reloaderAddress === undefined) {
      return {
        ...withTime,
        state: 'unreachable',
        error: `config-reloader: ${context.reloader.problem ?? ''}`,
      };
    }
    try {
      const page = await scrapeMetrics(
        { url: `http://${reloaderAddress}/metrics` },
        [configReloaderMetricNames.contentHash],
        context.limits,
      );
      const hash = page.samples.find(
        (sample) => sample.name === configReloaderMetricNames.contentHash && sample.labels.key === 'main',
      )?.value;
      if (hash !== undefined) {
        hashVerdict = hash === context.expectedHash ? 'match' : 'mismatch';
        hashDetail = `the config-reloader confirmed content hash ${hash}, the Secret's content hashes to ${context.expectedHash}`;
      }
    } catch (error) {
      if (!(error instanceof ScrapeError)) throw error;
      return { ...withTime, state: 'unreachable', error: `config-reloader: ${error.message}` };
    }
  }

  if (successful === undefined && timestamp === undefined && hashVerdict === 'absent') {
    return {
      ...base,
      state: 'unsupported',
      detail:
        `vmauth ${version ?? '(version unknown)'} exposes no ${vmauthReloadMetricNames.successTimestamp} ` +
        `(added in vmauth v1.94.0)${context.expectedHash === undefined ? '' : ' and its config-reloader no content hash'}; ` +
        'nothing proves which config it serves',
    };
  }
  if (successful === 0) {
    return {
      ...withTime,
      state: 'waiting',
      detail: 'its last config reload failed, so it still serves the previous config (see the vmauth log)',
    };
  }
  if (hashVerdict === 'mismatch') return { ...withTime, state: 'waiting', detail: hashDetail };
  if (hashVerdict === 'match') return { ...withTime, state: 'reloaded', evidence: 'configHash' };
  // vmauth stamps the reload with fasttime.UnixTimestamp(), a whole-second clock refreshed by a 1 s ticker:
  // it reads up to a second behind (seen: a reload at 17:31:21.110 reported as 17:31:20).
  const sinceSeconds = Math.floor(context.since.getTime() / 1000) - fasttimeLagSeconds;
  if (timestamp !== undefined && timestamp >= sinceSeconds) {
    return { ...withTime, state: 'reloaded', evidence: 'reloadTimestamp' };
  }
  return {
    ...withTime,
    state: 'waiting',
    detail:
      timestamp === undefined
        ? `no ${vmauthReloadMetricNames.successTimestamp} on the page`
        : `it last loaded changed config at ${reloadedAt}, before ${context.since.toISOString()}`,
  };
}

/** Every vmauth pod answered and reports a successful config reload at or after `since`. */
export async function vmauthReloadEvidence(
  kube: KubeObjects,
  pods: VmauthPods,
  since: Date,
): Promise<ReloadEvidence> {
  const { active } = await listSelectedPods(kube, pods.namespace, pods.labelSelector);
  if (active.length === 0) {
    return {
      state: 'unreachable',
      message: `no vmauth pod matches ${pods.labelSelector} in namespace ${pods.namespace}`,
      pods: [],
    };
  }
  const access = await resolveScrapeAccess(kube, pods.namespace, pods.scheme ?? 'http', pods.tls, pods.auth);
  const reloader = pods.reloader;
  const expectedHash =
    reloader === undefined
      ? undefined
      : crc32(await readSecretBytes(kube, pods.namespace, reloader.configSecret));
  const evidence = await Promise.all(
    active.map((object) =>
      podEvidence(describePod(object, pods.port), {
        since,
        access,
        expectedHash,
        reloader: reloader === undefined ? undefined : describePod(object, reloader.port),
        limits: pods.limits,
      }),
    ),
  );
  return summarize(evidence, since);
}

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
  const waiting = inState('waiting');
  if (waiting.length > 0) {
    return {
      state: 'waiting',
      message: `${waiting.length} of ${pods.length} vmauth pods have not loaded the config written since ${since.toISOString()}: ${list(waiting, (p) => p.detail ?? '')}`,
      pods,
    };
  }
  return {
    state: 'reloaded',
    message: `all ${pods.length} vmauth pods serve the config written since ${since.toISOString()} (${pods
      .map(
        (pod) =>
          `${pod.pod}: ${pod.evidence === 'configHash' ? 'config-reloader content hash matches' : `reloaded at ${pod.reloadedAt}`}`,
      )
      .join('; ')})`,
    pods,
  };
}
