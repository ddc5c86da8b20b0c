// `vmzones status ROLLOUT [-n NS] [--watch] [-o json|wide]`: the Rollout's zones in walk order, read with the
// user's kubeconfig like `kubectl argo rollouts get rollout`. Per zone: the Rollout and its spec document, the
// zone's VMCluster (annotations and status), the newest AnalysisRun of the zone's gate and the read balancer's
// routing (status-model.ts derives, status-table.ts draws).
//
// --watch polls every 2 s. On a terminal it redraws in place (ANSI: cursor home, erase to line/screen end) with a
// spinner on the zone being walked; otherwise (a pipe, a log, `-o json`) it appends a snapshot whenever
// something changed. It exits when the walk ends: 0 when the Rollout is Healthy at its new revision, 1 when it is
// aborted or Degraded (docs/cli.md, "vmzones status").
//
// Loaded on demand from the command table (plugin/cli/commands.ts): it evaluates the Kubernetes client.

import { setTimeout as sleep } from 'node:timers/promises';
import {
  type ClusterClients,
  ClusterRegistryError,
  clusterClients,
  hubOnly,
  insecureClusterWarning,
} from '../kube/cluster-registry.ts';
import { KubeError, type KubeObject, type KubeObjects, kubeObjects } from '../kube/objects.ts';
import { readLayer, servingZones } from '../vm/read-layer.ts';
import { zoneObjectRef } from '../vm/zone-kinds.ts';
import { type ZoneSpecDocument, zoneWorkload } from '../zones/spec.ts';
import { readBalancerConfigs } from '../zones/step/target.ts';
import { type Flags, UsageError } from './args.ts';
import type { CommandContext } from './command-context.ts';
import { kubeConfigFor } from './diff.ts';
import { InputError } from './io.ts';
import { buildStatus, parseStatusRollout, type RolloutStatus, rolloutSpec } from './status-model.ts';
import { formatStatusTable } from './status-table.ts';

export const statusFormats = ['table', 'wide', 'json'] as const;
export type StatusFormat = (typeof statusFormats)[number];

/** The clients of the zones' registered clusters (docs/multicluster.md); the user's own for zones without one. */
export type ZoneClusterClients = Pick<ClusterClients, 'client' | 'registration'>;

