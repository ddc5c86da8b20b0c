// The plugin process's metrics, one prom-client Registry per process. Every label value comes from a bounded set
// (listed in docs/observe.md with the cardinality of each metric); zone-level series come from Kubernetes at
// scrape time (zone-snapshot.ts), the rest from calls this process served.

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ZoneSnapshots } from './zone-snapshot.ts';
import { zoneStateNames } from './zone-states.ts';

export type ObserveRole = 'step' | 'metricprovider';

// `vmcluster` is the zone object's name whatever its kind (the first kind named it); `kind` says which kind.
// `wave` is set only where the Rollout's spec walks in waves (docs/observe.md), so other series stay as they were.
const zoneLabels = ['zone_cluster', 'namespace', 'kind', 'vmcluster', 'zone', 'rollout', 'wave'] as const;
const waveHelp = "; wave: its wave in the Rollout's walk, 1 first, where the spec walks in waves";

/** Buckets of the step and gate durations: a second to an hour. */
const walkBuckets = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600];

export interface ObserveMetrics {
  registry: Registry;
  rpcDuration: Histogram<'service' | 'method' | 'outcome'>;
  stepDuration: Histogram<'action' | 'phase'>;
  stepFailures: Counter<'action' | 'method' | 'phase' | 'code'>;
  gateFailures: Counter<'gate' | 'phase' | 'code'>;
  gateDuration: Histogram<'gate' | 'phase'>;
  vmauthReloadWait: Histogram<'source'>;
  drainEndings: Counter<'ended'>;
  queuePendingBytes: Gauge<'namespace' | 'zone' | 'vmagent'>;
  queueOnDiskPendingBytes: Gauge<'namespace' | 'zone' | 'vmagent'>;
  kubeRequests: Counter<'verb' | 'resource'>;
  kubeErrors: Counter<'verb' | 'resource' | 'kind'>;
}

/** The metrics every role exports; the step role adds the zone metrics with registerZoneMetrics. */
export function createMetrics(role: ObserveRole): ObserveMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ role });
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const histogram = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: number[],
  ) => new Histogram<L>({ name, help, labelNames, buckets, registers });

  return {
    registry,
    rpcDuration: histogram(
      'vmzones_rpc_duration_seconds',
      'Plugin RPCs served to the Argo Rollouts controller, by method and outcome (_count is the number of calls)',
      ['service', 'method', 'outcome'],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ),
    stepDuration: histogram(
      'vmzones_step_duration_seconds',
      'vmzones/step steps that ended (Successful or Failed), from the step start the Rollout records',
      ['action', 'phase'],
      walkBuckets,
    ),
    stepFailures: new Counter({
      name: 'vmzones_step_failures_total',
      help: 'vmzones/step calls that failed, by failure code (docs/step-plugin.md "Failure codes"): phase Failed ends the step, Error is retried by the controller',
      labelNames: ['action', 'method', 'phase', 'code'],
      registers,
    }),
    gateFailures: new Counter({
      name: 'vmzones_gate_failures_total',
      help: 'vmzones/gates measurements that ended Failed or Error, by failure code (docs/step-plugin.md "Failure codes")',
      labelNames: ['gate', 'phase', 'code'],
      registers,
    }),
    gateDuration: histogram(
      'vmzones_gate_duration_seconds',
      'vmzones/gates measurements that ended, from the measurement start, by gate and phase',
      ['gate', 'phase'],
      walkBuckets,
    ),
    vmauthReloadWait: histogram(
      'vmzones_vmauth_reload_wait_seconds',
      'How long vmauth took to serve a changed read routing, by the step or gate that waited for it',
      ['source'],
      [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
    ),
    drainEndings: new Counter({
      name: 'vmzones_drain_endings_total',
      help:
        "Zones drainReads took out of reads, by what ended the drain: queries (vmauth's requests in flight, then the " +
        "zone's own queries in flight, read as none), graceFallback (that reading was asked for but gave no answer, " +
        'or saw requests or queries until the grace period ended), grace (the spec asks for the grace period: drainQueryCheck grace)',
      labelNames: ['ended'],
      registers,
    }),
    queuePendingBytes: new Gauge({
      name: 'vmzones_gate_queue_pending_bytes',
      help: "The vmagentQueueDrained gate's latest reading of an agent's queue for the zone (in memory + on disk)",
      labelNames: ['namespace', 'zone', 'vmagent'],
      registers,
    }),
    queueOnDiskPendingBytes: new Gauge({
      name: 'vmzones_gate_queue_on_disk_pending_bytes',
      help: "The vmagentQueueDrained gate's latest reading of an agent's on-disk queue for the zone",
      labelNames: ['namespace', 'zone', 'vmagent'],
      registers,
    }),
    kubeRequests: new Counter({
      name: 'vmzones_kube_api_requests_total',
      help: 'Kubernetes API requests made by this process',
      labelNames: ['verb', 'resource'],
      registers,
    }),
    kubeErrors: new Counter({
      name: 'vmzones_kube_api_errors_total',
      help: 'Failed Kubernetes API requests, by error kind (notFound, conflict, forbidden, invalid, unavailable)',
      labelNames: ['verb', 'resource', 'kind'],
      registers,
    }),
  };
}

