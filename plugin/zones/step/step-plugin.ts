// The vmzones/step plugin: `config: {zone, action}` with action drainReads | apply | restoreReads. Every action
// validates everything it needs before it writes, is safe to replay, and keeps its state only in Kubernetes.
// Failed = a real failure (the rollout aborts); a thrown error = a retryable fault (the controller retries in 30 s).

import { type Clock, createLogger, type Logger, systemClock } from '../../goplugin/index.ts';
import {
  type NamespaceAllowance,
  parseNamespaceAllowance,
  parseWatchNamespaces,
  reconcilerNamespaces,
  requireReconciled,
} from '../../kube/allowed-namespaces.ts';
import { type ClusterClients, clusterClientsFromArgs } from '../../kube/cluster-registry.ts';
import { type KubeObjects, kubeObjects } from '../../kube/objects.ts';
import type { WatchedObjects } from '../../kube/watched-objects.ts';
import { stepPluginName } from '../../rollouts/plugin-names.ts';
import type { RolloutView, StepContext, StepPlugin, StepResult } from '../../rollouts/types.ts';
import { zoneKube } from '../../vm/cluster-routing.ts';
import type { ZoneQueueCheck } from '../moves/queue-check.ts';
import { ZoneReconciler } from '../reconciler/reconciler.ts';
import { SpecError } from '../spec.ts';
import { abortStep, terminateStep } from './abort-terminate.ts';
import { applyZone } from './apply.ts';
import type { ZoneDeps } from './deps.ts';
import { drainReads } from './drain-reads.ts';
import { failed, isFinal, successful, withTransientRetries } from './outcome.ts';
import { restoreReads } from './restore-reads.ts';
import { resolveTarget, type ZoneTarget } from './target.ts';

export interface ZoneStepPluginOptions {
  /** Kubernetes access; default: the in-cluster service account or KUBECONFIG, created at init. */
  kube?: KubeObjects;
  /** The registered zone clusters (docs/multicluster.md); default: the cluster Secrets of the plugin's
   *  `--cluster-secrets-namespace` argument, none without it. */
  clusters?: ClusterClients;
  /** Time and waits; default the system clock (unit tests: test/unit/fake-clock.ts). */
  clock?: Clock;
  logger?: Logger;
  /** Start the background reconciler at init (default true); tests drive it by hand. */
  reconciler?: boolean;
  reconcileIntervalMs?: number;
  /** Namespaces beyond the Rollout's own that its spec document may name; default: the plugin's
   *  `--allowed-namespaces` argument in argo-rollouts-config (plugin/kube/allowed-namespaces.ts). */
  namespaces?: NamespaceAllowance;
  /** Namespaces the reconciler lists; default: the plugin's `--watch-namespaces` argument, else all. */
  watchNamespaces?: readonly string[];
  /** The queue check a finished zone passes before its reads come back (main.ts: the vmagentQueueDrained gate). */
  queueCheck?: ZoneQueueCheck;
  /** See ZoneDeps.inCallWaitMs; default 5 s. */
  inCallWaitMs?: number;
  /** Watch caches for what the reconciler reads every pass (main.ts: plugin/kube/watched-objects.ts); default
   *  none: it lists and gets on every pass. */
  watch?: (live: KubeObjects, namespaces: readonly string[]) => WatchedObjects;
}

export interface ZoneStepPlugin extends StepPlugin {
  /** The reconciler, once init created it (tests call tick()). */
  reconciler(): ZoneReconciler | undefined;
  stop(): Promise<void>;
}

function configSummary(context: StepContext): Record<string, unknown> {
  const config = context.config;
  if (typeof config !== 'object' || config === null) return {};
  const { zone, action } = config as Record<string, unknown>;
  return { ...(typeof zone === 'string' ? { zone } : {}), ...(typeof action === 'string' ? { action } : {}) };
}

