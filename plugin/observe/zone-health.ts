// The health of a zone's object (VMCluster, VMSingle, VLCluster) as Argo CD shows it and `vmzones status` prints
// it: the operator's verdict, kept, plus what vmzones knows from the object's own annotations (lease, maintenance,
// rollback record, handoff): out of reads for which Rollout, which step, since when, and Degraded with the reason
// when the zone is held past its deadline or the operator reports a failed update.
//
// One wording: `zoneHealthWords` is the only place the sentences are written. Argo CD runs Lua, not TypeScript, so
// zone-health-lua.ts generates the Lua check from this table (and from the same deadlines), and the decision below is
// written twice, once here and once in that Lua, on purpose small and in the same order;
// test/unit/observe/zone-health-lua.test.ts runs the generated Lua in a real Lua engine over the same literal zone
// objects as this function and fails on any difference. docs/gitops.md ("Zone health in Argo CD").

import type { FailureCode } from '../goplugin/failure-codes.ts';
import type { KubeObject } from '../kube/objects.ts';
import {
  handoffAnnotation,
  leaseAnnotation,
  maintenanceAnnotation,
  rollbackAnnotation,
  StateError,
  type ZoneState,
  zoneState,
} from '../zones/state/zone-annotations.ts';

/** Argo CD's health statuses that these checks return. */
export type HealthStatusName = 'Healthy' | 'Progressing' | 'Suspended' | 'Degraded';

export interface ZoneHealth {
  status: HealthStatusName;
  message: string;
}

/** Every sentence of the health message, with `{name}` placeholders; the Lua check carries this same table. */
export const zoneHealthWords = {
  // The operator's verdict (what Argo CD 3.5 built in, and examples/gitops/argocd/argocd-cm.yaml did before).
  noStatus: 'Waiting for the operator to report a status',
  notObserved: 'Waiting for the operator to observe generation {generation}',
  operational: 'operational',
  expanding: 'expanding',
  paused: 'paused',
  failed: 'failed',
  // What vmzones adds.
  held: '{zone}: out of reads for Rollout {rollout} since {outSince}; {step} since {stepSince}',
  heldDetail:
    '{zone}: out of reads for Rollout {rollout} since {outSince}; {step} since {stepSince}: {detail}',
  serving:
    '{zone}: serving reads; holds the change of Rollout {rollout} (revision {revision}) applied at {appliedAt}',
  leased: '{zone}: serving reads; leased by Rollout {rollout} since {since}',
  withVerdict: '{sentence}; {kind}: {verdict}',
  operatorFailed: '{sentence}; ZoneFailed: {kind} failed: {verdict}',
  pastDeadline: '{sentence}; held past its deadline: {awaited} did not come within {limit}{code}',
  pastDeadlineCode: ' ({code})',
  malformed:
    'StateInvalid: annotation {annotation} is not what vmzones writes; see `vmzones status` and docs/step-plugin.md',
  newerFormat:
    'StateInvalid: annotation {annotation} was written by a newer vmzones (state format v{format}); upgrade vmzones',
} as const;

/** An AnalysisRun's health: Argo CD's verdict by phase (its built-in check's mapping), with a failed vmzones
 *  gate's zone and failure code (measurement metadata vmzones.io/failure-code) in the message. */
export const analysisHealthWords = {
  running: 'Analysis run is running',
  successful: 'Analysis run completed successfully',
  failed: 'Analysis run failed',
  error: 'Analysis run had an error',
  inconclusive: 'Analysis run was inconclusive',
  notReconciled: 'Waiting for analysis run to finish: status has not been reconciled.',
  gateFailed: '{zone}: gate {metric} {phase} ({code}): {message}',
} as const;

/** The step a held zone is in, as the sentence names it. */
export const zoneHealthSteps = {
  draining: 'draining',
  applying: 'applying the change',
  evidence: 'waiting for evidence',
  restoring: 'restoring reads',
  rollingBack: 'rolling back',
  reconciling: 'finishing in the vmzones reconciler',
} as const;
export type ZoneHealthStep = keyof typeof zoneHealthSteps;

/** What a step waits for, for the deadline sentence. */
export const zoneHealthAwaited: Readonly<Record<ZoneHealthStep, string>> = {
  draining: "vmauth's proof that reads left the zone",
  applying: 'the operator reporting the change operational',
  evidence: "the gates' evidence (operational, vmagent queues drained)",
  restoring: "vmauth's proof that reads are back",
  rollingBack: 'the rolled-back spec operational with reads restored',
  reconciling: 'the end of the handed-over work',
};

