// Typed views of the Argo Rollouts objects the controller hands to plugins, in Kubernetes JSON shape
// (field names as in `kubectl get -o json`). They expose the fields vmzones and its tests read; the wire
// carries more, which the gob layer decodes and this layer leaves out.
//
// Times are RFC 3339 strings in UTC with second precision, as metav1.Time marshals to JSON.
// Gob flattens pointers and omits zero values, so a field that is absent here may have been nil *or* zero
// in Go (e.g. `status.currentStepIndex` is absent both at step 0 and before the first step).

export interface ObjectMetaView {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
}

export type IntOrString = number | string;

export interface CanaryStepView {
  setWeight?: number;
  pause?: { duration?: IntOrString };
  plugin?: { name?: string; config?: unknown };
}

export type StepPluginOperation = 'Run' | 'Terminate' | 'Abort';

export interface StepPluginStatusView {
  index?: number;
  name?: string;
  operation?: string;
  phase?: string;
  message?: string;
  startedAt?: string;
  updatedAt?: string;
  finishedAt?: string;
  backoff?: string;
  executions?: number;
  disabled?: boolean;
  status?: unknown;
}

export interface RolloutView {
  metadata: ObjectMetaView;
  spec: {
    template: { metadata: Pick<ObjectMetaView, 'labels' | 'annotations'> };
    strategy: { canary?: { steps?: CanaryStepView[] } };
  };
  status: {
    abort?: boolean;
    abortedAt?: string;
    currentStepIndex?: number;
    currentPodHash?: string;
    stableRS?: string;
    phase?: string;
    message?: string;
    canary?: { stepPluginStatuses?: StepPluginStatusView[] };
  };
}

export type AnalysisPhase = 'Pending' | 'Running' | 'Successful' | 'Failed' | 'Error' | 'Inconclusive';

export interface MeasurementView {
  phase?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  value?: string;
  metadata?: Record<string, string>;
  resumeAt?: string;
}

export interface MetricView {
  name?: string;
  interval?: string;
  initialDelay?: string;
  count?: IntOrString;
  successCondition?: string;
  failureCondition?: string;
  failureLimit?: IntOrString;
  inconclusiveLimit?: IntOrString;
  consecutiveErrorLimit?: IntOrString;
  consecutiveSuccessLimit?: IntOrString;
  provider: { plugin?: Record<string, unknown> };
}

export interface MetricResultView {
  name?: string;
  phase?: string;
  message?: string;
  count?: number;
  successful?: number;
  failed?: number;
  inconclusive?: number;
  error?: number;
  consecutiveError?: number;
  measurements?: MeasurementView[];
}

export interface AnalysisRunView {
  metadata: ObjectMetaView;
  spec: {
    args?: { name?: string; value?: string }[];
    metrics?: { name?: string }[];
    terminate?: boolean;
    dryRun?: { metricName?: string }[];
  };
  status: {
    phase?: string;
    message?: string;
    metricResults?: MetricResultView[];
  };
}

// ---- What plugins receive and return ----

export interface StepContext {
  pluginName: string;
  /** The step's `plugin.config`, parsed JSON; undefined when the step has none. */
  config: unknown;
  /** The status this step's previous Run returned, parsed JSON; undefined on the first Run. */
  status: unknown;
}

export type StepPhase = 'Running' | 'Successful' | 'Failed';

export interface StepResult {
  phase: StepPhase;
  message?: string;
  /** Only meaningful with Running; the controller turns anything at or below 10 s into 30 s. */
  requeueAfterMs?: number;
  /** Replaces the stored step status as a whole; must be a JSON object. */
  status?: Record<string, unknown>;
}

/**
 * A step plugin. Throwing from run/terminate/abort reports a retryable error to the controller (RpcError);
 * a real failure is a returned `Failed` phase.
 */
export interface StepPlugin {
  init(): Promise<void>;
  run(rollout: RolloutView, context: StepContext): Promise<StepResult>;
  terminate(rollout: RolloutView, context: StepContext): Promise<StepResult>;
  abort(rollout: RolloutView, context: StepContext): Promise<StepResult>;
  type(): string;
}

export interface MeasurementResult {
  phase: AnalysisPhase;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  value?: string;
  metadata?: Record<string, string>;
  /** Required with Running: the controller schedules the next Resume at this time and at no other. */
  resumeAt?: string;
}

/** A metric provider. Throwing from run/resume/terminate yields an Error measurement with the message. */
export interface MetricProvider {
  init(): Promise<void>;
  run(run: AnalysisRunView, metric: MetricView): Promise<MeasurementResult>;
  resume(run: AnalysisRunView, metric: MetricView, measurement: MeasurementView): Promise<MeasurementResult>;
  terminate(
    run: AnalysisRunView,
    metric: MetricView,
    measurement: MeasurementView,
  ): Promise<MeasurementResult>;
  garbageCollect(run: AnalysisRunView, metric: MetricView, limit: number): Promise<void>;
  getMetadata(metric: MetricView): Promise<Record<string, string>>;
  type(): string;
}
