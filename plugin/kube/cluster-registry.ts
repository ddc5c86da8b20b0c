// The clusters a zone may live in, registered by the cluster admin as Secrets in the controller's namespace, in
// Argo CD's cluster Secret format (docs/multicluster.md): label `argocd.argoproj.io/secret-type: cluster`, data
// `name`, `server`, `config` (JSON: bearerToken or tlsClientConfig.certData/keyData, tlsClientConfig.caData), and
// optionally `namespaces`. A Rollout names a registered cluster and nothing else: never a server or a credential.
// No exec or cloud-provider auth: the plugin must not run programs chosen by a Secret's content.
//
// The credentials stay in the Secret and in the client built from it: no message here or from a client carries
// them (errors name the cluster and the Secret, never a value).

import { CodedError } from '../goplugin/failure-codes.ts';
import { type ClusterRegistration, clusterConfigSchema } from './cluster-registration.ts';
import { clusterSecretLabel, insecureClusterRisk } from './cluster-secret-text.ts';
import { connectionOfFields, type KubeConnection } from './kube-config.ts';
import { dns1123Label } from './names.ts';
import { KubeError, type KubeObject, type KubeObjects, kubeObjects } from './objects.ts';

export type { ClusterRegistration };
export { clusterSecretLabel };
export const clusterSecretSelector = `${clusterSecretLabel}=cluster`;
/** Set to `direct` on a cluster Secret when the plugin reaches that cluster's pod IPs; default `proxy`. */
export const podAccessAnnotation = 'vmzones.io/pod-access';

const clusterSecretsNamespaceFlag = '--cluster-secrets-namespace';

/** `--cluster-secrets-namespace=NS` in the plugin's args (argo-rollouts-config): where the admin registers zone
 *  clusters, normally the controller's own namespace. Absent: no registry — zones in other clusters are off and
 *  vmzones never reads a Secret list (single-cluster installs keep their least-privilege RBAC). */
export function clusterSecretsNamespace(args: readonly string[]): string | undefined {
  const flag = args.find((arg) => arg.startsWith(`${clusterSecretsNamespaceFlag}=`));
  if (flag === undefined) return undefined;
  const value = flag.slice(flag.indexOf('=') + 1).trim();
  if (!dns1123Label.test(value) || value.length > 63) {
    throw new ClusterRegistryError(
      `${clusterSecretsNamespaceFlag}: ${JSON.stringify(value)} is not a namespace name`,
    );
  }
  return value;
}

/** A cluster name that is not registered, or a registration that cannot be used: a final failure of the step. */
export class ClusterRegistryError extends CodedError {
  constructor(message: string) {
    super('ClusterUnusable', message);
    this.name = 'ClusterRegistryError';
  }
}

function dataText(secret: KubeObject, key: string): string | undefined {
  const data = secret.data;
  if (typeof data !== 'object' || data === null) return undefined;
  const value = (data as Record<string, unknown>)[key];
  return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

/** Reads one cluster Secret; a bad one is a ClusterRegistryError naming the Secret and the field, never a value. */
export function parseClusterSecret(secret: KubeObject): ClusterRegistration {
  const where = `cluster Secret ${secret.metadata.namespace ?? ''}/${secret.metadata.name ?? ''}`;
  const name = dataText(secret, 'name')?.trim();
  const server = dataText(secret, 'server')?.trim();
  const configText = dataText(secret, 'config');
  const problems: string[] = [];
  if (name === undefined || name === '') problems.push('data.name is missing');
  if (server === undefined || !/^https:\/\/[^\s/@]+(\/[^\s@]*)?$/.test(server)) {
    problems.push('data.server must be an https:// URL without user info');
  }
  let config: ClusterRegistration['config'] | undefined;
  if (configText === undefined) {
    problems.push('data.config is missing');
  } else {
    let raw: unknown;
    try {
      raw = JSON.parse(configText);
    } catch {
      // JSON.parse quotes the text around the error: that text may be the token.
      problems.push('data.config is not JSON');
    }
    if (raw !== undefined) {
      const result = clusterConfigSchema.safeParse(raw);
      if (result.success) config = result.data;
      else {
        for (const issue of result.error.issues) {
          const path = issue.path.length === 0 ? '' : `.${issue.path.join('.')}`;
          // The issue's own message only: zod's `input` would hold the value.
          problems.push(`data.config${path}: ${issue.message}`);
        }
      }
    }
  }
  const namespacesText = dataText(secret, 'namespaces');
  const namespaces =
    namespacesText === undefined || namespacesText.trim() === ''
      ? undefined
      : namespacesText
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean);
  const podAccess = secret.metadata.annotations?.[podAccessAnnotation] ?? 'proxy';
  if (podAccess !== 'proxy' && podAccess !== 'direct') {
    problems.push(`annotation ${podAccessAnnotation} must be "proxy" or "direct"`);
  }
  if (problems.length > 0 || config === undefined || name === undefined || server === undefined) {
    throw new ClusterRegistryError(`${where}: ${problems.join('; ')}`);
  }
  return {
    name,
    secret: `${secret.metadata.namespace ?? ''}/${secret.metadata.name ?? ''}`,
    resourceVersion: secret.metadata.resourceVersion ?? '',
    server: server.replace(/\/+$/, ''),
    namespaces,
    podAccess: podAccess as 'proxy' | 'direct',
    config,
  };
}

