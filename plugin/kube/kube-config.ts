// Where the API server is and how to authenticate to it, for the project's own client (plugin/kube/kube-client.ts):
// the in-cluster service account, or a kubeconfig file (KUBECONFIG, else ~/.kube/config) at its current context.
// Only what the kubeconfig format says is used: TLS is verified unless the cluster entry says
// `insecure-skip-tls-verify: true`. What this client does not support (basic auth, auth-provider, proxy-url) is
// refused by name instead of being ignored: a kubeconfig relying on it would otherwise connect without it.
// No credential value is ever part of an error message here (file paths and field names only).

import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { CodedError } from '../goplugin/failure-codes.ts';

/** An exec credential plugin (kubeconfig `users[].user.exec`), e.g. for EKS or GKE users of the CLI. */
export interface ExecConfig {
  command: string;
  args: readonly string[];
  env: readonly { name: string; value: string }[];
  apiVersion: string;
}

/** One cluster and one user: PEM material as base64 (`*Data`, as in a kubeconfig) or as a file path. */
export interface KubeConnection {
  /** `https://host:port`, possibly with a path prefix. */
  server: string;
  caData?: string;
  caFile?: string;
  certData?: string;
  certFile?: string;
  keyData?: string;
  keyFile?: string;
  token?: string;
  /** Re-read as the file changes (a projected service account token rotates). */
  tokenFile?: string;
  exec?: ExecConfig;
  /** Only when the kubeconfig (or a cluster registration) says `insecure-skip-tls-verify` / `insecure`. */
  skipTLSVerify: boolean;
  tlsServerName?: string;
  /** The context's namespace (the CLI's default namespace). */
  namespace?: string;
  /** Where it came from, for messages: `in-cluster`, a kubeconfig path and context, a cluster Secret. */
  source: string;
}

export class KubeConfigError extends CodedError {
  constructor(message: string) {
    super('PluginStartFailed', message);
    this.name = 'KubeConfigError';
  }
}

const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The pod's service account: token and CA files (the token re-read as kubelet rotates it). */
export function inClusterConnection(dir = serviceAccountDir, env = process.env): KubeConnection {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new KubeConfigError('in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set');
  const namespaceFile = join(dir, 'namespace');
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    caFile: join(dir, 'ca.crt'),
    tokenFile: join(dir, 'token'),
    skipTLSVerify: false,
    ...(existsSync(namespaceFile) ? { namespace: readFileSync(namespaceFile, 'utf8').trim() } : {}),
    source: 'in-cluster',
  };
}

const kubeconfigSchema = z.object({
  'current-context': z.string().nullish(),
  clusters: z
    .array(
      z.object({
        name: z.string(),
        cluster: z.looseObject({
          server: z.string(),
          'certificate-authority': z.string().optional(),
          'certificate-authority-data': z.string().optional(),
          'insecure-skip-tls-verify': z.boolean().optional(),
          'tls-server-name': z.string().optional(),
          'proxy-url': z.string().optional(),
        }),
      }),
    )
    .nullish(),
  users: z
    .array(
      z.object({
        name: z.string(),
        user: z
          .looseObject({
            'client-certificate': z.string().optional(),
            'client-certificate-data': z.string().optional(),
            'client-key': z.string().optional(),
            'client-key-data': z.string().optional(),
            token: z.string().optional(),
            tokenFile: z.string().optional(),
            username: z.unknown().optional(),
            password: z.unknown().optional(),
            'auth-provider': z.unknown().optional(),
            exec: z
              .looseObject({
                command: z.string(),
                args: z.array(z.string()).nullish(),
                env: z.array(z.object({ name: z.string(), value: z.string() })).nullish(),
                apiVersion: z.string().optional(),
              })
              .optional(),
          })
          .nullish(),
      }),
    )
    .nullish(),
  contexts: z
    .array(
      z.object({
        name: z.string(),
        context: z.looseObject({
          cluster: z.string(),
          user: z.string().optional(),
          namespace: z.string().optional(),
        }),
      }),
    )
    .nullish(),
});
type KubeconfigFile = z.infer<typeof kubeconfigSchema>;

