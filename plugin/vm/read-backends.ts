// Which read backend belongs to which zone: a zone's vmselect is its VMCluster (for VMUser CRD references) or a
// URL whose host is the vmselect Service of that VMCluster (for static URLs and raw vmauth configs).

/** One zone as the read balancer sees it. */
export interface ZoneReadBackend {
  /** The zone's name in the spec document; also the key of drain records. */
  zone: string;
  /** The zone's VMCluster. */
  namespace: string;
  vmcluster: string;
  /** URL host names (no port) that reach this zone's vmselect, lower case. */
  hosts: string[];
}

/** The host names the operator's vmselect Service of a VMCluster is reached by inside the cluster. */
export function defaultVmselectHosts(vmcluster: string, namespace: string): string[] {
  const service = `vmselect-${vmcluster}`;
  return [
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
    `${service}.${namespace}`,
  ];
}

/** The lower-case host name of a URL, or undefined when the text is not an absolute URL. */
export function urlHost(url: string): string | undefined {
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
export class ReadRoutingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReadRoutingError';
  }
}
