// The Kubernetes objects the sandbox creates, shaped as they are in production.

export const vmNamespace = 'vm';
export const controllerNamespace = 'argo-rollouts';
export const vmagentName = 'vmagent';
/** The VLAgent that writes the log lines of VLCluster zones (test/sandbox/loadgen.ts --mode=logs feeds it). */
export const vlagentName = 'vlagent';
export const vmauthName = 'vmauth';
export const vmuserName = 'vmauth-read';
export const readUser = { username: 'vmzones-read', password: 'sandbox' } as const;

/** What every zone of a sandbox is: a VMCluster (default), a VMSingle or a VLCluster (real operator only). */
export const sandboxZoneKinds = ['VMCluster', 'VMSingle', 'VLCluster'] as const;
export type SandboxZoneKind = (typeof sandboxZoneKinds)[number];

export interface Zone {
  /** Zone name as the spec document names it ("zone-a"). */
  zone: string;
  /** The zone's object ("vm-zone-a"): a VMCluster, or a VMSingle or VLCluster when `kind` says so. */
  vmcluster: string;
  kind: SandboxZoneKind;
  /** The zone cluster it lives in (`zones.<zone>.cluster`); absent = the hub (test/sandbox/zone-clusters.ts). */
  cluster?: string;
}

/** How the hub's vmagent and vmauth reach a zone of another cluster: the addresses that cluster publishes. */
export interface RemoteZoneUrls {
  vminsertWriteUrl: string;
  vmselectUrl: string;
}

export function zonesFor(count: number, kind: SandboxZoneKind = 'VMCluster'): Zone[] {
  return Array.from({ length: count }, (_, i) => {
    const zone = `zone-${String.fromCharCode(97 + i)}`;
    return { zone, vmcluster: `vm-${zone}`, kind };
  });
}

export function namespace(name: string): object {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
}

export interface PluginLocation {
  /** Absolute path of the executable the controller copies into plugin-bin/ and runs. */
  location: string;
  args: string[];
}

/** Arguments after the bundle, per plugin (e.g. `--observe-address` for test/bench/scale.ts). */
export interface PluginExtraArgs {
  'vmzones/step'?: string[];
  'vmzones/gates'?: string[];
}

/** argo-rollouts-config with the vmzones step plugin and metric provider (file:// location). */
export function argoRolloutsConfig(
  plugin: PluginLocation | undefined,
  extraArgs: PluginExtraArgs = {},
): object {
  const data: Record<string, string> = {};
  if (plugin) {
    const item = (name: keyof PluginExtraArgs) => [
      { name, location: `file://${plugin.location}`, args: [...plugin.args, ...(extraArgs[name] ?? [])] },
    ];
    data.stepPlugins = JSON.stringify(item('vmzones/step'));
    data.metricProviderPlugins = JSON.stringify(item('vmzones/gates'));
  }
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argo-rollouts-config', namespace: controllerNamespace },
    data,
  };
}

export function vminsertWriteUrl(vmcluster: string): string {
  return `http://vminsert-${vmcluster}.${vmNamespace}.svc:8480/insert/0/prometheus/api/v1/write`;
}

/**
 * The URL vlagent sends a VLCluster's logs to: its vlinsert Service, at the path the operator documents for a VLAgent
 * writing to a VLCluster (vlagent adds `?version=<protocol>`; its queue folder hashes the URL without it).
 */
export function vlinsertWriteUrl(vlcluster: string): string {
  return `http://vlinsert-${vlcluster}.${vmNamespace}.svc:9481/internal/insert`;
}

/** The write URL of a zone as production writes it: the vminsert Service, the VMSingle's own Service, or vlinsert. */
export function zoneWriteUrl(zone: Zone): string {
  if (zone.kind === 'VLCluster') return vlinsertWriteUrl(zone.vmcluster);
  return zone.kind === 'VMSingle'
    ? `http://vmsingle-${zone.vmcluster}.${vmNamespace}.svc:8428/api/v1/write`
    : vminsertWriteUrl(zone.vmcluster);
}

/** A VMSingle zone; its one process listens on spec.port, which its Deployment's Pod declares and probes. */
export function vmSingle(zone: Zone, version: string, port: number): object {
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMSingle',
    metadata: { name: zone.vmcluster, namespace: vmNamespace, labels: { 'vmzones.io/zone': zone.zone } },
    spec: { image: { tag: version }, retentionPeriod: '1', port: String(port) },
  };
}