/** A client configuration for the registered cluster (server, CA, token or client certificate). Never an exec
 *  plugin or a file: the plugin runs no program and reads no path chosen by a Secret's content. */
export function kubeConfigFor(registration: ClusterRegistration): KubeConnection {
  const tls = registration.config.tlsClientConfig;
  const base64 = (data: string | undefined) => (data === undefined ? undefined : data.replace(/\s/g, ''));
  const fields = {
    caData: base64(tls.caData),
    certData: base64(tls.certData),
    keyData: base64(tls.keyData),
    token: registration.config.bearerToken,
    tlsServerName: tls.serverName,
  };
  return connectionOfFields(
    {
      server: registration.server,
      skipTLSVerify: tls.insecure,
      ...Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)),
    },
    `cluster ${registration.name} (Secret ${registration.secret})`,
  );
}

/** Every call's error names the cluster, so that "not ready" or "unreachable" says where. */
function namingCluster(registration: ClusterRegistration, kube: KubeObjects): KubeObjects {
  const cluster = registration.name;
  const wrap = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (err) {
      if (err instanceof KubeError)
        throw new KubeError(err.kind, `cluster ${cluster}: ${err.message}`, err.status);
      throw err;
    }
  };
  return {
    get: (ref) => wrap(() => kube.get(ref)),
    mergePatch: (ref, patch, rv, options) => wrap(() => kube.mergePatch(ref, patch, rv, options)),
    list: (apiVersion, kind, namespace, selector) =>
      wrap(() => kube.list(apiVersion, kind, namespace, selector)),
    create: (object) => wrap(() => kube.create(object)),
    registration,
  };
}

/** The seam every layer above uses: a cluster name (undefined = the controller's own cluster) to its client. */
export interface ClusterClients {
  /** The client of `cluster`; an unregistered name is a ClusterRegistryError naming it and the known ones. */
  client(cluster: string | undefined): Promise<KubeObjects>;
  /** The registration of `cluster` (its pod access and namespaces); undefined for the controller's own. */
  registration(cluster: string | undefined): Promise<ClusterRegistration | undefined>;
  /** The registered clusters' names (the reconciler scans each); bad Secrets are left out and reported. */
  names(): Promise<string[]>;
}

export interface ClusterClientsOptions {
  /** The controller's own cluster, where the cluster Secrets are read. */
  hub: KubeObjects;
  namespace: string;
  /** Builds a client from a registration; default: kubeObjects with `callTimeoutMs`. */
  connect?: (registration: ClusterRegistration) => KubeObjects;
  /** How long one call to a registered cluster may take; default kubeCallTimeoutMs (15 s). */
  callTimeoutMs?: number;
  /** How long a listing of the Secrets is reused; default 10 s. */
  ttlMs?: number;
  now?: () => number;
  /** Told about Secrets that cannot be used (the message names the Secret and the field, never a value). */
  onBadSecret?: (message: string) => void;
  /** Told, each time a client is built for it, about a registration that turns TLS verification off. */
  onInsecure?: (message: string) => void;
}

/** The warning for a registration that turns TLS verification off, if it does. */
export function insecureClusterWarning(registration: ClusterRegistration): string | undefined {
  if (!registration.config.tlsClientConfig.insecure) return undefined;
  return `cluster ${registration.name} (Secret ${registration.secret}): ${insecureClusterRisk}`;
}

/** The clusters registered in `namespace`, re-read at most every `ttlMs`; a client is rebuilt when its Secret
 *  changes (new resourceVersion), so a rotated token is used from the next listing on. */