export function createZoneStepPlugin(options: ZoneStepPluginOptions = {}): ZoneStepPlugin {
  const logger = options.logger ?? createLogger('vmzones.step');
  let kube = options.kube;
  let reconciler: ZoneReconciler | undefined;
  let watchedView: WatchedObjects | undefined;
  const clock = options.clock ?? systemClock;
  let namespaces = options.namespaces;
  /** The namespaces the reconciler lists (undefined = all): every namespace a step may act in. */
  let reconciled: { namespaces: readonly string[] | undefined } | undefined;
  const allowance = (): NamespaceAllowance => {
    namespaces ??= parseNamespaceAllowance(process.argv);
    return namespaces;
  };
  const reconciledNamespaces = (): readonly string[] | undefined => {
    // A bad or inconsistent flag fails InitPlugin (and every step): the controller reports it with this message.
    reconciled ??= {
      namespaces: reconcilerNamespaces(
        allowance(),
        options.watchNamespaces ?? parseWatchNamespaces(process.argv),
      ),
    };
    return reconciled.namespaces;
  };

  let clusters = options.clusters;
  const hubDeps = (): ZoneDeps => {
    kube ??= kubeObjects();
    clusters ??= clusterClientsFromArgs(
      kube,
      process.argv,
      (message) => logger.warn('a cluster Secret cannot be used', { error: message }),
      (message) => logger.warn('TLS verification is off', { warning: message }),
    );
    return {
      kube,
      clusters,
      now: () => clock.now(),
      sleep: (ms) => clock.sleep(ms),
      logger,
      inCallWaitMs: options.inCallWaitMs ?? 5_000,
    };
  };
  /** The target's objects each in its own cluster; an unregistered cluster fails the step, naming it. */
  const deps = async (target: ZoneTarget): Promise<ZoneDeps> => {
    const hub = hubDeps();
    return {
      ...hub,
      kube: await zoneKube(hub.clusters, hub.kube, target.zone.cluster, target.zone.namespace),
    };
  };

  /** Resolves the step; a bad spec document or config fails the step (Run) before anything is touched. */
  const act = async (
    operation: 'Run' | 'Abort' | 'Terminate',
    rollout: RolloutView,
    context: StepContext,
    work: (d: ZoneDeps, target: ZoneTarget) => Promise<StepResult>,
  ): Promise<StepResult> => {
    let target: ZoneTarget | undefined;
    try {
      target = resolveTarget(rollout, context.config, allowance());
      requireReconciled(
        reconciledNamespaces(),
        target.zone.namespace,
        `the zone object of zone ${target.zone.name} (Rollout ${rollout.metadata.namespace ?? ''}/${rollout.metadata.name ?? ''})`,
      );
      const resolved = target;
      return await withTransientRetries(clock.sleep, async () => work(await deps(resolved), resolved));
    } catch (err) {
      if (!isFinal(err)) {
        logger.warn(`${operation} failed; the controller retries`, {
          ...configSummary(context),
          error: err instanceof Error ? err.message : String(err),
        });
        throw err;
      }
      const status = { ...configSummary(context), error: err.message.slice(0, 1000) };
      if (operation !== 'Run') {
        // Abort and Terminate are not retried. A document that cannot be read means this revision never acted;
        // anything else (a malformed annotation, a refusal) is said as a failure, never as "nothing to do".
        if (err instanceof SpecError)
          return successful(`nothing to ${operation.toLowerCase()}: ${err.message}`, status);
        logger.warn(`${operation} failed`, { ...configSummary(context), error: err.message });
        return failed(`${operation} could not hand the zone over: ${err.message}`, status);
      }
      logger.info('step failed', { ...configSummary(context), error: err.message });
      return failed(err.message, status);
    }
  };

  return {
    async init() {
      if (options.reconciler === false) return;
      const d = hubDeps();
      // A bad flag fails InitPlugin: the controller then reports the plugin as broken, with this message.
      const watched = reconciledNamespaces();
      watchedView = options.watch?.(d.kube, watched ?? ['']);
      // Until a cache has listed, its reads go to the API server: the first pass need not wait for it.
      void watchedView?.start();
      reconciler = new ZoneReconciler({
        kube: d.kube,
        clusters: d.clusters,
        logger,
        clock,
        ...(options.reconcileIntervalMs === undefined ? {} : { intervalMs: options.reconcileIntervalMs }),
        ...(options.queueCheck === undefined ? {} : { queueCheck: options.queueCheck }),
        ...(watched === undefined ? {} : { namespaces: watched }),
        allowance: allowance(),
        ...(watchedView === undefined ? {} : { watched: watchedView.kube }),
      });
      reconciler.start();
    },
    run: (rollout, context) =>
      act('Run', rollout, context, (d, target) => {
        switch (target.config.action) {
          case 'drainReads':
            return drainReads(d, target, context.status);
          case 'apply':
            return applyZone(d, target, context.status);
          case 'restoreReads':
            return restoreReads(d, target, context.status);
        }
      }),
    terminate: (rollout, context) => act('Terminate', rollout, context, terminateStep),
    abort: (rollout, context) => act('Abort', rollout, context, abortStep),
    type: () => stepPluginName,
    reconciler: () => reconciler,
    async stop() {
      await reconciler?.stop();
      await watchedView?.stop();
    },
  };
}