/** Reads everything one snapshot needs; a Rollout that does not exist is an InputError (exit 1). */
export async function readStatus(
  kube: KubeObjects,
  namespace: string,
  name: string,
  clusters: ZoneClusterClients = hubOnly(kube),
  now: () => Date = () => new Date(),
): Promise<RolloutStatus> {
  let rolloutObject: KubeObject;
  try {
    rolloutObject = await kube.get({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', namespace, name });
  } catch (err) {
    if (err instanceof KubeError && err.kind === 'notFound')
      throw new InputError(`Rollout ${namespace}/${name} not found`);
    throw err;
  }
  const rollout = parseStatusRollout(rolloutObject);
  const spec = rolloutSpec(rollout);
  const zoneNamespace = spec.namespace ?? namespace;
  const balancers = readBalancerConfigs(spec, zoneNamespace);
  const [zones, analysisRuns, routing] = await Promise.all([
    readZoneObjects(spec, zoneNamespace, clusters),
    kube.list('argoproj.io/v1alpha1', 'AnalysisRun', namespace),
    readLayer({ kube, clusters }, balancers).then(
      (layer) => ({ routed: servingZones(layer) }),
      (err: unknown) => ({ error: err instanceof Error ? err.message : String(err) }),
    ),
  ]);
  return buildStatus({
    rollout: rolloutObject,
    zoneObjects: Object.values(zones.byZone),
    byZone: zones.byZone,
    zoneErrors: zones.zoneErrors,
    analysisRuns,
    routing,
    warnings: zones.warnings,
    now: now(),
  });
}

export interface ZoneObjectsRead {
  /** Each zone's object, read in the zone's own cluster; a zone whose object does not exist is absent. */
  byZone: Record<string, KubeObject>;
  /** Why a zone's object could not be read (its registered cluster is unknown or does not answer). */
  zoneErrors: Record<string, string>;
  /** Settings that weaken security where the zones are read (a registered cluster without TLS verification). */
  warnings: string[];
}

/** The objects of the spec's zones, each from its registered cluster (docs/multicluster.md): for `vmzones status`
 *  and `vmzones lint --cluster`. */
export async function readZoneObjects(
  spec: ZoneSpecDocument,
  zoneNamespace: string,
  clusters: ZoneClusterClients,
): Promise<ZoneObjectsRead> {
  const zoneErrors: Record<string, string> = {};
  const warnings = new Set<string>();
  const zoneObjects = await Promise.all(
    Object.entries(spec.zones).map(async ([zoneName, zone]): Promise<[string, KubeObject | undefined]> => {
      try {
        const zoneKube = await clusters.client(zone.cluster);
        const registration = await clusters.registration(zone.cluster);
        const insecure = registration === undefined ? undefined : insecureClusterWarning(registration);
        if (insecure !== undefined) warnings.add(insecure);
        const { kind, name } = zoneWorkload(zone);
        return [zoneName, await zoneKube.get(zoneObjectRef(kind, zoneNamespace, name))];
      } catch (err) {
        if (err instanceof KubeError && err.kind === 'notFound') return [zoneName, undefined];
        // A zone whose cluster is unknown or does not answer is shown as such; the other zones still are.
        if (zone.cluster === undefined || !(err instanceof KubeError || err instanceof ClusterRegistryError))
          throw err;
        zoneErrors[zoneName] = err.message;
        return [zoneName, undefined];
      }
    }),
  );
  const byZone = Object.fromEntries(zoneObjects.filter((e): e is [string, KubeObject] => e[1] !== undefined));
  return { byZone, zoneErrors, warnings: [...warnings] };
}

export interface RenderTarget {
  format: StatusFormat;
  now: Date;
  columns?: number | undefined;
  frame?: number;
}

export function renderStatus(status: RolloutStatus, target: RenderTarget): string {
  if (target.format === 'json') return `${JSON.stringify(status)}\n`;
  return formatStatusTable(status, {
    now: target.now,
    wide: target.format === 'wide',
    ...(target.columns === undefined ? {} : { columns: target.columns }),
    ...(target.frame === undefined ? {} : { frame: target.frame }),
  });
}

/** 0: the walk ended Healthy; 1: aborted or Degraded; undefined: still going. */
export function walkExitCode(status: RolloutStatus): number | undefined {
  if (status.outcome === 'healthy') return 0;
  if (status.outcome === 'aborted' || status.outcome === 'degraded') return 1;
  return undefined;
}

export interface WatchOptions {
  read: () => Promise<RolloutStatus>;
  out: (text: string) => void;
  /** Redraw in place with ANSI codes (stdout is a terminal and the format is a table). */
  inPlace: boolean;
  format: StatusFormat;
  columns?: () => number | undefined;
  now?: () => Date;
  pollMs?: number;
  /** Spinner frames between polls, on a terminal. */
  framesPerPoll?: number;
  signal?: AbortSignal;
}

const home = '\x1b[H';
const eraseLine = '\x1b[K';
const eraseBelow = '\x1b[J';
export const hideCursor = '\x1b[?25l';
export const showCursor = '\x1b[?25h';

/** Polls until the walk ends; returns the exit code. A failed read is shown and retried, not fatal. */
export async function watchStatus(options: WatchOptions): Promise<number> {
  const now = options.now ?? (() => new Date());
  const pollMs = options.pollMs ?? 2000;
  const frames = options.inPlace ? (options.framesPerPoll ?? 4) : 1;
  let lastKey: string | undefined;
  let frame = 0;
  if (options.inPlace) options.out(`${hideCursor}\x1b[2J`);
  try {
    for (;;) {
      let status: RolloutStatus | undefined;
      let problem: string | undefined;
      try {
        status = await options.read();
      } catch (err) {
        if (err instanceof InputError) throw err;
        problem = `reading failed (retrying): ${err instanceof Error ? err.message : String(err)}`;
      }
      const code = status === undefined ? undefined : walkExitCode(status);
      for (let f = 0; f < frames; f++) {
        const at = now();
        const body =
          status === undefined
            ? `${problem}\n`
            : renderStatus(status, {
                format: options.format,
                now: at,
                columns: options.columns?.(),
                ...(options.inPlace && code === undefined ? { frame: frame++ } : {}),
              });
        if (options.inPlace) {
          options.out(`${home}${body.replaceAll('\n', `${eraseLine}\n`)}${eraseBelow}`);
        } else {
          // Appended snapshots: only when something changed (ages alone do not count).
          const key = status === undefined ? (problem ?? '') : JSON.stringify(status);
          if (key !== lastKey) {
            options.out(
              options.format === 'json'
                ? body
                : `${lastKey === undefined ? '' : '\n'}${at.toISOString()}\n${body}`,
            );
            lastKey = key;
          }
        }
        if (code !== undefined) return code;
        if (options.signal?.aborted) return 130;
        await sleep(pollMs / frames, undefined, { signal: options.signal }).catch(() => undefined);
        if (options.signal?.aborted) return 130;
      }
    }
  } finally {
    if (options.inPlace) options.out(showCursor);
  }
}

/** The namespace: -n, else the kubeconfig context's, else `default` (as kubectl). */
function namespaceOf(flag: string | undefined, contextNamespace: string | undefined): string {
  return flag ?? (contextNamespace || 'default');
}

export async function run(flags: Flags, context: CommandContext): Promise<number> {
  const [name, ...extra] = flags.positionals;
  if (name === undefined) throw new UsageError('status needs the Rollout name: status ROLLOUT');
  if (extra.length > 0) throw new UsageError(`status takes one Rollout name (got also ${extra.join(' ')})`);
  const output = flags.string('output');
  if (output !== undefined && output !== 'json' && output !== 'wide')
    throw new UsageError(`-o must be json or wide (got ${JSON.stringify(output)})`);
  const format: StatusFormat = output ?? 'table';
  const target = flags.kubeTarget();
  const kc = kubeConfigFor(target);
  const namespace = namespaceOf(target.namespace, kc.namespace);
  const kube = kubeObjects(kc);
  // Remote zones are read with the clusters' registrations, as the plugin reads them (the user needs to read
  // those Secrets; docs/multicluster.md).
  const clusters = clusterClients({
    hub: kube,
    namespace: flags.string('clusters-namespace') ?? 'argo-rollouts',
  });
  const read = () => readStatus(kube, namespace, name, clusters);
  const tty = process.stdout.isTTY === true;
  const columns = () => (tty ? process.stdout.columns : undefined);

  if (!flags.bool('watch')) {
    context.io.out(renderStatus(await read(), { format, now: new Date(), columns: columns() }));
    return 0;
  }
  const inPlace = tty && format !== 'json';
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await watchStatus({
      read,
      out: (text) => context.io.out(text),
      inPlace,
      format,
      columns,
      signal: abort.signal,
    });
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
