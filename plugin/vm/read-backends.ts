// The read balancer of a set of zones and which read backend belongs to which zone: a zone's vmselect is its
// VMCluster (for VMUser CRD references) or a URL whose host is the vmselect Service of that VMCluster (for
// static URLs and raw vmauth configs).

import { CodedError } from '../goplugin/failure-codes.ts';
import { namespacedName, type ObjectRef } from '../kube/objects.ts';
import type { VmauthPods } from './vmauth-reload.ts';
import { vmApiVersion } from './vmcluster.ts';
import { defaultZoneKind, type ZoneKind, type ZoneKindName } from './zone-kinds.ts';

export type ReadBalancerRef =
  | { kind: 'VMUser'; namespace: string; name: string; vmauths?: string[] }
  | { kind: 'Secret' | 'ConfigMap'; namespace: string; name: string; key: string };

/** Everything needed to drain, restore and check a zone's reads; plain JSON so that it can be handed over. */
export interface ReadBalancerConfig {
  ref: ReadBalancerRef;
  /** The vmauth pods serving this balancer; derived from the VMAuths that select the VMUser when absent. */
  pods?: VmauthPods[];
  /** Every zone of the spec document: "the last zone that serves reads" is judged among them. */
  zones: ZoneReadBackend[];
  /** `bestEffort` accepts vmauth versions without reload evidence (the grace period is all that protects). */
  reloadEvidence: 'required' | 'bestEffort';
  /** The registered cluster the vmauth and its config object run in (docs/multicluster.md); absent = own. */
  cluster?: string;
}

export function describeBalancer(ref: ReadBalancerRef): string {
  const base = `${ref.kind} ${namespacedName(ref)}`;
  return ref.kind === 'VMUser' ? base : `${base} key ${ref.key}`;
}

export function balancerObjectRef(ref: ReadBalancerRef): ObjectRef {
  return ref.kind === 'VMUser'
    ? { apiVersion: vmApiVersion, kind: 'VMUser', namespace: ref.namespace, name: ref.name }
    : { apiVersion: 'v1', kind: ref.kind, namespace: ref.namespace, name: ref.name };
}

/** One zone as the read balancer sees it. */
export interface ZoneReadBackend {
  /** The zone's name in the spec document: a label for people and events (drain records are keyed by the zone's
   *  object, zoneObjectKey). */
  zone: string;
  /** The registered cluster of the zone's object; absent = the controller's own. */
  cluster?: string;
  /** The zone's object: a VMCluster unless `kind` says otherwise (records handed over before kinds had none). */
  namespace: string;
  vmcluster: string;
  kind?: ZoneKindName;
  /** URL host names (no port) that reach this zone's vmselect, lower case. */
  hosts: string[];
}

/**
 * The identity of a zone's object as the balancers' drain records name it: cluster (empty = the controller's own),
 * kind, namespace, name. Two Rollouts that call different objects by the same zone name never share a record, and
 * a record is acted on only for the object it names (docs/architecture.md, "A zone is its object").
 */
export function zoneObjectKey(
  backend: Pick<ZoneReadBackend, 'cluster' | 'kind' | 'namespace' | 'vmcluster'>,
): string {
  return `${backend.cluster ?? ''}/${backend.kind ?? defaultZoneKind.kind}/${backend.namespace}/${backend.vmcluster}`;
}

/** A balancer's identity in the canonical order drains take balancers in (vm/read-layer.ts drainLayer). */
export function balancerKey(config: Pick<ReadBalancerConfig, 'ref' | 'cluster'>): string {
  const ref = config.ref;
  return `${config.cluster ?? ''}/${ref.kind}/${ref.namespace}/${ref.name}${ref.kind === 'VMUser' ? '' : `/${ref.key}`}`;
}

/** The host names the operator's read Service of a zone (vmselect of a VMCluster...) is reached by in the cluster. */
export function defaultVmselectHosts(
  vmcluster: string,
  namespace: string,
  kind: ZoneKind = defaultZoneKind,
): string[] {
  const service = `${kind.readServicePrefix}${vmcluster}`;
  return [
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
    `${service}.${namespace}`,
  ];
}

/** The lower-case host name of a URL, or undefined when the text is not an absolute URL. */
function urlHost(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

export function urlBelongsTo(url: string, backend: ZoneReadBackend): boolean {
  const host = urlHost(url);
  return host !== undefined && backend.hosts.includes(host);
}

/** A typed refusal to edit a read balancer: nothing was changed, and retrying will not help. */
export class ReadRoutingError extends CodedError {
  constructor(message: string) {
    super('ReadRoutingRefused', message);
    this.name = 'ReadRoutingError';
  }
}
