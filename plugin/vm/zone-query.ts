// Asking a zone's own query pods a question directly (docs/gates.md, "zoneAnswers"): a VMCluster's vmselect, a
// VMSingle's process, a VLCluster's vlselect, each at its pod address or through its cluster's pod proxy as the
// gates scrape pods (pod-proxy.ts). One instant query per call, evaluated at a fixed time, so that two zones asked
// the same question over the same window answer about the same data; the answer is an instant vector, read through
// a schema, its values as numbers keyed by their label sets.

import { z } from 'zod';
import type { KubeObjects } from '../kube/objects.ts';
import { podScrapeFailure, podScrapeTarget } from './pod-proxy.ts';
import { describePod, listSelectedPods } from './pods.ts';
import { zoneQueryPods } from './queries-in-flight.ts';
import { fetchBounded, ScrapeError } from './scrape.ts';
import type { ZoneKindName } from './zone-kinds.ts';

/** The query language a zone kind answers in. */
export type QueryLanguage = 'MetricsQL' | 'LogsQL';

export interface ZoneQueryApi {
  readonly language: QueryLanguage;
  /** The instant-query path on the pod (`.../api/v1/query`, or VictoriaLogs' `stats_query`). */
  readonly path: string;
  /** Asked with every query: no cached partial answer (VictoriaMetrics' rollup cache). */
  readonly extraParams: Readonly<Record<string, string>>;
}

/** Where a VMCluster's vmselect answers PromQL/MetricsQL for a tenant (VictoriaMetrics cluster URL format). */
export function vmselectPathPrefix(tenant: string): string {
  return `/select/${tenant}/prometheus`;
}

/** The query API of a zone kind; `vmselectPrefix` replaces a VMCluster's `/select/<tenant>/prometheus`. */
export function zoneQueryApi(kind: ZoneKindName, tenant: string, vmselectPrefix?: string): ZoneQueryApi {
  switch (kind) {
    case 'VMCluster':
      return {
        language: 'MetricsQL',
        path: `${vmselectPrefix ?? vmselectPathPrefix(tenant)}/api/v1/query`,
        extraParams: { nocache: '1' },
      };
    case 'VMSingle':
      return { language: 'MetricsQL', path: '/prometheus/api/v1/query', extraParams: { nocache: '1' } };
    case 'VLCluster':
      return { language: 'LogsQL', path: '/select/logsql/stats_query', extraParams: {} };
  }
}

/** The default checks: how many series (log streams) have data in the window, and how many samples (log entries). */
export interface NamedQuery {
  readonly name: string;
  readonly query: string;
}

/** A duration in whole seconds as both languages write it. */
function seconds(ms: number): string {
  return `${Math.max(1, Math.round(ms / 1000))}s`;
}

/**
 * The default questions about `selector` over [start, end]: for MetricsQL, two instant queries at `end` over the
 * window; for LogsQL, one stats query on the window's entries that names both figures.
 */
export function defaultZoneQueries(
  language: QueryLanguage,
  selector: string,
  window: { startMs: number; endMs: number },
): NamedQuery[] {
  if (language === 'MetricsQL') {
    const range = seconds(window.endMs - window.startMs);
    return [
      { name: 'series', query: `count(count_over_time(${selector}[${range}]))` },
      { name: 'samples', query: `sum(count_over_time(${selector}[${range}]))` },
    ];
  }
  const start = new Date(window.startMs).toISOString();
  const end = new Date(window.endMs).toISOString();
  return [
    {
      name: 'entries',
      query: `_time:[${start}, ${end}] ${selector} | stats count() samples, count_uniq(_stream) series`,
    },
  ];
}

/** A user's query with `$window`, `$start` and `$end` replaced by the window's length and bounds. */
export function userZoneQuery(query: string, window: { startMs: number; endMs: number }): string {
  return query
    .replaceAll('$window', seconds(window.endMs - window.startMs))
    .replaceAll('$start', new Date(window.startMs).toISOString())
    .replaceAll('$end', new Date(window.endMs).toISOString());
}

const vectorAnswerSchema = z.object({
  status: z.string(),
  isPartial: z.boolean().optional(),
  error: z.string().optional(),
  data: z
    .object({
      resultType: z.string(),
      result: z.array(
        z.object({
          metric: z.record(z.string(), z.string()),
          value: z.tuple([z.number(), z.string()]),
        }),
      ),
    })
    .optional(),
});

/** An answer: each series of the instant vector as `{labels}` → value; `{}` for an aggregate without labels. */
export type QueryAnswer = Record<string, number>;