/**
 * How long a zone may stay in one step before its health is Degraded, as multiples of readyTimeout (the spec's
 * default is 15m: the checks are generated for it, docs/gitops.md says how to change it). Applying waits for the
 * operator up to readyTimeout (the step then fails with ReadyTimeout); the handed-over work of the reconciler gets
 * 2 x readyTimeout (a step waiting for it fails with HandoffTimeout); the other steps also wait on vmauth and the
 * gates, so 2 x readyTimeout.
 */
export const zoneHealthDeadlines: Readonly<Record<ZoneHealthStep, { factor: number; code?: FailureCode }>> = {
  draining: { factor: 2 },
  applying: { factor: 1, code: 'ReadyTimeout' },
  evidence: { factor: 2 },
  restoring: { factor: 2 },
  rollingBack: { factor: 2, code: 'HandoffTimeout' },
  reconciling: { factor: 2, code: 'HandoffTimeout' },
};

export const defaultHealthReadyTimeoutSeconds = 15 * 60;

/** The annotations in the order both checks validate them. */
export const healthAnnotations = [
  leaseAnnotation,
  maintenanceAnnotation,
  rollbackAnnotation,
  handoffAnnotation,
];

export function fillWords(template: string, values: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{(\w+)\}/g, (_, key: string) => {
    const value = values[key];
    return value === undefined ? '' : String(value);
  });
}

/** 15m, 1h30m, 45s, 0s: the limit as the deadline sentence prints it. */
export function formatHealthDuration(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = whole % 60;
  const text = `${h > 0 ? `${h}h` : ''}${m > 0 ? `${m}m` : ''}${s > 0 ? `${s}s` : ''}`;
  return text === '' ? '0s' : text;
}

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Seconds since the epoch of an RFC 3339 time, or undefined: the Lua check accepts exactly the same texts. */
export function healthTimeSeconds(text: string | undefined): number | undefined {
  const m = text === undefined ? null : rfc3339.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s, , zone] = m;
  const utc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)) / 1000;
  if (zone === 'Z' || zone === undefined) return utc;
  const sign = zone.startsWith('-') ? -1 : 1;
  return utc - sign * (Number(zone.slice(1, 3)) * 3600 + Number(zone.slice(4, 6)) * 60);
}

/** The operator's verdict: the rule Argo CD 3.5 built in, unchanged. */
export function operatorVerdict(object: KubeObject): ZoneHealth {
  const status = object.status;
  const updateStatus = status?.updateStatus;
  if (typeof updateStatus !== 'string') return { status: 'Progressing', message: zoneHealthWords.noStatus };
  const generation = object.metadata.generation;
  const observed = status?.observedGeneration;
  if (typeof generation === 'number' && typeof observed === 'number' && observed < generation) {
    return { status: 'Progressing', message: fillWords(zoneHealthWords.notObserved, { generation }) };
  }
  switch (updateStatus) {
    case 'operational':
      return { status: 'Healthy', message: zoneHealthWords.operational };
    case 'expanding':
      return { status: 'Progressing', message: zoneHealthWords.expanding };
    case 'paused':
      return { status: 'Suspended', message: zoneHealthWords.paused };
    case 'failed': {
      const reason = status?.reason;
      return { status: 'Degraded', message: typeof reason === 'string' ? reason : zoneHealthWords.failed };
    }
    default:
      return { status: 'Progressing', message: updateStatus };
  }
}

/** A held zone: the sentence, and since when its step runs (for the deadline). */
interface Held {
  sentence: string;
  step: ZoneHealthStep;
  stepSince: string;
}

function sameHolder(
  record: { rollout: string; uid: string; revision: string } | undefined,
  holder: { rollout: string; uid: string; revision: string } | undefined,
): boolean {
  return (
    record !== undefined &&
    holder !== undefined &&
    record.rollout === holder.rollout &&
    record.uid === holder.uid &&
    record.revision === holder.revision
  );
}

function heldSentence(values: {
  zone: string;
  rollout: string;
  outSince: string;
  step: ZoneHealthStep;
  stepSince: string;
  detail?: string | undefined;
}): Held {
  const words = values.detail === undefined ? zoneHealthWords.held : zoneHealthWords.heldDetail;
  return {
    sentence: fillWords(words, {
      ...values,
      step: zoneHealthSteps[values.step],
      detail: values.detail ?? '',
    }),
    step: values.step,
    stepSince: values.stepSince,
  };
}

