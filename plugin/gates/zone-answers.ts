// Gate zoneAnswers: does the changed zone answer queries, and with the data a serving zone has? Each reading asks
// every query pod of the zone (vmselect, the VMSingle, vlselect: vm/zone-query.ts) and one pod of a serving zone
// the same queries at the same time over the same window, and passes when every pod of the zone answers within
// maxLatency and its answers match the serving zone's within the tolerance (answer-match.ts). Anything else waits:
// a zone still catching up on its vmagent queue matches once it has, and one that lost data or answers partially
// never does, so the timeout fails the measurement naming the query, both answers and the zone (docs/gates.md).

import type { KubeObject, KubeObjects } from '../kube/objects.ts';
import { type ZoneKind, zoneObjectRef } from '../vm/zone-kinds.ts';
import {
  askZone,
  defaultZoneQueries,
  type NamedQuery,
  type PodAnswer,
  userZoneQuery,
  zoneQueryApi,
} from '../vm/zone-query.ts';
import { zoneReadiness } from '../vm/zone-readiness.ts';
import { zoneState } from '../zones/state/zone-annotations.ts';
import { type AnswerDifference, answerDifferences, percent } from './answer-match.ts';
import type { AnswersGateConfig } from './config.ts';
import type { GateContext, GateReading } from './gate-reading.ts';
import { notReadyPollMs } from './vmagent-drained.ts';
import { allowedGateNamespace, clusterKube, type SpecZone, zoneFromSpec } from './zone-target.ts';

export const answersDefaults = {
  timeoutMs: 5 * 60_000,
  /** As often as the drain gate looks while the zone is not ready: the gate that passes last delays restoreReads. */
  pollMs: 2_000,
  /** Data younger than this may still be on its way to either zone (vmagent's flush, a send retried once). */
  lagMs: 30_000,
  /** The window reaches this far before the zone's walk began (its maintenance record), so that data written
   *  before the change is asked for too (a storage that came back empty lacks it). */
  beforeWalkMs: 60_000,
  /** The shortest window, also when the zone carries no maintenance record. */
  minWindowMs: 5 * 60_000,
  /** The longest window: a zone held for hours is compared over the last 6 h, not its whole stay. */
  maxWindowMs: 6 * 60 * 60_000,
  tolerance: 0.001,
  maxLatencyMs: 10_000,
  tenant: '0',
  /** Every series with a name (MetricsQL), every log entry (LogsQL). */
  selector: { MetricsQL: '{__name__!=""}', LogsQL: '*' },
} as const;

/** A zone of the spec, placed: its object's client, and the object. */
interface PlacedZone {
  readonly spec: SpecZone;
  readonly kube: KubeObjects;
  readonly describe: string;
}

async function placeZone(
  context: GateContext,
  zone: string | undefined,
  namespace: string | undefined,
): Promise<PlacedZone> {
  const spec = await zoneFromSpec(context, zone, 'the zone to query');
  const ns = allowedGateNamespace(context, namespace ?? spec.namespace);
  const describe = `${spec.kind.kind} ${ns}/${spec.vmcluster}`;
  const kube = await clusterKube(context, spec.cluster, ns, describe);
  return { spec: { ...spec, namespace: ns }, kube, describe };
}

/** When the zone's walk began, from its maintenance record; undefined without one (or with one vmzones cannot read). */
function walkStartMs(object: KubeObject): number | undefined {
  try {
    const since = Date.parse(zoneState(object).maintenance?.since ?? '');
    return Number.isNaN(since) ? undefined : since;
  } catch {
    return undefined;
  }
}

/**
 * The zone to compare with: the one the config names, else the first other zone of the spec (in its order) of the
 * same kind that is operational and in no maintenance (serving reads); undefined with why none qualifies.
 */
async function servingZone(
  context: GateContext,
  config: AnswersGateConfig,
  changed: PlacedZone,
): Promise<{ zone: PlacedZone } | { why: string }> {
  if (config.servingZone !== undefined) {
    return { zone: await placeZone(context, config.servingZone, config.namespace) };
  }
  const others = Object.keys(changed.spec.spec.zones).filter((name) => name !== changed.spec.zone);
  const passed: string[] = [];
  for (const name of others) {
    const zone = await placeZone(context, name, config.namespace);
    if (!sameKind(zone.spec.kind, changed.spec.kind)) {
      passed.push(`${name} (a ${zone.spec.kind.kind}: its answers are not comparable)`);
      continue;
    }
    const object = await zone.kube.get(
      zoneObjectRef(zone.spec.kind, zone.spec.namespace, zone.spec.vmcluster),
    );
    const readiness = await zoneReadiness(zone.kube, object);
    let maintenance: string | undefined;
    try {
      maintenance = zoneState(object).maintenance?.reason;
    } catch {
      maintenance = 'a vmzones annotation vmzones cannot read';
    }
    if (readiness.state === 'ready' && maintenance === undefined) return { zone };
    passed.push(
      `${name} (${maintenance === undefined ? readiness.message : `in maintenance: ${maintenance}`})`,
    );
  }
  return {
    why:
      others.length === 0
        ? 'the spec has no other zone to compare with'
        : `no other zone serves to compare with: ${passed.join('; ')}`,
  };
}