function readKubeconfig(path: string): KubeconfigFile {
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (err) {
    // The parser may quote the text around a syntax error: that text may be a token.
    const code = (err as NodeJS.ErrnoException).code;
    throw new KubeConfigError(
      `kubeconfig ${path}: cannot be ${code === undefined ? 'read as YAML' : `read (${code})`}`,
    );
  }
  const result = kubeconfigSchema.safeParse(raw ?? {});
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new KubeConfigError(`kubeconfig ${path}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? ''}`);
  }
  return result.data;
}

/**
 * The connection of a kubeconfig's context (`context`, else its current context). `paths` are merged as kubectl
 * merges KUBECONFIG: the first file that names a cluster, user or context wins, and the first current-context set.
 * Relative file paths are relative to the file that names them.
 */
export function kubeconfigConnection(paths: readonly string[], context?: string): KubeConnection {
  if (paths.length === 0)
    throw new KubeConfigError('no kubeconfig: KUBECONFIG names no file and ~/.kube/config does not exist');
  const files = paths.map((path) => ({ path, config: readKubeconfig(path) }));
  const find = <T extends { name: string }>(
    pick: (c: KubeconfigFile) => readonly T[] | null | undefined,
    name: string,
  ) => {
    for (const { path, config } of files) {
      const found = pick(config)?.find((entry) => entry.name === name);
      if (found !== undefined) return { path, entry: found };
    }
    return undefined;
  };
  const where = paths.join(':');
  const contextName = context ?? files.find((f) => f.config['current-context'])?.config['current-context'];
  if (!contextName) throw new KubeConfigError(`kubeconfig ${where}: no current-context set`);
  const ctx = find((c) => c.contexts, contextName)?.entry.context;
  if (ctx === undefined) throw new KubeConfigError(`kubeconfig ${where}: no context named ${contextName}`);
  const clusterFound = find((c) => c.clusters, ctx.cluster);
  if (clusterFound === undefined)
    throw new KubeConfigError(
      `kubeconfig ${where}: context ${contextName} names no known cluster (${ctx.cluster})`,
    );
  const userFound = ctx.user === undefined ? undefined : find((c) => c.users, ctx.user);
  const cluster = clusterFound.entry.cluster;
  const user = userFound?.entry.user ?? {};
  const source = `kubeconfig ${where}, context ${contextName}`;
  const unsupported = [
    ...(cluster['proxy-url'] !== undefined ? ['clusters[].cluster.proxy-url'] : []),
    ...(user.username !== undefined || user.password !== undefined ? ['basic auth (username/password)'] : []),
    ...(user['auth-provider'] !== undefined ? ['users[].user.auth-provider (use an exec plugin)'] : []),
  ];
  if (unsupported.length > 0)
    throw new KubeConfigError(`${source}: not supported by vmzones: ${unsupported.join(', ')}`);
  const relativeTo = (base: string, file: string | undefined) =>
    file === undefined ? undefined : isAbsolute(file) ? file : join(dirname(base), file);
  const userPath = userFound?.path ?? clusterFound.path;
  const fields: Partial<KubeConnection> = {
    caData: cluster['certificate-authority-data'],
    caFile: relativeTo(clusterFound.path, cluster['certificate-authority']),
    tlsServerName: cluster['tls-server-name'],
    certData: user['client-certificate-data'],
    certFile: relativeTo(userPath, user['client-certificate']),
    keyData: user['client-key-data'],
    keyFile: relativeTo(userPath, user['client-key']),
    token: user.token,
    tokenFile: relativeTo(userPath, user.tokenFile),
    namespace: ctx.namespace,
    ...(user.exec === undefined
      ? {}
      : {
          exec: {
            command: user.exec.command,
            args: user.exec.args ?? [],
            env: user.exec.env ?? [],
            apiVersion: user.exec.apiVersion ?? 'client.authentication.k8s.io/v1',
          },
        }),
  };
  const connection: KubeConnection = {
    server: cluster.server.replace(/\/+$/, ''),
    skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    source,
  };
  for (const [key, value] of Object.entries(fields))
    if (value !== undefined && value !== '') Object.assign(connection, { [key]: value });
  return connection;
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
