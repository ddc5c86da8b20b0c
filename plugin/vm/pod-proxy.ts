// Scraping a pod of a registered cluster without reaching its pod network: through that cluster's API server, at
// the pod `proxy` subresource (GET /api/v1/namespaces/NS/pods/SCHEME:NAME:PORT/proxy/metrics, RBAC `get` on
// `pods/proxy`; docs/multicluster.md). The request carries the cluster's credential (bearer token or client
// certificate) and trusts its CA; a credential of the pod itself cannot be passed through (the Authorization
// header is the API server's).

import type { ClusterRegistration } from '../kube/cluster-registry.ts';
import type { ScrapeError, ScrapeTarget } from './scrape.ts';
import type { ScrapeAccess } from './scrape-credentials.ts';

function pem(base64: string | undefined): string | undefined {
  return base64 === undefined ? undefined : Buffer.from(base64.replace(/\s/g, ''), 'base64').toString('utf8');
}

/** The port of a `host:port` address (IPv6 hosts in brackets). */
function portOf(address: string): string {
  return address.slice(address.lastIndexOf(':') + 1);
}

export function podProxyTarget(
  cluster: ClusterRegistration,
  pod: { namespace: string; name: string; address: string },
  scheme: 'http' | 'https',
  path: string,
): ScrapeTarget {
  const tls = cluster.config.tlsClientConfig;
  const ca = pem(tls.caData);
  const cert = pem(tls.certData);
  const key = pem(tls.keyData);
  const podPart = `${scheme}:${encodeURIComponent(pod.name)}:${portOf(pod.address)}`;
  return {
    url: `${cluster.server}/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${podPart}/proxy${path}`,
    tls: {
      ...(ca === undefined ? {} : { ca }),
      ...(cert === undefined ? {} : { cert }),
      ...(key === undefined ? {} : { key }),
      ...(tls.insecure ? { insecureSkipVerify: true } : {}),
      ...(tls.serverName === undefined ? {} : { serverName: tls.serverName }),
    },
    ...(cluster.config.bearerToken === undefined
      ? {}
      : { auth: { kind: 'bearer', token: cluster.config.bearerToken } }),
  };
}

/**
 * What a failed scrape through the pod proxy means when the API server itself refused it (its answer is a
 * Kubernetes `Status`, not the pod's page): the registered credential lacks `get` on `pods/proxy` (403) or is not
 * accepted (401). Undefined for any other failure, including a 401/403 of the pod passed through.
 */
export function podProxyRefusal(
  cluster: Pick<ClusterRegistration, 'name' | 'secret'>,
  namespace: string,
  status: number | undefined,
  excerpt: string,
): string | undefined {
  if (!/"kind":\s*"Status"/.test(excerpt)) return undefined;
  if (status === 403) {
    return (
      `cluster ${cluster.name}'s API server refused the pod proxy (HTTP 403): the credential of Secret ` +
      `${cluster.secret} needs get on pods/proxy in namespace ${namespace} there ` +
      '(manifests/multicluster/zone-cluster-rbac.yaml)'
    );
  }
  if (status === 401) {
    return `cluster ${cluster.name}'s API server did not accept the credential of Secret ${cluster.secret} (HTTP 401)`;
  }
  return undefined;
}

/**
 * Where to scrape a pod: at its address, with the pod's own scrape access, or, when `cluster` is a registered
 * cluster in pod access `proxy`, through that cluster's API server (the pod's own credential cannot pass).
 */
export function podScrapeTarget(
  pod: { namespace: string; name: string; address: string },
  access: ScrapeAccess,
  cluster: ClusterRegistration | undefined,
  path = '/metrics',
): ScrapeTarget {
  if (cluster?.podAccess === 'proxy') return podProxyTarget(cluster, pod, access.scheme, path);
  return {
    url: `${access.scheme}://${pod.address}${path}`,
    ...(access.tls === undefined ? {} : { tls: access.tls }),
    ...(access.auth === undefined ? {} : { auth: access.auth }),
  };
}

/** A failed scrape's message, saying first what the API server refused when it went through the pod proxy. */
export function podScrapeFailure(
  cluster: ClusterRegistration | undefined,
  namespace: string,
  error: ScrapeError,
): string {
  const refused =
    cluster?.podAccess === 'proxy'
      ? podProxyRefusal(cluster, namespace, error.status, error.message)
      : undefined;
  return refused === undefined ? error.message : `${refused}; ${error.message}`;
}
