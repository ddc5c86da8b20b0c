// Argo CD in the sandbox (option `argocd`): Redis, argocd-repo-server, argocd-application-controller and
// argocd-server (insecure, loopback) from the one multi-call binary test/env/build.ts builds, plus a Git server on
// loopback (test/sandbox/git-server.ts) holding the app repositories. Argo CD reaches the sandbox's API server as
// its in-cluster destination https://kubernetes.default.svc: ARGOCD_FAKE_IN_CLUSTER=true makes every component
// read that cluster's config from KUBECONFIG (Argo CD's own local-development mode, docs/gitops.md).

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { type BuiltBinaries, moduleDir } from '../env/build.ts';
import { versions } from '../env/versions.ts';
import type { Kubectl } from './kubectl.ts';
import { freePort } from './ports.ts';
import { type DaemonRecord, type DaemonSpec, StartError, waitFor } from './processes.ts';

export const argocdNamespace = 'argocd';
export const argocdAdmin = { username: 'admin', password: 'sandbox-admin' } as const;

export interface ArgoCdState {
  version: string;
  /** argocd-server's HTTP API and UI (insecure, 127.0.0.1). */
  url: string;
  namespace: string;
  /** The Git server's base URL: a bare repository <gitRoot>/<name>.git is served at <gitUrl>/<name>.git. */
  gitUrl: string;
  gitRoot: string;
  redis: string;
}

export interface ArgoCdContext {
  stateDir: string;
  logDir: string;
  kubeconfig: string;
  kubectl: Kubectl;
  binaries: BuiltBinaries;
  /** Starts a daemon and records it in the sandbox state (teardown stops it). */
  daemon: (spec: DaemonSpec) => DaemonRecord;
  /** The folder on PATH for the repo-server (kustomize, kubectl). */
  binDir: string;
  repoRoot: string;
}

/** The Argo CD module's own source (CRDs, resource customizations), from the Go module cache. */
export function argocdModuleDir(): string {
  return moduleDir('github.com/argoproj/argo-cd/v3', versions.argoCd, 'argocd');
}

function labelled(name: string): object {
  return { name, namespace: argocdNamespace, labels: { 'app.kubernetes.io/part-of': 'argocd' } };
}

/** The VictoriaMetrics health checks users of Argo CD < 3.5 install (examples/gitops/argocd/argocd-cm.yaml). */
export function vmHealthCustomizations(repoRoot: string): Record<string, string> {
  const doc = parse(
    readFileSync(join(repoRoot, 'examples', 'gitops', 'argocd', 'argocd-cm.yaml'), 'utf8'),
  ) as {
    data?: Record<string, string>;
  };
  if (!doc.data || Object.keys(doc.data).length === 0) {
    throw new StartError('argocd', 'examples/gitops/argocd/argocd-cm.yaml holds no health customizations');
  }
  return doc.data;
}

function tcpOpen(port: number): Promise<true | undefined> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(undefined));
  });
}

async function httpOk(url: string): Promise<true | undefined> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
  return response.ok ? true : undefined;
}

