// The vmzones/gates metric provider. A measurement takes one reading of its gate per Run/Resume call and
// waits within itself (Running, ResumeAt always set) until the gate has its answer or the gate's timeout
// passes. What the next reading needs travels in Measurement.Metadata: only Kubernetes holds state.
//
// Verdict: without successCondition/failureCondition the gate's own evidence decides (pass → Successful,
// fail → Failed at once, wait → Running until the timeout, then Failed with the last figures). With
// conditions, they are evaluated against the figures (Measurement.Value) as `result` on every reading: true
// success → Successful, true failure → Failed at once; otherwise the measurement waits as above and at the
// end returns what the conditions say (Failed or Inconclusive). A condition that cannot be evaluated, bad
// config, an unknown gate or a Rollout without spec → Error naming the problem.
//
// Terminate (the run is stopping, e.g. the rollout was aborted or promoted): the measurement ends
// Inconclusive with its last figures — the gate never said yes, so it must not count as a success.

import type { z } from 'zod';
import { type FailureCode, failureCodeOf } from '../goplugin/failure-codes.ts';
import type { Logger } from '../goplugin/index.ts';
import { type NamespaceAllowance, parseNamespaceAllowance } from '../kube/allowed-namespaces.ts';
import { type ClusterClients, clusterClientsFromArgs } from '../kube/cluster-registry.ts';
import { KubeError, type KubeObjects, kubeObjects } from '../kube/objects.ts';
import { gatesPluginName } from '../rollouts/plugin-names.ts';
import type {
  AnalysisRunView,
  MeasurementResult,
  MeasurementView,
  MetricProvider,
  MetricView,
} from '../rollouts/types.ts';
import {
  type GateConfig,
  GateConfigError,
  type GateName,
  gateTlsWarning,
  parseGateConfig,
} from './config.ts';
import { drainStateSchema } from './drain-state.ts';
import { evaluateMetricConditions } from './expr/conditions.ts';
import type { GateContext, GateReading } from './gate-reading.ts';
import { GateSetupError, lazyOwnerSpec, RunOwners } from './owner-spec.ts';
import { readVmagentDrained } from './vmagent-drained.ts';
import { readVmauthReloaded, reloadGateStateSchema } from './vmauth-reloaded.ts';
import { readVmclusterReady, readyGateStateSchema } from './vmcluster-ready.ts';
import { readWave, waveZonesOf, zoneStateIn } from './wave-reading.ts';
import { readZoneAnswers } from './zone-answers.ts';

export const metadataKeys = {
  gate: 'vmzones.io/gate',
  /** Start of the measurement, to the millisecond (StartedAt is stored to the second). */
  startedAt: 'vmzones.io/started-at',
  /** Until when the measurement may wait (start + the gate's timeout), once known. */
  deadline: 'vmzones.io/deadline',
  readings: 'vmzones.io/readings',
  /** The gate's own state between readings (JSON), only while Running. */
  state: 'vmzones.io/state',
  /** Why a measurement Failed or ended in Error, as a failure code (plugin/goplugin/failure-codes.ts). */
  failureCode: 'vmzones.io/failure-code',
} as const;

/** What each gate's own `fail` verdict and its timeout mean, as failure codes. */
const gateFailureCodes = {
  vmclusterReady: { fail: 'ZoneFailed', timeout: 'ReadyTimeout' },
  vmagentQueueDrained: { fail: 'DataLost', timeout: 'QueueNotDrained' },
  vmauthReloaded: { fail: 'ReloadUnproven', timeout: 'ReloadUnproven' },
  zoneAnswers: { fail: 'QueryMismatch', timeout: 'QueryMismatch' },
} as const satisfies Record<GateName, { fail: FailureCode; timeout: FailureCode }>;

/** Retry delay after a transient API error while waiting. */
const transientRetryMs = 10_000;

export interface GatesProviderOptions {
  /** The Kubernetes client; default: in-cluster or KUBECONFIG, created on first use. */
  kube?: () => KubeObjects;
  /** The registered clusters; default: those of the plugin's `--cluster-secrets-namespace` argument. */
  clusters?: () => ClusterClients;
  /** Milliseconds since the epoch; tests move it. */
  now?: () => number;
  /** Namespaces allowed beyond the AnalysisRun's own; default: the plugin's `--allowed-namespaces` argument. */
  allowance?: NamespaceAllowance;
  /** Where warnings go (a config that turns TLS verification off); default: nowhere. */
  logger?: Pick<Logger, 'warn'>;
  /** Waits on the provider's clock, for readings taken inside one call; default: real timers, unless `now` is
   *  injected without it (then no reading waits inside a call). */
  sleep?: (ms: number) => Promise<void>;
  /** How long one call may go on taking readings (each pollMs after the last) before it returns Running; default
   *  gatesInCallWaitMs. */
  inCallWaitMs?: number;
}