export function clusterClients(options: ClusterClientsOptions): ClusterClients {
  const ttlMs = options.ttlMs ?? 10_000;
  const now = options.now ?? Date.now;
  const connect =
    options.connect ?? ((r: ClusterRegistration) => kubeObjects(kubeConfigFor(r), options.callTimeoutMs));
  let listed: { at: number; byName: Map<string, ClusterRegistration | ClusterRegistryError> } | undefined;
  const clients = new Map<string, { resourceVersion: string; kube: KubeObjects }>();

  const registrations = async () => {
    if (listed !== undefined && now() - listed.at < ttlMs) return listed.byName;
    const secrets = await options.hub.list('v1', 'Secret', options.namespace, clusterSecretSelector);
    const byName = new Map<string, ClusterRegistration | ClusterRegistryError>();
    for (const secret of secrets) {
      try {
        const registration = parseClusterSecret(secret);
        const earlier = byName.get(registration.name);
        if (earlier !== undefined) {
          const other =
            earlier instanceof ClusterRegistryError ? 'another Secret' : `Secret ${earlier.secret}`;
          byName.set(
            registration.name,
            new ClusterRegistryError(
              `cluster ${registration.name} is registered twice (Secret ${registration.secret} and ${other}): ` +
                'vmzones will not guess which one is meant',
            ),
          );
        } else byName.set(registration.name, registration);
      } catch (err) {
        if (!(err instanceof ClusterRegistryError)) throw err;
        options.onBadSecret?.(err.message);
        const name = dataText(secret, 'name')?.trim();
        if (name) byName.set(name, err);
      }
    }
    listed = { at: now(), byName };
    return byName;
  };

  const registration = async (cluster: string | undefined) => {
    if (cluster === undefined) return undefined;
    const byName = await registrations();
    const found = byName.get(cluster);
    if (found === undefined) {
      const known = [...byName.keys()].sort();
      throw new ClusterRegistryError(
        `cluster ${JSON.stringify(cluster)} is not registered: no Secret labelled ${clusterSecretSelector} in ` +
          `namespace ${options.namespace} has data.name ${cluster} (registered: ${known.length === 0 ? 'none' : known.join(', ')})`,
      );
    }
    if (found instanceof ClusterRegistryError) throw found;
    return found;
  };

  return {
    registration,
    async client(cluster) {
      const found = await registration(cluster);
      if (found === undefined) return options.hub;
      const cached = clients.get(found.name);
      if (cached !== undefined && cached.resourceVersion === found.resourceVersion) return cached.kube;
      const kube = namingCluster(found, connect(found));
      const insecure = insecureClusterWarning(found);
      if (insecure !== undefined) options.onInsecure?.(insecure);
      clients.set(found.name, { resourceVersion: found.resourceVersion, kube });
      return kube;
    },
    async names() {
      const byName = await registrations();
      return [...byName.entries()]
        .filter(([, r]) => !(r instanceof ClusterRegistryError))
        .map(([name]) => name)
        .sort();
    },
  };
}

const noRegistry = (cluster: string) =>
  new ClusterRegistryError(
    `cluster ${JSON.stringify(cluster)} is not registered: zones in other clusters need the plugin's ` +
      `${clusterSecretsNamespaceFlag}=NS argument in argo-rollouts-config (docs/multicluster.md)`,
  );

/** The controller's own cluster only: what single-cluster installs (no registry flag) and tests get. */
export function hubOnly(hub: KubeObjects): ClusterClients {
  return {
    async client(cluster) {
      if (cluster !== undefined) {
        throw noRegistry(cluster);
      }
      return hub;
    },
    async registration(cluster) {
      if (cluster !== undefined) {
        throw noRegistry(cluster);
      }
      return undefined;
    },
    async names() {
      return [];
    },
  };
}

/** Throws when the registration limits the namespaces vmzones may use there and `namespace` is not one of them. */
export function requireClusterNamespace(
  registration: ClusterRegistration | undefined,
  namespace: string,
  what: string,
): void {
  if (registration?.namespaces === undefined || registration.namespaces.includes(namespace)) return;
  throw new ClusterRegistryError(
    `${what} is in namespace ${namespace} of cluster ${registration.name}, but its registration (Secret ` +
      `${registration.secret}, data.namespaces) allows only ${registration.namespaces.join(', ')}`,
  );
}

/** The registry the plugin's args ask for: the cluster Secrets of `--cluster-secrets-namespace`, or none. */
export function clusterClientsFromArgs(
  hub: KubeObjects,
  args: readonly string[],
  onBadSecret?: (message: string) => void,
  onInsecure?: (message: string) => void,
): ClusterClients {
  const namespace = clusterSecretsNamespace(args);
  if (namespace === undefined) return hubOnly(hub);
  return clusterClients({
    hub,
    namespace,
    ...(onBadSecret === undefined ? {} : { onBadSecret }),
    ...(onInsecure === undefined ? {} : { onInsecure }),
  });
}
