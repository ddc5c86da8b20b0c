// Requests a vmauth pod is still executing, from its own /metrics: what ends the window in which a request that
// vmauth accepted under the config before a drain can still reach the drained zone (docs/step-plugin.md, "When
// the drain ends"; read in vmauth v1.151.0, the version the sandbox builds):
// - vmauth resolves a request's user (and so its backend list) once, on arrival, from the config loaded then
//   (app/vmauth/main.go requestHandler → getUserInfoByAuthTokens, authConfig.Load), and keeps that UserInfo for the
//   request's whole life: processRequest retries a failed attempt (connection error, a retry_status_codes answer)
//   on the next backend of that list (up.getBackendURL, up to getBackendsCount attempts), old config or not.
// - Every such request holds one slot of the process-wide limit from before its body is read until its last
//   attempt returned (processUserRequest: beginConcurrencyLimit … defer endConcurrencyLimit around
//   processRequest), and `vmauth_concurrent_requests_current` is the number of slots held (main.go
//   concurrencyLimitInit: len(concurrencyLimitCh)). A request waiting for a slot is not counted, but one waits only
//   while all are held (Go hands a freed slot of a buffered channel to a waiting sender at once), so the gauge
//   reads below its capacity only when none waits.
// - The per-user gauge `vmauth_user_concurrent_requests_current` is no evidence: a reload builds new UserInfos with
//   new channels in a new metrics set and unregisters the old set (auth_config.go reloadAuthConfigData,
//   parseAuthConfigUsers), so after the reload it counts only requests of the new config.
// - The gauge is registered lazily, by the first user request of the process (beginConcurrencyLimit:
//   concurrencyLimitOnce.Do(concurrencyLimitInit)): a v1.151.0 or newer vmauth without it has served none since it
//   started, which reads as 0. An older one without it gives no reading (its code was not read here).
// So a reading of 0 on a pod, taken after that pod proved it serves the drain (vmauth-reload.ts), means no request
// of the old config is left in it: none can reach the zone from there any more. /metrics is served before user
// routing (main.go requestHandlerWithInternalRoutes) and does not count itself.

import type { KubeObjects } from '../kube/objects.ts';
import { type QueriesInFlight, readInFlightGauge } from './queries-in-flight.ts';
import { resolveScrapeAccess } from './scrape-credentials.ts';
import type { VmauthPods } from './vmauth-reload.ts';

/** vmauth's gauge of requests holding a slot of -maxConcurrentRequests (main.go concurrencyLimitInit). */
export const vmauthRequestsMetric = 'vmauth_concurrent_requests_current';

/** The vmauth version whose source was read (above): from it on, an absent gauge means no request yet. */
const lazyGaugeReadIn = [1, 151, 0] as const;

/** Whether `version` (`v1.151.0`, `v1.152.1-enterprise`) is at least the one read; unknown versions are not. */
export function registersGaugeLazily(version: string | undefined): boolean {
  const parts = /^v(\d+)\.(\d+)\.(\d+)/
    .exec(version ?? '')
    ?.slice(1)
    .map(Number);
  if (parts === undefined) return false;
  for (const [i, read] of lazyGaugeReadIn.entries()) {
    const part = parts[i] ?? 0;
    if (part !== read) return part > read;
  }
  return true;
}

/** Reads every pod of each vmauth group once: idle when each shows no request executing. */
export async function readVmauthRequests(
  kube: KubeObjects,
  groups: readonly VmauthPods[],
): Promise<QueriesInFlight> {
  const readings = await Promise.all(
    groups.map(async (pods) =>
      readInFlightGauge(
        kube,
        {
          namespace: pods.namespace,
          labelSelector: pods.labelSelector,
          port: pods.port,
          metric: vmauthRequestsMetric,
          component: 'vmauth',
          counts: 'request',
          absentMeansNone: registersGaugeLazily,
        },
        await resolveScrapeAccess(kube, pods.namespace, pods.scheme ?? 'http', pods.tls, pods.auth),
        pods.limits,
      ),
    ),
  );
  const pods = readings.flatMap((r) => r.pods);
  const total = readings.reduce((sum, r) => sum + r.total, 0);
  const state = readings.some((r) => r.state === 'unknown')
    ? 'unknown'
    : readings.some((r) => r.state === 'busy')
      ? 'busy'
      : 'idle';
  const message = readings
    .filter((r) => r.state === state)
    .map((r) => r.message)
    .join('; ');
  return { state, message, pods, total };
}