/**
 * The controller takes the next reading at resumeAt, stored to the second, and only when it gets to the
 * AnalysisRun again (about a second later on an idle controller, more on a busy one): readings due within this
 * long are taken inside the call instead, as the step plugin waits inside its calls (zones/deps.ts).
 */
export const gatesInCallWaitMs = 5_000;

/** Metrics already warned about, so that a gate polled every few seconds logs its warning once per process. */
const maxWarnedMetrics = 1000;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** ResumeAt is stored to the second: round up so that the next reading never comes early. */
function resumeAt(ms: number, now: number): string {
  return iso(Math.max(Math.ceil(ms / 1000) * 1000, Math.ceil((now + 1000) / 1000) * 1000));
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isTransient(error: unknown): boolean {
  return error instanceof KubeError && (error.kind === 'unavailable' || error.kind === 'conflict');
}

function pluginConfig(metric: MetricView): unknown {
  return metric.provider.plugin?.[gatesPluginName];
}

function describeMs(ms: number): string {
  if (ms % 60_000 === 0 && ms >= 60_000) return `${ms / 60_000}m`;
  return `${ms / 1000}s`;
}

export function createGatesProvider(options: GatesProviderOptions = {}): MetricProvider {
  const clock = options.now ?? Date.now;
  const sleep =
    options.sleep ??
    (options.now === undefined
      ? (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
      : undefined);
  const inCallWaitMs = sleep === undefined ? 0 : (options.inCallWaitMs ?? gatesInCallWaitMs);
  let client: KubeObjects | undefined;
  // Parsed on first use, so that a bad flag is a measurement error naming it rather than a dead plugin process.
  const allowance = () => options.allowance ?? parseNamespaceAllowance(process.argv.slice(2));
  const kube = () => {
    client ??= options.kube?.() ?? kubeObjects();
    return client;
  };
  const warned = new Set<string>();
  const runOwners = new RunOwners();
  const warnOnce = (key: string, warning: string) => {
    if (warned.has(key)) return;
    if (warned.size >= maxWarnedMetrics) warned.clear();
    warned.add(key);
    options.logger?.warn('TLS verification is off', { metric: key, warning });
  };
  let registry: ClusterClients | undefined;
  const clusters = () => {
    registry ??= options.clusters?.() ?? clusterClientsFromArgs(kube(), process.argv.slice(2));
    return registry;
  };

  async function readZone(config: GateConfig, context: GateContext, state: unknown): Promise<GateReading> {
    switch (config.gate) {
      case 'vmclusterReady':
        return readVmclusterReady(config, context, parsedState(state, readyGateStateSchema));
      case 'vmauthReloaded':
        return readVmauthReloaded(config, context, parsedState(state, reloadGateStateSchema));
      case 'vmagentQueueDrained':
        return readVmagentDrained(config, context, parsedState(state, drainStateSchema));
      case 'zoneAnswers':
        return readZoneAnswers(config, context);
    }
  }

  /** One zone's gate, or every zone of a wave's (`zone: "zone-b,zone-c"`, wave-reading.ts). */
  async function read(raw: unknown, context: GateContext, previous: MeasurementView | undefined) {
    const wave = waveZonesOf(raw);
    const state = storedJson(previous);
    if (wave === undefined) return readZone(parseGateConfig(raw), context, state);
    const configs = new Map(wave.map((zone) => [zone, parseGateConfig({ ...(raw as object), zone })]));
    return readWave(wave, (zone) =>
      readZone(configs.get(zone) as GateConfig, context, zoneStateIn(state, zone)),
    );
  }

  async function measure(
    run: AnalysisRunView,
    metric: MetricView,
    previous: MeasurementView | undefined,
  ): Promise<MeasurementResult> {
    const calledAt = clock();
    let now = calledAt;
    const startedAtMs = previous === undefined ? now : startOf(previous, now);
    let readings = Number(previous?.metadata?.[metadataKeys.readings] ?? '0') + 1;
    const knownDeadline = previous?.metadata?.[metadataKeys.deadline];
    const metadata: Record<string, string> = {
      [metadataKeys.startedAt]: iso(startedAtMs),
      [metadataKeys.readings]: String(readings),
      ...(knownDeadline === undefined ? {} : { [metadataKeys.deadline]: knownDeadline }),
    };
    const started = previous === undefined ? { startedAt: iso(now) } : {};

    let config: GateConfig;
    let reading: GateReading;
    try {
      const raw = pluginConfig(metric);
      const wave = waveZonesOf(raw);
      // A wave's zones share the config but their names: checked (and warned about) as its first zone's.
      config = parseGateConfig(wave === undefined ? raw : { ...(raw as object), zone: wave[0] });
      metadata[metadataKeys.gate] = config.gate;
      const context: GateContext = {
        kube: kube(),
        clusters: clusters(),
        run,
        now,
        clock,
        allowance: allowance(),
        ownerSpec: lazyOwnerSpec(kube(), run, runOwners),
      };
      // Said on use: in the log once per metric, and in every reading's message (so in `vmzones status`).
      const tlsWarning = gateTlsWarning(config);
      if (tlsWarning !== undefined) {
        warnOnce(
          `${run.metadata.namespace ?? ''}/${run.metadata.name ?? ''}/${metric.name ?? ''}`,
          tlsWarning,
        );
      }
      reading = await read(raw, context, previous);
      // Readings due before the in-call wait is over are taken here, each on the state the last one left, and
      // each pollMs after the start of the one before (a reading's own time does not stretch the spacing).
      // Evidence the gate is counting and that completes within another in-call wait is waited for here (up to
      // twice the in-call wait from the call's start): returning would cost the controller's requeue (ResumeAt to
      // the second, taken a second or more late). Rounds further apart than that are a call each, as before.
      for (;;) {
        const next = now + reading.pollMs;
        const due = reading.evidenceDueInMs;
        const until = Math.min(
          Math.max(calledAt + inCallWaitMs, due !== undefined && due <= inCallWaitMs ? now + due : 0),
          calledAt + 2 * inCallWaitMs,
        );
        if (reading.verdict !== 'wait' || sleep === undefined || next > until) break;
        if (next >= startedAtMs + reading.timeoutMs) break;
        await sleep(Math.max(0, next - clock()));
        now = clock();
        readings += 1;
        // The next reading sees the state the last one left, and none if it left none (never an older one).
        const { [metadataKeys.state]: _older, ...kept } = previous?.metadata ?? {};
        const carried: MeasurementView = {
          ...previous,
          metadata: {
            ...kept,
            ...(reading.state === undefined ? {} : { [metadataKeys.state]: JSON.stringify(reading.state) }),
          },
        };
        reading = await read(raw, { ...context, now }, carried);
      }
      metadata[metadataKeys.readings] = String(readings);
      if (tlsWarning !== undefined)
        reading = { ...reading, message: `${reading.message} (warning: ${tlsWarning})` };
    } catch (error) {
      if (isTransient(error) && knownDeadline !== undefined && previous !== undefined) {
        // Keep waiting on the last good figures and state; the next reading tries again.
        const deadline = Date.parse(knownDeadline);
        const carried = { ...metadata, ...pick(previous.metadata, metadataKeys.state, metadataKeys.gate) };
        if (now < deadline) {
          return {
            phase: 'Running',
            message: `could not take a reading, retrying: ${errorText(error)}`,
            value: previous.value ?? '',
            metadata: carried,
            resumeAt: resumeAt(Math.min(now + transientRetryMs, deadline), now),
          };
        }
        return {
          phase: 'Failed',
          message: `timed out at ${knownDeadline} without an answer; the last reading failed: ${errorText(error)}`,
          value: previous.value ?? '',
          metadata: {
            ...metadata,
            ...pick(previous.metadata, metadataKeys.gate),
            [metadataKeys.failureCode]: failureCodeOf(error),
          },
        };
      }
      return {
        ...started,
        phase: 'Error',
        message: errorMessage(error),
        metadata: { ...metadata, [metadataKeys.failureCode]: errorCode(error) },
      };
    }

    const deadline = startedAtMs + reading.timeoutMs;
    metadata[metadataKeys.deadline] = iso(deadline);
    const value = JSON.stringify(reading.figures);
    /** `code`: why a Failed or Error measurement ended (none for Successful and Inconclusive). */
    const finished = (
      phase: MeasurementResult['phase'],
      message: string,
      code?: FailureCode,
    ): MeasurementResult => ({
      ...started,
      phase,
      message,
      value,
      metadata: code === undefined ? metadata : { ...metadata, [metadataKeys.failureCode]: code },
    });
    const codes = gateFailureCodes[config.gate];
    const running = (message: string): MeasurementResult => ({
      ...started,
      phase: 'Running',
      message,
      value,
      metadata: {
        ...metadata,
        ...(reading.state === undefined ? {} : { [metadataKeys.state]: JSON.stringify(reading.state) }),
      },
      resumeAt: resumeAt(Math.min(now + reading.pollMs, deadline), now),
    });
    const timedOut = now >= deadline;
    const timeoutNote = `timed out after ${describeMs(reading.timeoutMs)}: `;

    const successCondition = metric.successCondition ?? '';
    const failureCondition = metric.failureCondition ?? '';
    if (successCondition === '' && failureCondition === '') {
      if (reading.verdict === 'pass') return finished('Successful', reading.message);
      if (reading.verdict === 'fail') return finished('Failed', reading.message, codes.fail);
      return timedOut
        ? finished('Failed', timeoutNote + reading.message, reading.timeoutCode ?? codes.timeout)
        : running(reading.message);
    }

    const outcome = evaluateMetricConditions(reading.figures, { successCondition, failureCondition });
    if (outcome.phase === 'Error')
      return finished(
        'Error',
        outcome.message ?? 'the conditions could not be evaluated',
        'ConditionInvalid',
      );
    if (outcome.phase === 'Successful') {
      return finished(
        'Successful',
        `${successCondition === '' ? 'failureCondition is false' : 'successCondition is true'}: ${reading.message}`,
      );
    }
    const failureHolds =
      failureCondition !== '' &&
      evaluateMetricConditions(reading.figures, { failureCondition }).phase === 'Failed';
    if (failureHolds)
      return finished('Failed', `failureCondition is true: ${reading.message}`, 'ConditionFailed');
    if (reading.verdict !== 'fail' && !timedOut) {
      return running(`waiting for successCondition: ${reading.message}`);
    }
    return finished(
      outcome.phase,
      `${timedOut ? timeoutNote : ''}the conditions did not hold${outcome.phase === 'Inconclusive' ? ' (neither is true)' : ''}: ${reading.message}`,
      outcome.phase !== 'Failed' ? undefined : reading.verdict === 'fail' ? codes.fail : 'ConditionFailed',
    );
  }

  return {
    async init() {},
    run: (run, metric) => measure(run, metric, undefined),
    resume: (run, metric, measurement) => measure(run, metric, measurement),
    async terminate(_run, _metric, measurement) {
      return {
        phase: 'Inconclusive',
        message: `terminated before the gate concluded; last reading: ${measurement.message ?? 'none'}`,
        value: measurement.value ?? '',
        metadata: withoutState(measurement.metadata),
      };
    },
    async garbageCollect() {
      // Measurements hold everything there is; nothing lives elsewhere to clean up.
    },
    async getMetadata(metric) {
      const raw = pluginConfig(metric);
      const wave = waveZonesOf(raw);
      const config = parseGateConfig(wave === undefined ? raw : { ...(raw as object), zone: wave[0] });
      const zone = wave?.join(',') ?? config.zone;
      return { [metadataKeys.gate]: config.gate, ...(zone === undefined ? {} : { 'vmzones.io/zone': zone }) };
    },
    type: () => gatesPluginName,
  };
}

function startOf(previous: MeasurementView, now: number): number {
  const precise = Date.parse(previous.metadata?.[metadataKeys.startedAt] ?? '');
  if (!Number.isNaN(precise)) return precise;
  const stored = Date.parse(previous.startedAt ?? '');
  return Number.isNaN(stored) ? now : stored;
}

function pick(metadata: Record<string, string> | undefined, ...keys: string[]): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const key of keys) {
    const value = metadata?.[key];
    if (value !== undefined) picked[key] = value;
  }
  return picked;
}