/** A label set as PromQL writes it, sorted, so that both zones' answers key alike. */
export function labelsKey(metric: Readonly<Record<string, string>>): string {
  const parts = Object.keys(metric)
    .sort()
    .map((name) => `${name}=${JSON.stringify(metric[name])}`);
  return `{${parts.join(', ')}}`;
}

export interface PodAnswer {
  /** `namespace/name` of the pod asked. */
  readonly pod: string;
  /** One answer per query, by the query's name; absent when the pod gave none (`problem` says why). */
  readonly answers?: Record<string, QueryAnswer>;
  readonly problem?: string;
  /** From the first request sent to the last answer received, on the caller's clock. */
  readonly latencyMs?: number;
}

export interface ZoneQueryTarget {
  /** The zone's cluster: its pods are reached through its pod access (pod-proxy.ts). */
  readonly kube: KubeObjects;
  readonly kind: ZoneKindName;
  readonly namespace: string;
  readonly name: string;
  readonly api: ZoneQueryApi;
}

/** Answers larger than this are no count of a zone's data: a user query that returns a whole table is refused. */
export const maxAnswerBytes = 1024 * 1024;

/**
 * Asks every pod of the zone's query component (the operator's labels) each query at `atMs`, one pod after the
 * other's queries in turn. A pod that is not Ready, cannot be reached, answers an error or a partial answer gives no
 * answer, with the reason. `clock` measures the latency; `timeoutMs` bounds each request.
 */
export async function askZone(
  target: ZoneQueryTarget,
  queries: readonly NamedQuery[],
  atMs: number,
  options: { clock: () => number; timeoutMs: number; onlyFirstPod?: boolean },
): Promise<PodAnswer[]> {
  const pods = zoneQueryPods(target.kind, target.namespace, target.name);
  const { active } = await listSelectedPods(target.kube, pods.namespace, pods.labelSelector);
  if (active.length === 0) {
    return [
      {
        pod: `${target.kind} ${target.namespace}/${target.name}`,
        problem: `no ${pods.component} pod matches ${pods.labelSelector} in namespace ${pods.namespace}`,
      },
    ];
  }
  const described = active.map((object) => describePod(object, pods.port));
  const chosen = options.onlyFirstPod
    ? [described.find((pod) => pod.address !== undefined) ?? (described[0] as (typeof described)[0])]
    : described;
  return Promise.all(
    chosen.map(async (pod): Promise<PodAnswer> => {
      if (pod.address === undefined) return { pod: pod.key, problem: pod.problem ?? 'no address' };
      const started = options.clock();
      const answers: Record<string, QueryAnswer> = {};
      for (const { name, query } of queries) {
        const params = new URLSearchParams({
          query,
          time: (atMs / 1000).toFixed(3),
          ...target.api.extraParams,
        });
        const request = podScrapeTarget(
          { namespace: target.namespace, name: pod.name, address: pod.address },
          { scheme: 'http' },
          target.kube.registration,
          `${target.api.path}?${params.toString()}`,
        );
        try {
          const answer = await askPod(request, options.timeoutMs);
          if (typeof answer === 'string') {
            return { pod: pod.key, problem: `${pods.component} ${pod.key} answered ${name}: ${answer}` };
          }
          answers[name] = answer;
        } catch (error) {
          if (!(error instanceof ScrapeError)) throw error;
          return {
            pod: pod.key,
            problem: podScrapeFailure(target.kube.registration, target.namespace, error),
          };
        }
      }
      return { pod: pod.key, answers, latencyMs: options.clock() - started };
    }),
  );
}

/** One query of one pod: its vector, or why it is no answer (an error, a partial answer, not a vector). */
async function askPod(
  request: ReturnType<typeof podScrapeTarget>,
  timeoutMs: number,
): Promise<QueryAnswer | string> {
  const chunks: Buffer[] = [];
  await fetchBounded(
    request,
    { timeoutMs, maxBodyBytes: maxAnswerBytes, accept: 'application/json', what: 'answer', verb: 'querying' },
    (bytes) => chunks.push(Buffer.from(bytes)),
  );
  let parsed: z.infer<typeof vectorAnswerSchema>;
  try {
    parsed = vectorAnswerSchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
  } catch {
    return 'an answer that is not an instant-query result';
  }
  if (parsed.status !== 'success') return `status ${parsed.status}${parsed.error ? `: ${parsed.error}` : ''}`;
  if (parsed.isPartial === true) return 'a partial answer (some storage nodes did not answer)';
  if (parsed.data === undefined || parsed.data.resultType !== 'vector') {
    return `a ${parsed.data?.resultType ?? 'missing'} result, not an instant vector`;
  }
  const answer: QueryAnswer = {};
  for (const series of parsed.data.result) {
    const value = Number(series.value[1]);
    answer[labelsKey(series.metric)] = value;
  }
  return answer;
}
