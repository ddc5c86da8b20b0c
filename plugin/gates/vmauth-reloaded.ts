// Gate vmauthReloaded: does every vmauth replica serve the config written since `since`? The evidence rules
// live in vm/vmauth-reload.ts; this gate finds the pods and the time the config source was last written.

import type { KubeObject, ObjectRef } from '../kube/objects.ts';
import { selectorFromLabels } from '../vm/pods.ts';
import { type VmauthPods, vmauthReloadEvidence } from '../vm/vmauth-reload.ts';
import { vmApiVersion } from '../vm/vmcluster.ts';
import { GateConfigError, type ReloadGateConfig } from './config.ts';
import { GateSetupError } from './owner-spec.ts';
import type { GateContext, GateReading } from './reading.ts';
import { explicitNamespace } from './zone-target.ts';

export const defaultReloadTimeoutMs = 5 * 60_000;
export const defaultReloadPollMs = 5_000;

/** The operator's selector labels of a VMAuth's pods (operator api/v1beta1 VMAuth.SelectorLabels). */
export function vmauthPodLabels(name: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'vmauth',
    'app.kubernetes.io/instance': name,
    'app.kubernetes.io/component': 'monitoring',
    'managed-by': 'vm-operator',
  };
}

/** The newest managedFields time: when the object was last written, to the second. */
export function lastWriteTime(object: KubeObject): Date | undefined {
  const entries = (object.metadata as { managedFields?: { time?: string }[] }).managedFields ?? [];
  const times = entries.map((entry) => Date.parse(entry.time ?? '')).filter((time) => !Number.isNaN(time));
  return times.length === 0 ? undefined : new Date(Math.max(...times));
}

interface ReloadTarget {
  namespace: string;
  selector: string;
  since: Date;
  sinceSource: string;
}

async function resolveTarget(config: ReloadGateConfig, context: GateContext): Promise<ReloadTarget> {
  const needSpec =
    config.since === undefined || (config.pods?.selector === undefined && config.vmauth === undefined);
  const owner = needSpec ? await context.ownerSpec() : undefined;
  const namespace =
    config.namespace ?? owner?.spec.namespace ?? owner?.namespace ?? explicitNamespace(context, undefined);
  const source = owner?.spec.vmauth;

  let selector = config.pods?.selector;
  if (selector === undefined && config.vmauth !== undefined)
    selector = selectorFromLabels(vmauthPodLabels(config.vmauth));
  if (selector === undefined) {
    if (source?.vmuser === undefined) {
      throw new GateConfigError([
        'pods.selector: required for a vmauth whose config is not a VMUser (a helm-managed vmauth); or set vmauth',
      ]);
    }
    const vmauths = await context.kube.list(vmApiVersion, 'VMAuth', namespace);
    if (vmauths.length !== 1) {
      throw new GateConfigError([
        `vmauth: ${vmauths.length} VMAuth objects in namespace ${namespace} (${vmauths.map((v) => v.metadata.name).join(', ') || 'none'}); name the one that serves VMUser ${source.vmuser}`,
      ]);
    }
    selector = selectorFromLabels(vmauthPodLabels(vmauths[0]?.metadata.name ?? ''));
  }

  if (config.since !== undefined) {
    return { namespace, selector, since: new Date(config.since), sinceSource: 'the gate config' };
  }
  let ref: ObjectRef;
  if (source?.vmuser !== undefined) {
    ref = { apiVersion: vmApiVersion, kind: 'VMUser', namespace, name: source.vmuser };
  } else if (source?.secret !== undefined) {
    ref = { apiVersion: 'v1', kind: 'Secret', namespace, name: source.secret.name };
  } else if (source?.configMap !== undefined) {
    ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace, name: source.configMap.name };
  } else {
    throw new GateConfigError(['since: required (the Rollout spec names no vmauth config source)']);
  }
  const since = lastWriteTime(await context.kube.get(ref));
  if (since === undefined) {
    throw new GateSetupError(
      `${ref.kind} ${namespace}/${ref.name} has no managedFields times; set since in the gate config`,
    );
  }
  return {
    namespace,
    selector,
    since,
    sinceSource: `the last write of ${ref.kind} ${namespace}/${ref.name}`,
  };
}

export async function readVmauthReloaded(
  config: ReloadGateConfig,
  context: GateContext,
): Promise<GateReading> {
  const target = await resolveTarget(config, context);
  const pods: VmauthPods = {
    namespace: target.namespace,
    labelSelector: target.selector,
    port: config.pods?.port ?? 'http',
    scheme: config.pods?.scheme ?? 'http',
    ...(config.pods?.tls === undefined ? {} : { tls: config.pods.tls }),
    ...(config.pods?.auth === undefined ? {} : { auth: config.pods.auth }),
    ...(config.reloader === undefined
      ? {}
      : {
          reloader: {
            port: config.reloader.port ?? 'reloader-http',
            configSecret: config.reloader.configSecret,
          },
        }),
    limits: {
      ...(config.pods?.scrapeTimeout === undefined ? {} : { timeoutMs: config.pods.scrapeTimeout }),
      ...(config.pods?.maxScrapeBytes === undefined ? {} : { maxBodyBytes: config.pods.maxScrapeBytes }),
    },
  };
  const evidence = await vmauthReloadEvidence(context.kube, pods, target.since);
  const figures = {
    gate: config.gate,
    namespace: target.namespace,
    selector: target.selector,
    since: target.since.toISOString(),
    sinceSource: target.sinceSource,
    reloaded: evidence.state === 'reloaded',
    state: evidence.state,
    podCount: evidence.pods.length,
    pods: evidence.pods,
  };
  const verdict = evidence.state === 'reloaded' ? 'pass' : evidence.state === 'unsupported' ? 'fail' : 'wait';
  return {
    verdict,
    message: evidence.message,
    figures,
    timeoutMs: config.timeout ?? defaultReloadTimeoutMs,
    pollMs: config.pollInterval ?? defaultReloadPollMs,
  };
}