function withoutState(metadata: Record<string, string> | undefined): Record<string, string> | undefined {
  if (metadata === undefined) return undefined;
  const { [metadataKeys.state]: _dropped, ...rest } = metadata;
  return rest;
}

/** The gate's state kept by the previous reading, through the gate's own schema. */
/** The gate state the previous reading left (JSON), if any. */
function storedJson(previous: MeasurementView | undefined): unknown {
  const stored = previous?.metadata?.[metadataKeys.state];
  return stored === undefined ? undefined : JSON.parse(stored);
}

/** A gate's own state, validated: written by the plugin, but carried in an object others can write. */
function parsedState<T>(state: unknown, schema: z.ZodType<T>): T | undefined {
  if (state === undefined) return undefined;
  const parsed = schema.safeParse(state);
  if (!parsed.success) {
    throw new GateSetupError('the measurement carries no gate state this plugin version understands');
  }
  return parsed.data;
}

function errorCode(error: unknown): FailureCode {
  return error instanceof SyntaxError ? 'GateSetupInvalid' : failureCodeOf(error);
}

function errorMessage(error: unknown): string {
  if (error instanceof GateConfigError) return error.message;
  if (error instanceof SyntaxError) return `the measurement's stored state is not JSON: ${error.message}`;
  return errorText(error);
}
