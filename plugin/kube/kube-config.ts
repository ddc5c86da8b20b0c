// Where the API server is and how to authenticate to it: a @kubernetes/client-node KubeConfig (the in-cluster service
// account, a kubeconfig file at one of its contexts, or a registered cluster's Secret), with a name for messages.
// The library reads every kubeconfig form kubectl users have (client certificates, tokens, exec credential plugins,
// OIDC auth-provider, basic auth, proxy-url, tls-server-name) and refreshes their credentials; plugin/kube/kube-client.ts
// sends the requests. What vmzones adds: kubectl's rotating `tokenFile` (the library reads a token file once), the
// KUBECONFIG merge rules kubectl follows, the OIDC refresh request (plugin/kube/oidc-refresh.ts: the library's fails),
// plain HTTP to loopback (kubectl proxy), and errors that name the file and context but no credential value.

import { existsSync, readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
// Deep import: the package's index evaluates every generated API client; vmzones needs the configuration alone.
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { parse } from 'yaml';
import { CodedError } from '../goplugin/failure-codes.ts';
import { refreshOidcThroughIdp } from './oidc-refresh.ts';

/** One cluster and one user, as the library's KubeConfig at its current context. */
export interface KubeConnection {
  readonly config: KubeConfig;
  /** `https://host:port`, possibly with a path prefix. */
  readonly server: string;
  /** The context's namespace (the CLI's default namespace). */
  readonly namespace?: string;
  /** Where it came from, for messages: `in-cluster`, a kubeconfig path and context, a cluster Secret. */
  readonly source: string;
}

export class KubeConfigError extends CodedError {
  constructor(message: string) {
    super('PluginStartFailed', message);
    this.name = 'KubeConfigError';
  }
}

function connectionOf(config: KubeConfig, source: string): KubeConnection {
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new KubeConfigError(`${source}: its context names no known cluster`);
  // Plain HTTP: kubectl's own `kubectl proxy` serves on loopback (it adds the credential itself), so a loopback
  // server is taken as kubectl takes it. Elsewhere a request (and any credential in it) would cross the network in
  // clear text: refused unless the kubeconfig says insecure-skip-tls-verify (client-node's rule, kept as the opt-in).
  if (isPlainHttp(cluster.server) && !isLoopbackServer(cluster.server) && !cluster.skipTLSVerify)
    throw new KubeConfigError(
      `${source}: server ${cluster.server} is plain HTTP and not on loopback (kubectl proxy's address): ` +
        'use https, or set insecure-skip-tls-verify to send requests in clear text',
    );
  const namespace = config.getContextObject(config.getCurrentContext())?.namespace?.trim();
  return {
    config,
    server: cluster.server.replace(/\/+$/, ''),
    source,
    ...(namespace ? { namespace } : {}),
  };
}

export const isPlainHttp = (server: string) => /^http:\/\//i.test(server);

/** A server URL whose host is this machine: `localhost`, 127.0.0.0/8 or ::1 (where `kubectl proxy` listens). */
export function isLoopbackServer(server: string): boolean {
  let host: string;
  try {
    host = new URL(server).hostname;
  } catch {
    return false;
  }
  return host === 'localhost' || host === '[::1]' || (isIPv4(host) && host.startsWith('127.'));
}

/**
 * The pod's service account (the library's in-cluster configuration: its token file is read again as kubelet rotates
 * it). `root` prefixes /var/run/secrets/… (tests give a directory of their own).
 */
export function inClusterConnection(root = ''): KubeConnection {
  if (!process.env.KUBERNETES_SERVICE_HOST || !process.env.KUBERNETES_SERVICE_PORT)
    throw new KubeConfigError('in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set');
  const config = new KubeConfig();
  config.loadFromCluster(root);
  return connectionOf(config, 'in-cluster');
}

/** Reads one kubeconfig file into the library's KubeConfig; messages name the file, never its text (the YAML parser
 *  quotes the text around a syntax error, which may be a token). */
function loadFile(path: string): KubeConfig {
  const config = new KubeConfig();
  try {
    config.loadFromFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const what =
      code !== undefined
        ? `read (${code})`
        : (err as Error).name === 'YAMLException'
          ? 'read as YAML'
          : `used: ${(err as Error).message}`;
    throw new KubeConfigError(`kubeconfig ${path}: cannot be ${what}`);
  }
  followTokenFiles(config, path);
  describeExecRequests(config);
  return config;
}

/** kubectl tells an exec credential plugin what it asks for in KUBERNETES_EXEC_INFO (the ExecCredential's apiVersion,
 *  non-interactive); plugins that need it exit without it. The library runs the plugin with the user's `env` only. */
function describeExecRequests(config: KubeConfig): void {
  for (const user of config.getUsers()) {
    const exec = user.exec as { apiVersion?: unknown; env?: { name: string; value: string }[] | null } | null;
    if (exec === null || exec === undefined) continue;
    const info = {
      apiVersion: typeof exec.apiVersion === 'string' ? exec.apiVersion : 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    };
    exec.env = [
      ...(exec.env ?? []).filter((e) => e.name !== 'KUBERNETES_EXEC_INFO'),
      { name: 'KUBERNETES_EXEC_INFO', value: JSON.stringify(info) },
    ];
  }
}

/**
 * kubectl reads a user's `tokenFile` again as it changes (a projected token rotates); the library reads `token-file`
 * once at load and ignores `tokenFile`. Both become the library's rotating token-file authenticator (re-read every
 * minute, as client-go does), relative to the file that names them.
 */
function followTokenFiles(config: KubeConfig, path: string): void {
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch {
    return; // loadFromFile read it: a second read failing leaves the tokens as the library read them
  }
  const users = (raw as { users?: unknown } | null)?.users;
  if (!Array.isArray(users)) return;
  for (const entry of users as { name?: unknown; user?: Record<string, unknown> | null }[]) {
    const file = entry.user?.tokenFile ?? entry.user?.['token-file'];
    if (typeof entry.name !== 'string' || typeof file !== 'string' || file === '') continue;
    const user = config.getUser(entry.name);
    // kubectl: a token given inline wins over a token file.
    if (user === null || entry.user?.token !== undefined) continue;
    Object.assign(user, {
      token: undefined,
      authProvider: {
        name: 'tokenFile',
        config: { tokenFile: isAbsolute(file) ? file : join(dirname(path), file) },
      },
    });
  }
}

/**
 * The connection of a kubeconfig's context (`context`, else its current context). `paths` are merged as kubectl
 * merges KUBECONFIG: the first file that names a cluster, user or context wins, and the first current-context set.
 * Relative file paths are relative to the file that names them (the library's rule too).
 */
export function kubeconfigConnection(paths: readonly string[], context?: string): KubeConnection {
  if (paths.length === 0)
    throw new KubeConfigError('no kubeconfig: KUBECONFIG names no file and ~/.kube/config does not exist');
  const where = paths.join(':');
  const config = new KubeConfig();
  const files = paths.map(loadFile);
  config.loadFromOptions({
    clusters: firstOfEach(files.flatMap((f) => f.getClusters())),
    users: firstOfEach(files.flatMap((f) => f.getUsers())),
    contexts: firstOfEach(files.flatMap((f) => f.getContexts())),
    currentContext: context ?? files.map((f) => f.getCurrentContext()).find((c) => c) ?? '',
  });
  refreshOidcThroughIdp(config);
  const contextName = config.getCurrentContext();
  if (!contextName) throw new KubeConfigError(`kubeconfig ${where}: no current-context set`);
  const ctx = config.getContextObject(contextName);
  if (ctx === null) throw new KubeConfigError(`kubeconfig ${where}: no context named ${contextName}`);
  if (config.getCluster(ctx.cluster) === null)
    throw new KubeConfigError(
      `kubeconfig ${where}: context ${contextName} names no known cluster (${ctx.cluster})`,
    );
  return connectionOf(config, `kubeconfig ${where}, context ${contextName}`);
}

function firstOfEach<T extends { name: string }>(entries: readonly T[]): T[] {
  const seen = new Set<string>();
  return entries.filter((e) => !seen.has(e.name) && seen.add(e.name));
}

/** The kubeconfig files kubectl would read: KUBECONFIG's list (a file it names that is missing is an error when
 *  read), else ~/.kube/config if it exists. */
export function defaultKubeconfigPaths(env = process.env): string[] {
  const listed = (env.KUBECONFIG ?? '').split(':').filter((p) => p !== '');
  if (listed.length > 0) return listed;
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  return existsSync(home) ? [home] : [];
}

/** KUBECONFIG / ~/.kube/config when there is one (its current context), else the in-cluster service account. */
export function loadKubeConnection(): KubeConnection {
  const paths = defaultKubeconfigPaths();
  return paths.length > 0 ? kubeconfigConnection(paths) : inClusterConnection();
}

/** A connection of one cluster and user given field by field (a registered cluster's Secret). */
export function connectionOfFields(
  fields: {
    server: string;
    skipTLSVerify: boolean;
    tlsServerName?: string;
    caData?: string;
    token?: string;
    certData?: string;
    keyData?: string;
  },
  source: string,
): KubeConnection {
  const config = new KubeConfig();
  const { token, certData, keyData, ...cluster } = fields;
  config.loadFromClusterAndUser(
    { name: 'cluster', ...cluster },
    {
      name: 'user',
      ...(token === undefined ? {} : { token }),
      ...(certData === undefined ? {} : { certData }),
      ...(keyData === undefined ? {} : { keyData }),
    },
  );
  return connectionOf(config, source);
}