/**
 * The sandbox fixes each process's port in the spec (a zone's one process serves all three
 * components), so the Pods the operator creates probe, and Services name, the real process.
 */
export function vmCluster(zone: Zone, clusterVersion: string, port: number): object {
  const component = { replicaCount: 1, port: String(port) };
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMCluster',
    metadata: { name: zone.vmcluster, namespace: vmNamespace, labels: { 'vmzones.io/zone': zone.zone } },
    spec: {
      clusterVersion,
      retentionPeriod: '1',
      vmstorage: { ...component },
      vmselect: { ...component },
      vminsert: { ...component },
    },
  };
}

/**
 * A VictoriaLogs zone. As for a VMCluster, the sandbox fixes one port for vlinsert, vlselect and vlstorage: the zone is
 * one victoria-logs process (test/env/kube/internal/vmsim/logs.go) that the three components' Pods declare and probe.
 */
export function vlCluster(zone: Zone, clusterVersion: string, port: number): object {
  const component = { replicaCount: 1, port: String(port) };
  return {
    apiVersion: 'operator.victoriametrics.com/v1',
    kind: 'VLCluster',
    metadata: { name: zone.vmcluster, namespace: vmNamespace, labels: { 'vmzones.io/zone': zone.zone } },
    spec: {
      clusterVersion,
      vlstorage: { ...component, retentionPeriod: '1d' },
      vlselect: { ...component },
      vlinsert: { ...component },
    },
  };
}

/** The VLAgent writing to every zone, one spec.remoteWrite entry per zone in zone order (one queue each). */
export function vlAgent(zones: Zone[], version: string, port: number): object {
  return {
    apiVersion: 'operator.victoriametrics.com/v1',
    kind: 'VLAgent',
    metadata: { name: vlagentName, namespace: vmNamespace },
    spec: {
      replicaCount: 1,
      port: String(port),
      image: { tag: version },
      remoteWrite: zones.map((z) => ({ url: zoneWriteUrl(z) })),
      remoteWriteSettings: { flushInterval: '1s' },
    },
  };
}

export function vmAgent(
  zones: Zone[],
  version: string,
  port: number,
  remote: Record<string, RemoteZoneUrls> = {},
): object {
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMAgent',
    metadata: { name: vmagentName, namespace: vmNamespace },
    spec: {
      replicaCount: 1,
      port: String(port),
      image: { tag: version },
      remoteWrite: zones.map((z) => ({ url: remote[z.zone]?.vminsertWriteUrl ?? zoneWriteUrl(z) })),
    },
  };
}

export function vmAuth(version: string, port: number): object {
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMAuth',
    metadata: { name: vmauthName, namespace: vmNamespace },
    spec: { selectAllByDefault: true, port: String(port), image: { tag: version } },
  };
}

export function vmUser(zones: Zone[], remote: Record<string, RemoteZoneUrls> = {}): object {
  const kind = zones[0]?.kind ?? 'VMCluster';
  const targetRef =
    Object.keys(remote).length > 0
      ? {
          // A VMUser's crd targetRefs resolve only in its own cluster: every zone is a static URL (one list, that
          // drainReads edits), the hub's own zones by their vmselect Service, the others by their published address.
          static: {
            urls: zones.map(
              (z) => remote[z.zone]?.vmselectUrl ?? `http://vmselect-${z.vmcluster}.${vmNamespace}.svc:8481/`,
            ),
          },
          paths: ['/select/.*'],
        }
      : {
          // The CRD requires name and namespace; the operator uses them only when both are set,
          // so every zone goes in objects (one list that drainReads can edit).
          crd: {
            kind: { VMCluster: 'VMCluster/vmselect', VMSingle: 'VMSingle', VLCluster: 'VLCluster/vlselect' }[
              kind
            ],
            name: '',
            namespace: '',
            objects: zones.map((z) => ({ name: z.vmcluster, namespace: vmNamespace })),
          },
          // A VMSingle serves /prometheus/api/v1/... (and /api/v1/...); a VMCluster's vmselect /select/<tenant>/...,
          // a VLCluster's vlselect /select/logsql/...
          paths: kind === 'VMSingle' ? ['/prometheus/.*', '/api/v1/.*'] : ['/select/.*'],
        };
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMUser',
    metadata: { name: vmuserName, namespace: vmNamespace },
    spec: { username: readUser.username, password: readUser.password, targetRefs: [targetRef] },
  };
}