/** Where vmzones has the zone, from its annotations; undefined when vmzones holds nothing there. */
function vmzonesSentence(state: ZoneState, verdict: ZoneHealth, generation: number | undefined) {
  const { lease, maintenance, rollback, handoff } = state;
  const zone = maintenance?.zone ?? handoff?.zone ?? rollback?.zone ?? lease?.zone ?? '';
  if (handoff !== undefined) {
    const undoing =
      handoff.rollback &&
      sameHolder(rollback, handoff.holder) &&
      (rollback?.phase === 'requested' || (rollback?.phase === 'reverted' && verdict.status !== 'Healthy'));
    return heldSentence({
      zone,
      rollout: handoff.holder.rollout,
      outSince: maintenance?.since ?? handoff.requestedAt,
      step: undoing ? 'rollingBack' : 'reconciling',
      stepSince: (undoing ? rollback?.requestedAt : undefined) ?? handoff.requestedAt,
      detail: handoff.message ?? handoff.by,
    });
  }
  if (maintenance !== undefined) {
    const rollout = lease?.rollout ?? 'unknown';
    const base = { zone, rollout, outSince: maintenance.since };
    if (maintenance.restoringSince !== undefined) {
      return heldSentence({ ...base, step: 'restoring', stepSince: maintenance.restoringSince });
    }
    const applied = rollback?.phase === 'applied' && sameHolder(rollback, lease) ? rollback : undefined;
    if (applied !== undefined) {
      const ready = verdict.status === 'Healthy' && (generation ?? 0) >= applied.generation;
      return heldSentence({ ...base, step: ready ? 'evidence' : 'applying', stepSince: applied.appliedAt });
    }
    return heldSentence({ ...base, step: 'draining', stepSince: maintenance.since });
  }
  if (rollback?.phase === 'applied') {
    return fillWords(zoneHealthWords.serving, {
      zone,
      rollout: rollback.rollout,
      revision: rollback.revision,
      appliedAt: rollback.appliedAt,
    });
  }
  if (lease !== undefined) {
    return fillWords(zoneHealthWords.leased, { zone, rollout: lease.rollout, since: lease.since });
  }
  return undefined;
}

/** The first vmzones annotation (healthAnnotations' order) that does not read, as the health message says it. */
function malformedMessage(object: KubeObject): string | undefined {
  const annotations = object.metadata.annotations ?? {};
  for (const key of healthAnnotations) {
    const text = annotations[key];
    if (text === undefined || text === '') continue;
    const alone = { ...object, metadata: { ...object.metadata, annotations: { [key]: text } } };
    try {
      zoneState(alone);
    } catch (err) {
      if (!(err instanceof StateError)) throw err;
      let format: unknown;
      try {
        format = (JSON.parse(text) as { v?: unknown } | null)?.v;
      } catch {
        format = undefined;
      }
      return typeof format === 'number' && format > 1
        ? fillWords(zoneHealthWords.newerFormat, { annotation: key, format })
        : fillWords(zoneHealthWords.malformed, { annotation: key });
    }
  }
  return undefined;
}

export interface ZoneHealthOptions {
  /** Seconds since the epoch (the Lua check reads os.time()). */
  nowSeconds: number;
  /** The readyTimeout the deadlines are multiples of; default 15m, the spec's default. */
  readyTimeoutSeconds?: number;
}

/** The zone object's health as the generated Argo CD check computes it (same verdict, same message). */
export function zoneHealth(object: KubeObject, options: ZoneHealthOptions): ZoneHealth {
  const verdict = operatorVerdict(object);
  const malformed = malformedMessage(object);
  if (malformed !== undefined) return { status: 'Degraded', message: malformed };
  const state = zoneState(object);
  const observed = object.status?.observedGeneration;
  const held = vmzonesSentence(state, verdict, typeof observed === 'number' ? observed : undefined);
  if (held === undefined) return verdict;
  const kind = object.kind ?? 'VMCluster';
  const sentence = typeof held === 'string' ? held : held.sentence;
  if (verdict.status === 'Degraded') {
    return {
      status: 'Degraded',
      message: fillWords(zoneHealthWords.operatorFailed, { sentence, kind, verdict: verdict.message }),
    };
  }
  if (typeof held !== 'string') {
    const since = healthTimeSeconds(held.stepSince);
    const deadline = zoneHealthDeadlines[held.step];
    const limit = deadline.factor * (options.readyTimeoutSeconds ?? defaultHealthReadyTimeoutSeconds);
    if (since !== undefined && options.nowSeconds > since + limit) {
      return {
        status: 'Degraded',
        message: fillWords(zoneHealthWords.pastDeadline, {
          sentence,
          awaited: zoneHealthAwaited[held.step],
          limit: formatHealthDuration(limit),
          code:
            deadline.code === undefined
              ? ''
              : fillWords(zoneHealthWords.pastDeadlineCode, { code: deadline.code }),
        }),
      };
    }
  }
  return {
    status: verdict.status,
    message: fillWords(zoneHealthWords.withVerdict, { sentence, kind, verdict: verdict.message }),
  };
}