function sameKind(a: ZoneKind, b: ZoneKind): boolean {
  return a.kind === b.kind;
}

function describeAnswer(pod: PodAnswer): string {
  if (pod.answers === undefined) return pod.problem ?? 'no answer';
  return Object.entries(pod.answers)
    .map(([name, answer]) => {
      const series = Object.entries(answer);
      const shown = series
        .slice(0, 3)
        .map(([labels, value]) => `${labels} = ${value}`)
        .join(', ');
      return `${name}: ${series.length === 0 ? 'no series' : shown}${series.length > 3 ? `, … (${series.length} series)` : ''}`;
    })
    .join('; ');
}

function describeDifference(difference: AnswerDifference, queries: readonly NamedQuery[]): string {
  const query = queries.find((q) => q.name === difference.query)?.query ?? difference.query;
  return (
    `query \`${query}\`: ${difference.series} = ${difference.zone ?? 'absent'} in the zone, ` +
    `${difference.serving ?? 'absent'} in the serving zone (${percent(difference.relative)} apart)`
  );
}

export async function readZoneAnswers(config: AnswersGateConfig, context: GateContext): Promise<GateReading> {
  const timeoutMs = config.timeout ?? answersDefaults.timeoutMs;
  const pollMs = config.pollInterval ?? answersDefaults.pollMs;
  const tolerance = config.tolerance ?? answersDefaults.tolerance;
  const maxLatencyMs = config.maxLatency ?? answersDefaults.maxLatencyMs;
  const clock = context.clock ?? Date.now;
  const changed = await placeZone(context, config.zone, config.namespace);
  const kind = changed.spec.kind.kind;
  const api = zoneQueryApi(kind, config.tenant ?? answersDefaults.tenant, config.vmselectPathPrefix);

  const object = await changed.kube.get(
    zoneObjectRef(changed.spec.kind, changed.spec.namespace, changed.spec.vmcluster),
  );
  const endMs = Math.floor((context.now - (config.lag ?? answersDefaults.lagMs)) / 1000) * 1000;
  const walkStart = config.window === undefined ? walkStartMs(object) : undefined;
  const startMs =
    config.window !== undefined
      ? endMs - config.window
      : Math.max(
          endMs - answersDefaults.maxWindowMs,
          Math.min(endMs - answersDefaults.minWindowMs, (walkStart ?? endMs) - answersDefaults.beforeWalkMs),
        );
  const window = { startMs, endMs };
  const queries: NamedQuery[] =
    config.query !== undefined
      ? [{ name: 'query', query: userZoneQuery(config.query, window) }]
      : defaultZoneQueries(api.language, config.selector ?? answersDefaults.selector[api.language], window);

  const base = {
    gate: config.gate,
    zone: changed.spec.zone,
    kind,
    object: changed.describe,
    language: api.language,
    queries: Object.fromEntries(queries.map((q) => [q.name, q.query])),
    window: { start: new Date(startMs).toISOString(), end: new Date(endMs).toISOString() },
    tolerance,
    maxLatencyMs,
  };
  // Asked before its change is in place, the zone answers with what it was: no reading counts until its object is
  // operational at its generation (with no storage pod's change deferred), as the drain gate counts no round.
  const readiness = await zoneReadiness(changed.kube, object);
  if (readiness.state !== 'ready') {
    return {
      verdict: 'wait',
      message: `zone ${changed.spec.zone} is not asked until it is ready: ${readiness.message}`,
      figures: { ...base, zoneReady: false, matched: false },
      timeoutMs,
      pollMs: Math.min(pollMs, notReadyPollMs),
      timeoutCode: 'QueryUnanswered',
    };
  }
  const serving = await servingZone(context, config, changed);
  const reading = (
    verdict: GateReading['verdict'],
    message: string,
    figures: Record<string, unknown>,
    timeoutCode?: GateReading['timeoutCode'],
  ): GateReading => ({
    verdict,
    message,
    figures: { ...base, ...figures },
    timeoutMs,
    pollMs,
    ...(timeoutCode === undefined ? {} : { timeoutCode }),
  });
  if ('why' in serving) {
    return reading(
      'wait',
      `zone ${changed.spec.zone}: ${serving.why}`,
      { servingZone: null },
      'QueryUnanswered',
    );
  }
  const other = serving.zone;
  if (!sameKind(other.spec.kind, changed.spec.kind)) {
    return reading(
      'fail',
      `zone ${changed.spec.zone} (${kind}) cannot be compared with zone ${other.spec.zone} (${other.spec.kind.kind}): set servingZone to a zone of the same kind`,
      { servingZone: other.spec.zone },
    );
  }
  const ask = { clock, timeoutMs: maxLatencyMs + 5_000 };
  const [zonePods, servingPods] = await Promise.all([
    askZone(
      { kube: changed.kube, kind, namespace: changed.spec.namespace, name: changed.spec.vmcluster, api },
      queries,
      endMs,
      ask,
    ),
    askZone(
      { kube: other.kube, kind, namespace: other.spec.namespace, name: other.spec.vmcluster, api },
      queries,
      endMs,
      { ...ask, onlyFirstPod: true },
    ),
  ]);
  const servingPod = servingPods[0] as PodAnswer;
  const figures = {
    servingZone: other.spec.zone,
    pods: Object.fromEntries(zonePods.map((pod) => [pod.pod, podFigures(pod)])),
    serving: { pod: servingPod.pod, ...podFigures(servingPod) },
  };
  const during = `over ${base.window.start} … ${base.window.end}`;
  const unanswered = zonePods.filter((pod) => pod.answers === undefined);
  if (unanswered.length > 0) {
    return reading(
      'wait',
      `zone ${changed.spec.zone} does not answer ${queries.map((q) => `\`${q.query}\``).join(' and ')}: ${unanswered.map((pod) => pod.problem).join('; ')}`,
      { ...figures, matched: false },
      'QueryUnanswered',
    );
  }
  if (servingPod.answers === undefined) {
    return reading(
      'wait',
      `the serving zone ${other.spec.zone} does not answer, so there is nothing to compare with: ${servingPod.problem}`,
      { ...figures, matched: false },
      'QueryUnanswered',
    );
  }
  // Two zones without data in the window match, and prove nothing: the counts count only once there is data to miss.
  const servingCounts = Object.values(servingPod.answers).flatMap((answer) => Object.values(answer));
  if (config.query === undefined && !servingCounts.some((value) => value > 0)) {
    return reading(
      'wait',
      `the serving zone ${other.spec.zone} holds no data of ${config.selector ?? answersDefaults.selector[api.language]} ${during}, so a match would prove nothing`,
      { ...figures, matched: false },
      'QueryUnanswered',
    );
  }
  const slow = zonePods.filter((pod) => (pod.latencyMs ?? 0) > maxLatencyMs);
  if (slow.length > 0) {
    return reading(
      'wait',
      `zone ${changed.spec.zone} answers too slowly: ${slow.map((pod) => `${pod.pod} in ${pod.latencyMs} ms`).join(', ')} (maxLatency ${maxLatencyMs} ms)`,
      { ...figures, matched: false },
      'QueryUnanswered',
    );
  }
  const mismatched = zonePods
    .map((pod) => ({
      pod,
      differences: answerDifferences(pod.answers ?? {}, servingPod.answers ?? {}, tolerance),
    }))
    .filter(({ differences }) => differences.length > 0);
  if (mismatched.length > 0) {
    const first = mismatched[0] as (typeof mismatched)[0];
    return reading(
      'wait',
      `zone ${changed.spec.zone} answers differently from the serving zone ${other.spec.zone} ${during} (tolerance ${percent(tolerance)}): ` +
        `${first.differences.map((d) => describeDifference(d, queries)).join('; ')}. ` +
        `Zone ${changed.spec.zone} (${first.pod.pod}): ${describeAnswer(first.pod)}. Zone ${other.spec.zone} (${servingPod.pod}): ${describeAnswer(servingPod)}`,
      {
        ...figures,
        matched: false,
        differences: mismatched.flatMap(({ pod, differences }) =>
          differences.map((d) => ({ pod: pod.pod, ...d })),
        ),
      },
      'QueryMismatch',
    );
  }
  const slowest = Math.max(...zonePods.map((pod) => pod.latencyMs ?? 0));
  return reading(
    'pass',
    `zone ${changed.spec.zone} answers as the serving zone ${other.spec.zone} does ${during} ` +
      `(${zonePods.length} pod${zonePods.length === 1 ? '' : 's'}, slowest ${slowest} ms): ${describeAnswer(zonePods[0] as PodAnswer)}`,
    { ...figures, matched: true },
  );
}

function podFigures(pod: PodAnswer): Record<string, unknown> {
  return pod.answers === undefined
    ? { problem: pod.problem ?? 'no answer' }
    : { answers: pod.answers, latencyMs: pod.latencyMs ?? null };
}
