// Go field names → Kubernetes JSON views. This file is the one place that knows how Argo Rollouts' Go types
// are laid out on the wire.

import { CodedError } from '../goplugin/failure-codes.ts';
import type { GobIgnoredFields } from '../goplugin/gob/index.ts';
import type {
  AnalysisRunView,
  CanaryStepView,
  MeasurementView,
  MetricResultView,
  MetricView,
  ObjectMetaView,
  RolloutView,
  StepPluginStatusView,
} from './types.ts';
import type { WireStruct } from './wire-read.ts';

/**
 * Big parts of the controller's arguments that no view below reads: the gob decoder walks them without building
 * them (a Rollout's pod spec is most of a Plugin.Run body; docs/testing.md, "Plugin process"). A view that
 * starts reading one of these must drop it here; test/unit/rollouts/views.test.ts decodes with and without.
 */
export const unreadFields: GobIgnoredFields = {
  ObjectMeta: ['ManagedFields', 'OwnerReferences', 'Finalizers'],
  PodTemplateSpec: ['Spec'],
};

function objectMeta(m: WireStruct): ObjectMetaView {
  return {
    name: m.string('Name'),
    namespace: m.string('Namespace'),
    uid: m.string('UID'),
    generation: m.int('Generation'),
    resourceVersion: m.string('ResourceVersion'),
    labels: m.stringMap('Labels'),
    annotations: m.stringMap('Annotations'),
    creationTimestamp: m.time('CreationTimestamp'),
  };
}

function canaryStep(s: WireStruct): CanaryStepView {
  const pause = s.optionalStruct('Pause');
  const plugin = s.optionalStruct('Plugin');
  return {
    setWeight: s.int('SetWeight'),
    pause: pause && { duration: pause.intOrString('Duration') },
    plugin: plugin && { name: plugin.string('Name'), config: plugin.json('Config') },
  };
}

function stepPluginStatus(s: WireStruct): StepPluginStatusView {
  return {
    index: s.int('Index'),
    name: s.string('Name'),
    operation: s.string('Operation'),
    phase: s.string('Phase'),
    message: s.string('Message'),
    startedAt: s.time('StartedAt'),
    updatedAt: s.time('UpdatedAt'),
    finishedAt: s.time('FinishedAt'),
    backoff: s.string('Backoff'),
    executions: s.int('Executions'),
    disabled: s.bool('Disabled'),
    status: s.json('Status'),
  };
}

export function rolloutView(r: WireStruct): RolloutView {
  const spec = r.struct('Spec');
  const status = r.struct('Status');
  const canary = spec.struct('Strategy').optionalStruct('Canary');
  const statusCanary = status.struct('Canary');
  return {
    metadata: objectMeta(r.struct('ObjectMeta')),
    spec: {
      template: {
        metadata: (({ labels, annotations }) => ({ labels, annotations }))(
          objectMeta(spec.struct('Template').struct('ObjectMeta')),
        ),
      },
      strategy: { canary: canary && { steps: canary.structs('Steps')?.map(canaryStep) } },
    },
    status: {
      abort: status.bool('Abort'),
      abortedAt: status.time('AbortedAt'),
      currentStepIndex: status.int('CurrentStepIndex'),
      currentPodHash: status.string('CurrentPodHash'),
      stableRS: status.string('StableRS'),
      phase: status.string('Phase'),
      message: status.string('Message'),
      canary: { stepPluginStatuses: statusCanary.structs('StepPluginStatuses')?.map(stepPluginStatus) },
    },
  };
}

export function measurementView(m: WireStruct): MeasurementView {
  return {
    phase: m.string('Phase'),
    message: m.string('Message'),
    startedAt: m.time('StartedAt'),
    finishedAt: m.time('FinishedAt'),
    value: m.string('Value'),
    metadata: m.stringMap('Metadata'),
    resumeAt: m.time('ResumeAt'),
  };
}

export function metricView(m: WireStruct): MetricView {
  const provider = m.struct('Provider');
  const pluginConfigs = provider.raw('Plugin');
  let plugin: Record<string, unknown> | undefined;
  if (pluginConfigs instanceof Map) {
    plugin = {};
    for (const [name, raw] of pluginConfigs) {
      if (typeof name !== 'string' || !(raw instanceof Uint8Array)) {
        throw new CodedError('ProtocolError', `${provider.path}.Plugin: expected map[string]json.RawMessage`);
      }
      plugin[name] = raw.length === 0 ? undefined : JSON.parse(new TextDecoder().decode(raw));
    }
  } else if (pluginConfigs !== undefined) {
    throw new CodedError('ProtocolError', `${provider.path}.Plugin: expected map[string]json.RawMessage`);
  }
  return {
    name: m.string('Name'),
    interval: m.string('Interval'),
    initialDelay: m.string('InitialDelay'),
    count: m.intOrString('Count'),
    successCondition: m.string('SuccessCondition'),
    failureCondition: m.string('FailureCondition'),
    failureLimit: m.intOrString('FailureLimit'),
    inconclusiveLimit: m.intOrString('InconclusiveLimit'),
    consecutiveErrorLimit: m.intOrString('ConsecutiveErrorLimit'),
    consecutiveSuccessLimit: m.intOrString('ConsecutiveSuccessLimit'),
    provider: { plugin },
  };
}

function metricResult(r: WireStruct): MetricResultView {
  return {
    name: r.string('Name'),
    phase: r.string('Phase'),
    message: r.string('Message'),
    count: r.int('Count'),
    successful: r.int('Successful'),
    failed: r.int('Failed'),
    inconclusive: r.int('Inconclusive'),
    error: r.int('Error'),
    consecutiveError: r.int('ConsecutiveError'),
    measurements: r.structs('Measurements')?.map(measurementView),
  };
}

export function analysisRunView(a: WireStruct): AnalysisRunView {
  const spec = a.struct('Spec');
  const status = a.struct('Status');
  return {
    metadata: objectMeta(a.struct('ObjectMeta')),
    spec: {
      args: spec.structs('Args')?.map((arg) => ({ name: arg.string('Name'), value: arg.string('Value') })),
      metrics: spec.structs('Metrics')?.map((m) => ({ name: m.string('Name') })),
      terminate: spec.bool('Terminate'),
      dryRun: spec.structs('DryRun')?.map((d) => ({ metricName: d.string('MetricName') })),
    },
    status: {
      phase: status.string('Phase'),
      message: status.string('Message'),
      metricResults: status.structs('MetricResults')?.map(metricResult),
    },
  };
}
