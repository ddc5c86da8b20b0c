// The kinds of object a zone can be (docs/zone-kinds.md): a VMCluster, a VMSingle or a VictoriaLogs VLCluster.
// Apply, rollback records, leases and maintenance annotations work the same on each; what differs is the custom
// resource, the Service that reads are routed to, the Service the writer's queue sends to, and the VMUser
// targetRef kind that names the read Service. Readiness is the same operator rule on every kind (vmcluster.ts):
// all three statuses embed the operator's StatusMetadata (updateStatus, reason, observedGeneration).

import type { ObjectRef } from '../kube/objects.ts';

/** The spec document's field that names a zone's object, one per kind. */
export const zoneKindFields = ['vmcluster', 'vmsingle', 'vlcluster'] as const;
export type ZoneKindField = (typeof zoneKindFields)[number];

export type ZoneKindName = 'VMCluster' | 'VMSingle' | 'VLCluster';

export interface ZoneKind {
  readonly field: ZoneKindField;
  readonly kind: ZoneKindName;
  readonly apiVersion: string;
  /** Plural resource name, as RBAC rules and `kubectl get` name it. */
  readonly resource: string;
  /** The operator's Service that serves the zone's reads: `<prefix><name>`. */
  readonly readServicePrefix: string;
  /** The operator's Service that the writer's remote-write URL points at: `<prefix><name>`. */
  readonly writeServicePrefix: string;
  /** `crd.kind` of a VMUser targetRef that routes to the read Service. */
  readonly vmuserTargetKind: string;
  /** Which writer feeds the zone: vmagent for metrics, vlagent for logs. */
  readonly writer: 'VMAgent' | 'VLAgent';
}

export const vmGroupVersion = 'operator.victoriametrics.com/v1beta1';
/** The operator serves the VictoriaLogs kinds (VLCluster, VLAgent) in v1. */
export const vlGroupVersion = 'operator.victoriametrics.com/v1';

export const zoneKinds: Readonly<Record<ZoneKindField, ZoneKind>> = {
  vmcluster: {
    field: 'vmcluster',
    kind: 'VMCluster',
    apiVersion: vmGroupVersion,
    resource: 'vmclusters',
    readServicePrefix: 'vmselect-',
    writeServicePrefix: 'vminsert-',
    vmuserTargetKind: 'VMCluster/vmselect',
    writer: 'VMAgent',
  },
  vmsingle: {
    field: 'vmsingle',
    kind: 'VMSingle',
    apiVersion: vmGroupVersion,
    resource: 'vmsingles',
    readServicePrefix: 'vmsingle-',
    writeServicePrefix: 'vmsingle-',
    vmuserTargetKind: 'VMSingle',
    writer: 'VMAgent',
  },
  vlcluster: {
    field: 'vlcluster',
    kind: 'VLCluster',
    apiVersion: vlGroupVersion,
    resource: 'vlclusters',
    readServicePrefix: 'vlselect-',
    writeServicePrefix: 'vlinsert-',
    vmuserTargetKind: 'VLCluster/vlselect',
    writer: 'VLAgent',
  },
};

export const defaultZoneKind: ZoneKind = zoneKinds.vmcluster;

/** The kind of a Kubernetes kind name; undefined for a kind that is not a zone kind. */
export function zoneKindOf(kind: string | undefined): ZoneKind | undefined {
  return Object.values(zoneKinds).find((k) => k.kind === kind);
}

/** The kind a handed-over record names; records written before zone kinds existed name none: VMCluster. */
export function zoneKindOrDefault(kind: ZoneKindName | undefined): ZoneKind {
  return zoneKindOf(kind) ?? defaultZoneKind;
}

export function zoneObjectRef(kind: ZoneKind, namespace: string, name: string): ObjectRef {
  return { apiVersion: kind.apiVersion, kind: kind.kind, namespace, name };
}
