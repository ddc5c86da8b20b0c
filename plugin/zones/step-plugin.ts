// The vmzones/step plugin: `config: {zone, action}` (or `{zones, action}` for a wave) with action drainReads | apply | restoreReads. Every action
// validates everything it needs before it writes, is safe to replay, and keeps its state only in Kubernetes.
// Failed = a real failure (the rollout aborts); a thrown error = a retryable fault (the controller retries in 30 s).

import { failureCodeOf } from '../goplugin/failure-codes.ts';
import { type Clock, createLogger, type Logger, systemClock } from '../goplugin/index.ts';
import {
  type NamespaceAllowance,
  parseNamespaceAllowance,
  parseWatchNamespaces,
  reconcilerNamespaces,
  requireReconciled,
} from '../kube/allowed-namespaces.ts';
import { type ClusterClients, clusterClientsFromArgs } from '../kube/cluster-registry.ts';
import { type KubeObjects, kubeObjects, withChangesOf } from '../kube/objects.ts';
import type { WatchedObjects } from '../kube/watched-objects.ts';
import { stepPluginName } from '../rollouts/plugin-names.ts';
import type { RolloutView, StepContext, StepPlugin, StepResult } from '../rollouts/types.ts';
import { zoneKube } from '../vm/cluster-routing.ts';
import type { BudgetReads } from '../vm/read-safety.ts';
import type { ZoneQueueCheck } from './moves/queue-check.ts';
import { ServingReadings } from './moves/serving-zones.ts';
import { ZoneReconciler } from './reconciler/reconciler.ts';
import { SpecError } from './spec.ts';
import { abortStep, terminateStep } from './step/abort-terminate.ts';
import { configZones } from './step/actions.ts';
import { apiCallsPerCluster, CallLimiter, limitedClusters, limitedObjects } from './step/api-limiter.ts';
import { applyZone } from './step/apply.ts';
import type { ZoneDeps } from './step/deps.ts';
import { drainReads } from './step/drain-reads.ts';
import { failed, isFinal, successful, withTransientRetries } from './step/outcome.ts';
import { restoreReads } from './step/restore-reads.ts';
import { resolveWave, type ZoneTarget } from './step/target.ts';
import { overWave, zoneTurnsOf } from './step/wave.ts';

export { inCallWatchedKinds } from './step/deps.ts';

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
  /** Before a drain, check that the zones that keep serving are current: their vmagent queues drained (by
   *  `queueCheck`) and no storage pod read-only (main.ts: on). Default off: tests on Kubernetes objects alone. */
  servingZones?: boolean;
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

function configSummary(config: unknown): Record<string, unknown> {
  if (typeof config !== 'object' || config === null) return {};
  const { zone, zones, action } = config as Record<string, unknown>;
  return {
    ...(typeof zone === 'string' ? { zone } : {}),
    ...(Array.isArray(zones) ? { zones: zones.filter((z) => typeof z === 'string').join(',') } : {}),
    ...(typeof action === 'string' ? { action } : {}),
  };
}