/** Gauges whose values are computed from a zone snapshot each time they are collected. */
export function registerZoneMetrics(registry: Registry, zones: ZoneSnapshots): void {
  // prom-client calls each metric's collect before serializing it; concurrent calls share one refresh, and
  // every refresh within the snapshot TTL reads the same listing.
  let pending: Promise<void> | undefined;
  const collect = () => {
    pending ??= refresh().finally(() => {
      pending = undefined;
    });
    return pending;
  };
  const registers = [registry];
  const maintenance = new Gauge({
    name: 'vmzones_zone_maintenance',
    help: `Is the zone out of reads, changed or being rolled back by vmzones (1) or serving normally (0)${waveHelp}`,
    labelNames: zoneLabels,
    registers,
    collect,
  });
  const state = new Gauge({
    name: 'vmzones_zone_state',
    help: `The zone's vmzones state, one series per state, 1 for the current one (${zoneStateNames.join(', ')})${waveHelp}`,
    labelNames: [...zoneLabels, 'state'],
    registers,
    collect,
  });
  const since = new Gauge({
    name: 'vmzones_zone_state_since_timestamp_seconds',
    help: `When the zone entered its current non-serving state, as its annotations record it${waveHelp}`,
    labelNames: zoneLabels,
    registers,
    collect,
  });
  const drifted = new Gauge({
    name: 'vmzones_zone_drifted',
    help: `Does the serving zone's object differ from the stable spec of a Rollout naming it (1): no step changes it until a new revision walks it${waveHelp}`,
    labelNames: zoneLabels,
    registers,
    collect,
  });
  const snapshotOk = new Gauge({
    name: 'vmzones_zone_snapshot_success',
    help: 'Whether the latest listing of Rollouts and VMClusters succeeded (0: the zone metrics are absent)',
    registers,
    collect,
  });
  const snapshotAt = new Gauge({
    name: 'vmzones_zone_snapshot_timestamp_seconds',
    help: 'When the zone metrics were listed from Kubernetes (they are shared by scrapes for a short TTL)',
    registers,
    collect,
  });

  async function refresh(): Promise<void> {
    const snapshot = await zones.get();
    maintenance.reset();
    state.reset();
    since.reset();
    drifted.reset();
    snapshotOk.set(snapshot.ok ? 1 : 0);
    snapshotAt.set(snapshot.takenAt.getTime() / 1000);
    if (!snapshot.ok) return;
    for (const row of snapshot.zones) {
      const labels = {
        // Absent for the controller's own cluster, so series, selectors and alert silences of single-cluster
        // installs stay as they were.
        ...(row.cluster === undefined ? {} : { zone_cluster: row.cluster }),
        namespace: row.namespace,
        kind: row.kind,
        vmcluster: row.vmcluster,
        zone: row.zone,
        rollout: row.rollout,
        ...(row.wave === undefined ? {} : { wave: String(row.wave) }),
      };
      maintenance.set(labels, row.maintenance ? 1 : 0);
      drifted.set(labels, row.drift === undefined ? 0 : 1);
      for (const name of zoneStateNames) state.set({ ...labels, state: name }, name === row.state ? 1 : 0);
      const at = row.since === undefined ? Number.NaN : Date.parse(row.since);
      if (row.state !== 'serving' && !Number.isNaN(at)) since.set(labels, at / 1000);
    }
  }
}