export async function startArgoCd(ctx: ArgoCdContext): Promise<ArgoCdState> {
  const redisServer = ctx.binaries.redisServer;
  if (!redisServer) {
    throw new StartError(
      'redis',
      'redis-server is not installed (Argo CD needs it): run "apt-get install redis-server" as root, or "npm run env:build" as root',
    );
  }
  const { argocd } = ctx.binaries;
  const dir = join(ctx.stateDir, 'argocd');
  // Each component gets private folders: the repo-server clones into TMPDIR, git reads HOME.
  for (const sub of ['redis', 'tmp', 'home', 'tls', 'ssh', 'gpg', 'static', 'git']) {
    mkdirSync(join(dir, sub), { recursive: true });
  }
  const log = (name: string) => join(ctx.logDir, `${name}.log`);

  const redisPort = await freePort();
  const redis = ctx.daemon({
    name: 'redis',
    command: redisServer,
    args: [
      '--bind',
      '127.0.0.1',
      '--port',
      String(redisPort),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      join(dir, 'redis'),
    ],
    log: log('redis'),
    ports: [redisPort],
  });
  await waitFor(() => tcpOpen(redisPort), {
    part: 'redis',
    log: redis.log,
    pid: redis.pid,
    timeoutMs: 15_000,
  });

  const gitPort = await freePort();
  const gitRoot = join(dir, 'git');
  const git = ctx.daemon({
    name: 'git-server',
    command: process.execPath,
    args: [join(ctx.repoRoot, 'test', 'sandbox', 'git-server.ts'), `--root=${gitRoot}`, `--port=${gitPort}`],
    log: log('git-server'),
    ports: [gitPort],
  });
  const gitUrl = `http://127.0.0.1:${gitPort}`;
  await waitFor(() => httpOk(`${gitUrl}/health`), {
    part: 'git-server',
    log: git.log,
    pid: git.pid,
    timeoutMs: 15_000,
  });

  const crdDir = join(argocdModuleDir(), 'manifests', 'crds');
  await ctx.kubectl.applyFiles(
    readdirSync(crdDir)
      .filter((f) => f.endsWith('-crd.yaml'))
      .map((f) => join(crdDir, f)),
  );
  const passwordHash = execFileSync(argocd, ['account', 'bcrypt', '--password', argocdAdmin.password], {
    env: { ...process.env, ARGOCD_BINARY_NAME: 'argocd', HOME: join(dir, 'home') },
    encoding: 'utf8',
  }).trim();
  await ctx.kubectl.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: argocdNamespace } }]);
  await ctx.kubectl.apply([
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: labelled('argocd-cm'),
      data: {
        ...vmHealthCustomizations(ctx.repoRoot),
        // No Dex, no status badge; the UI's exec and the like stay off.
        'admin.enabled': 'true',
      },
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: labelled('argocd-rbac-cm'), data: {} },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: labelled('argocd-cmd-params-cm'), data: {} },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: labelled('argocd-secret'),
      type: 'Opaque',
      stringData: {
        'admin.password': passwordHash,
        'admin.passwordMtime': new Date().toISOString(),
        'server.secretkey': randomBytes(32).toString('base64'),
      },
    },
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AppProject',
      metadata: { name: 'default', namespace: argocdNamespace },
      spec: {
        sourceRepos: ['*'],
        destinations: [{ server: '*', namespace: '*' }],
        clusterResourceWhitelist: [{ group: '*', kind: '*' }],
      },
    },
  ]);

  const env = {
    ...process.env,
    PATH: `${ctx.binDir}:${process.env.PATH ?? ''}`,
    HOME: join(dir, 'home'),
    TMPDIR: join(dir, 'tmp'),
    KUBECONFIG: ctx.kubeconfig,
    ARGOCD_FAKE_IN_CLUSTER: 'true',
    ARGOCD_GPG_ENABLED: 'false',
    ARGOCD_TLS_DATA_PATH: join(dir, 'tls'),
    ARGOCD_SSH_DATA_PATH: join(dir, 'ssh'),
    ARGOCD_GNUPGHOME: join(dir, 'gpg'),
    // Poll Git and re-compare every 10 s (default 3 min): the tests push and wait. Also the repo-server's
    // revision cache expiry (it defaults to the same variable).
    ARGOCD_RECONCILIATION_TIMEOUT: '10s',
  };
  const common = ['--loglevel=info', '--logformat=text', `--redis=127.0.0.1:${redisPort}`];
  const kube = [`--kubeconfig=${ctx.kubeconfig}`, `--namespace=${argocdNamespace}`];

  const repoPort = await freePort();
  const repoMetrics = await freePort();
  const repo = ctx.daemon({
    name: 'argocd-repo-server',
    command: argocd,
    args: [
      ...common,
      '--address=127.0.0.1',
      `--port=${repoPort}`,
      '--metrics-address=127.0.0.1',
      `--metrics-port=${repoMetrics}`,
      '--disable-tls',
    ],
    env: { ...env, ARGOCD_BINARY_NAME: 'argocd-repo-server' },
    cwd: dir,
    log: log('argocd-repo-server'),
    ports: [repoPort, repoMetrics],
  });
  const repoServer = [`--repo-server=127.0.0.1:${repoPort}`, '--repo-server-plaintext'];

  const controllerMetrics = await freePort();
  const controller = ctx.daemon({
    name: 'argocd-application-controller',
    command: argocd,
    args: [...common, ...kube, ...repoServer, `--metrics-port=${controllerMetrics}`, '--app-resync=10'],
    env: { ...env, ARGOCD_BINARY_NAME: 'argocd-application-controller' },
    cwd: dir,
    log: log('argocd-application-controller'),
    ports: [controllerMetrics],
  });

  const serverPort = await freePort();
  const serverMetrics = await freePort();
  const server = ctx.daemon({
    name: 'argocd-server',
    command: argocd,
    args: [
      ...common,
      ...kube,
      ...repoServer,
      '--insecure',
      '--address=127.0.0.1',
      `--port=${serverPort}`,
      '--metrics-address=127.0.0.1',
      `--metrics-port=${serverMetrics}`,
      `--staticassets=${join(dir, 'static')}`,
      '--dex-server=http://127.0.0.1:1',
    ],
    env: { ...env, ARGOCD_BINARY_NAME: 'argocd-server' },
    cwd: dir,
    log: log('argocd-server'),
    ports: [serverPort, serverMetrics],
  });

  await waitFor(() => httpOk(`http://127.0.0.1:${repoMetrics}/healthz`), {
    part: 'argocd-repo-server',
    log: repo.log,
    pid: repo.pid,
    timeoutMs: 60_000,
  });
  await waitFor(() => httpOk(`http://127.0.0.1:${controllerMetrics}/healthz`), {
    part: 'argocd-application-controller',
    log: controller.log,
    pid: controller.pid,
    timeoutMs: 60_000,
  });
  const url = `http://127.0.0.1:${serverPort}`;
  await waitFor(() => httpOk(`${url}/healthz`), {
    part: 'argocd-server',
    log: server.log,
    pid: server.pid,
    timeoutMs: 60_000,
  });
  return {
    version: versions.argoCd,
    url,
    namespace: argocdNamespace,
    gitUrl,
    gitRoot,
    redis: `127.0.0.1:${redisPort}`,
  };
}