export function createZoneStepPlugin(options: ZoneStepPluginOptions = {}): ZoneStepPlugin {
  const logger = options.logger ?? createLogger('vmzones.step');
  let kube: KubeObjects | undefined;
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
  /** The serving zones' readings, kept for the process's life (moves/serving-zones.ts). */
  const serving =
    options.servingZones === true
      ? {
          readings: new ServingReadings(),
          ...(options.queueCheck === undefined ? {} : { queueCheck: options.queueCheck }),
        }
      : undefined;
  /** The clusters' clients, each cluster's calls bounded (step/api-limiter.ts); built once the watches are known. */
  let limited: { clusters: ClusterClients & BudgetReads; watched: WatchedObjects | undefined } | undefined;
  const hubDeps = (): ZoneDeps => {
    // Every call of the step process to the controller's own cluster shares one bound (step/api-limiter.ts).
    kube ??= limitedObjects(options.kube ?? kubeObjects(), new CallLimiter(apiCallsPerCluster));
    clusters ??= clusterClientsFromArgs(
      kube,
      process.argv,
      (message) => logger.warn('a cluster Secret cannot be used', { error: message }),
      (message) => logger.warn('TLS verification is off', { warning: message }),
    );
    if (limited === undefined || limited.watched !== watchedView) {
      // The drain budget reads the other zones of this cluster from the watched copies (vm/read-safety.ts).
      limited = {
        clusters: limitedClusters(clusters, apiCallsPerCluster, watchedView?.kube),
        watched: watchedView,
      };
    }
    return {
      // Reads and writes go to the API server; the in-call waits learn from the watches when to read again.
      kube: watchedView === undefined ? kube : withChangesOf(kube, watchedView),
      clusters: limited.clusters,
      now: () => clock.now(),
      sleep: (ms) => clock.sleep(ms),
      logger,
      inCallWaitMs: options.inCallWaitMs ?? 5_000,
      ...(serving === undefined ? {} : { serving }),
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

  /** A failure of one zone's call: a fault the controller retries is thrown again, a real failure is a result. */
  const outcomeOf = (operation: 'Run' | 'Abort' | 'Terminate', config: unknown, err: unknown): StepResult => {
    const summary = configSummary(config);
    if (!isFinal(err)) {
      logger.warn(`${operation} failed; the controller retries`, {
        ...summary,
        code: failureCodeOf(err),
        error: err instanceof Error ? err.message : String(err),
      });
      throw err;
    }
    const code = failureCodeOf(err);
    const status = { ...summary, error: err.message.slice(0, 1000) };
    if (operation !== 'Run') {
      // Abort and Terminate are not retried. A document that cannot be read means this revision never acted;
      // anything else (a malformed annotation, a refusal) is said as a failure, never as "nothing to do".
      if (err instanceof SpecError)
        return successful(`nothing to ${operation.toLowerCase()}: ${err.message}`, status);
      logger.warn(`${operation} failed`, { ...summary, code, error: err.message });
      return failed(`${operation} could not hand the zone over: ${err.message}`, status, code);
    }
    logger.info('step failed', { ...summary, code, error: err.message });
    return failed(err.message, status, code);
  };

  /** Resolves the step; a bad spec document or config fails the step (Run) before anything is touched. A step over
   *  a wave (`zones`) acts on its zones together (step/wave.ts); a step of one `zone` is the walk without waves. */
  const act = async (
    operation: 'Run' | 'Abort' | 'Terminate',
    rollout: RolloutView,
    context: StepContext,
    work: (d: ZoneDeps, target: ZoneTarget, previous: unknown) => Promise<StepResult>,
  ): Promise<StepResult> => {
    let targets: ZoneTarget[];
    try {
      targets = resolveWave(rollout, context.config, allowance());
      for (const target of targets) {
        requireReconciled(
          reconciledNamespaces(),
          target.zone.namespace,
          `the zone object of zone ${target.zone.name} (Rollout ${rollout.metadata.namespace ?? ''}/${rollout.metadata.name ?? ''})`,
        );
      }
    } catch (err) {
      return outcomeOf(operation, context.config, err);
    }
    /** One zone's call; `turn`: a wave zone's turn (step/wave.ts), which does not wait in the call. */
    const one = async (
      target: ZoneTarget,
      previous: unknown,
      config: unknown,
      turn = false,
    ): Promise<StepResult> => {
      try {
        return await withTransientRetries(clock.sleep, async () =>
          work({ ...(await deps(target)), ...(turn ? { inCallWaitMs: 0 } : {}) }, target, previous),
        );
      } catch (err) {
        return outcomeOf(operation, config, err);
      }
    };
    const [single] = targets;
    if (targets.length === 1 && single !== undefined && configZones(context.config)?.length === 1)
      return one(single, context.status, context.config);
    const action = targets[0]?.config.action ?? 'drainReads';
    return overWave(
      targets.map((t) => t.config.zone),
      action,
      {
        stopAtFailure: operation === 'Run',
        // Run moves the wave's zones together; Abort and Terminate hand each zone over in turn, as they did.
        ...(operation === 'Run' ? { together: zoneTurnsOf(action) } : {}),
      },
      (zone, turn, previous) => {
        const target = targets.find((t) => t.config.zone === zone) as ZoneTarget;
        return one(target, previous, target.config, turn);
      },
      context.status,
    );
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
      act('Run', rollout, context, (d, target, previous) => {
        switch (target.config.action) {
          case 'drainReads':
            return drainReads(d, target, previous);
          case 'apply':
            return applyZone(d, target, previous);
          case 'restoreReads':
            return restoreReads(d, target, previous);
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
