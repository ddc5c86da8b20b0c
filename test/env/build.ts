// Builds every binary the sandbox runs into ${VMZONES_CACHE:-~/.cache/vmzones}/bin, one file per
// binary named by a hash of what determines it (its Go module's go.mod + go.sum, package,
// linker flags, local sources), so a fresh clone anywhere reuses the cache and a version bump
// rebuilds only what changed. Run directly: `node test/env/build.ts [--except NAME ...]`.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { versions } from './versions.ts';

export const envDir = dirname(fileURLToPath(import.meta.url));

/** Set by npm test for its test files: a test file never builds a binary, it fails naming the missing ones. */
export const noBuildVariable = 'VMZONES_TEST_NO_BUILD';

function missingFromEnv(): 'build' | 'fail' {
  return process.env[noBuildVariable] === '1' ? 'fail' : 'build';
}

export function cacheDir(): string {
  return process.env.VMZONES_CACHE ?? join(homedir(), '.cache', 'vmzones');
}

export type BinaryName =
  | 'etcd'
  | 'kube-apiserver'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'kubectl'
  | 'rollouts-controller'
  | 'sandboxctl'
  | 'victoria-metrics'
  | 'vmagent'
  | 'vmauth'
  | 'vmalert'
  | 'vm-operator'
  | 'crane'
  | 'ociimage'
  | 'kustomize'
  | 'config-reloader'
  | 'victoria-logs'
  | 'vlagent'
  | 'argocd';

interface Target {
  name: BinaryName;
  module:
    | 'kube'
    | 'etcd'
    | 'victoriametrics'
    | 'vmalert'
    | 'vmoperator'
    | 'image'
    | 'kustomize'
    | 'configreloader'
    | 'victorialogs'
    | 'argocd';
  pkg: string;
  ldflags: string;
  /** Local source folders (relative to the module) that the key must cover. */
  sources?: string[];
}

const k8sVersion = versions.kubernetes;
const k8sMinor = k8sVersion.split('.')[1];
const k8sLdflags = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']
  .flatMap((p) => [
    `-X ${p}.gitVersion=${k8sVersion}`,
    `-X ${p}.gitMajor=1`,
    `-X ${p}.gitMinor=${k8sMinor}`,
    `-X ${p}.gitTreeState=clean`,
  ])
  .join(' ');
const vmLdflags = (app: string) =>
  `-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=${app}-${versions.victoriaMetrics}`;

export const targets: Target[] = [
  { name: 'etcd', module: 'etcd', pkg: 'go.etcd.io/etcd/server/v3', ldflags: '' },
  {
    name: 'kube-apiserver',
    module: 'kube',
    pkg: 'k8s.io/kubernetes/cmd/kube-apiserver',
    ldflags: k8sLdflags,
  },
  {
    name: 'kube-controller-manager',
    module: 'kube',
    pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager',
    ldflags: k8sLdflags,
  },
  {
    name: 'kube-scheduler',
    module: 'kube',
    pkg: 'k8s.io/kubernetes/cmd/kube-scheduler',
    ldflags: k8sLdflags,
  },
  { name: 'kubectl', module: 'kube', pkg: 'k8s.io/kubernetes/cmd/kubectl', ldflags: k8sLdflags },
  {
    name: 'rollouts-controller',
    module: 'kube',
    pkg: 'github.com/argoproj/argo-rollouts/cmd/rollouts-controller',
    ldflags: `-X github.com/argoproj/argo-rollouts/utils/version.version=${versions.argoRollouts.slice(1)}`,
  },
  {
    name: 'sandboxctl',
    module: 'kube',
    pkg: './cmd/sandboxctl',
    ldflags: '',
    sources: ['cmd', 'internal'],
  },
  {
    name: 'victoria-metrics',
    module: 'victoriametrics',
    pkg: 'github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics',
    ldflags: vmLdflags('victoria-metrics'),
  },
  {
    name: 'vmagent',
    module: 'victoriametrics',
    pkg: 'github.com/VictoriaMetrics/VictoriaMetrics/app/vmagent',
    ldflags: vmLdflags('vmagent'),
  },
  {
    name: 'vmauth',
    module: 'victoriametrics',
    pkg: 'github.com/VictoriaMetrics/VictoriaMetrics/app/vmauth',
    ldflags: vmLdflags('vmauth'),
  },
  {
    // Its own module (test/env/vmalert, same VictoriaMetrics version): adding it kept the keys above unchanged.
    name: 'vmalert',
    module: 'vmalert',
    pkg: 'github.com/VictoriaMetrics/VictoriaMetrics/app/vmalert',
    ldflags: vmLdflags('vmalert'),
  },
  {
    name: 'vm-operator',
    module: 'vmoperator',
    pkg: 'github.com/VictoriaMetrics/operator/cmd',
    ldflags: `-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=vm-operator-${versions.vmOperator}`,
  },
  // The install tooling (npm run image, test/e2e/install): go-containerregistry and kustomize.
  { name: 'crane', module: 'image', pkg: 'github.com/google/go-containerregistry/cmd/crane', ldflags: '' },
  { name: 'ociimage', module: 'image', pkg: './cmd/ociimage', ldflags: '', sources: ['cmd'] },
  {
    name: 'kustomize',
    module: 'kustomize',
    pkg: 'sigs.k8s.io/kustomize/kustomize/v5',
    ldflags: `-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/${versions.kustomize}`,
  },
  {
    // The operator's config-reloader sidecar, in its own module (it needs a dependency the operator binary does
    // not): the rollout benchmark runs it beside the VMAuth a VMDistributed creates.
    name: 'config-reloader',
    module: 'configreloader',
    pkg: 'github.com/VictoriaMetrics/operator/cmd/config-reloader',
    ldflags: `-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=config-reloader-${versions.vmOperator}`,
  },
  // VictoriaLogs zones (docs/zone-kinds.md): the single-node server and the writer, module test/env/victorialogs.
  {
    name: 'victoria-logs',
    module: 'victorialogs',
    pkg: 'github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs',
    ldflags: `-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=victoria-logs-${versions.victoriaLogs}`,
  },
  {
    name: 'vlagent',
    module: 'victorialogs',
    pkg: 'github.com/VictoriaMetrics/VictoriaLogs/app/vlagent',
    ldflags: `-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=vlagent-${versions.victoriaLogs}`,
  },
  {
    // Argo CD as one multi-call binary (ARGOCD_BINARY_NAME picks the component), for the GitOps loop
    // (test/sandbox/argocd.ts, test/e2e/gitops). Its own module: it repeats argo-cd's replace block.
    name: 'argocd',
    module: 'argocd',
    pkg: 'github.com/argoproj/argo-cd/v3/cmd',
    ldflags: `-X github.com/argoproj/argo-cd/v3/common.version=${versions.argoCd.slice(1)}`,
  },
];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

let goVersionMemo: string | undefined;
function goVersion(): string {
  goVersionMemo ??= execFileSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' }).trim();
  return goVersionMemo;
}

export function targetKey(target: Target): string {
  const moduleDir = join(envDir, target.module);
  const hash = createHash('sha256');
  hash.update(`${goVersion()}\n${target.pkg}\n${target.ldflags}\n`);
  for (const file of ['go.mod', 'go.sum']) hash.update(readFileSync(join(moduleDir, file)));
  for (const folder of target.sources ?? []) {
    for (const file of filesUnder(join(moduleDir, folder)).sort()) {
      hash.update(relative(moduleDir, file));
      hash.update(readFileSync(file));
    }
  }
  return hash.digest('hex').slice(0, 16);
}

export function binaryPath(target: Target): string {
  return join(cacheDir(), 'bin', `${target.name}-${targetKey(target)}`);
}

export type BuiltBinaries = Record<BinaryName, string> & {
  debianVictoriaMetrics?: DebianBinaries;
  /** Debian's redis-server (Argo CD's cache), when installed. */
  redisServer?: string;
};

export interface DebianBinaries {
  victoriaMetrics: string;
  vmagent: string;
  vmauth: string;
}

export class BuildError extends Error {
  readonly target: string;
  constructor(target: string, message: string) {
    super(`building ${target} failed: ${message}`);
    this.name = 'BuildError';
    this.target = target;
  }
}

function log(message: string): void {
  process.stderr.write(`[sandbox build] ${message}\n`);
}

/** What bounds a build: `timeoutMs` kills `go build` and fails naming the binary and the time it took. */
export interface BuildBound {
  timeoutMs?: number;
  /** Says where the bound comes from, for the error (e.g. the environment variable that sets it). */
  boundBy?: string;
}

function buildTarget(target: Target, out: string, bound: BuildBound = {}): void {
  const moduleDir = join(envDir, target.module);
  const tmp = `${out}.tmp-${process.pid}`;
  const started = Date.now();
  log(`go build ${target.pkg} (module test/env/${target.module}) ...`);
  const result = spawnSync(
    'go',
    ['build', '-trimpath', '-ldflags', `-s -w ${target.ldflags}`.trim(), '-o', tmp, target.pkg],
    {
      cwd: moduleDir,
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(bound.timeoutMs === undefined ? {} : { timeout: bound.timeoutMs, killSignal: 'SIGKILL' as const }),
    },
  );
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT') {
    rmSync(tmp, { force: true });
    throw new BuildError(
      target.name,
      `go build ${target.pkg} stopped after ${seconds} s: over the bound of ${(bound.timeoutMs ?? 0) / 1000} s` +
        `${bound.boundBy === undefined ? '' : ` (${bound.boundBy})`}; run "node test/env/build.ts" first to build it outside a test`,
    );
  }
  if (result.status !== 0) {
    rmSync(tmp, { force: true });
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-30).join('\n');
    throw new BuildError(target.name, output || String(result.error ?? `exit ${result.status}`));
  }
  renameSync(tmp, out);
  log(`built ${target.name} in ${seconds} s`);
}

/**
 * Starts downloading, all at once and in the background, the modules each target's packages need (`go list -deps`
 * downloads them and compiles nothing): on an empty module cache most of a build's first minutes are downloads, and
 * the builds run one after the other. Each build then finds its modules fetched, or waits on Go's lock of the one
 * being fetched. Best effort: a failed prefetch leaves the download to the build, which names any error.
 */
function prefetchModules(toBuild: readonly Target[]): void {
  const byModule = new Map<Target['module'], string[]>();
  for (const t of toBuild) byModule.set(t.module, [...(byModule.get(t.module) ?? []), t.pkg]);
  for (const [module, pkgs] of byModule) {
    const child = spawn('go', ['list', '-e', '-deps', '-f', '', ...pkgs], {
      cwd: join(envDir, module),
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
      stdio: 'ignore',
    });
    child.on('error', () => undefined);
    child.unref();
  }
}

/** `apt-get update && apt-get install PACKAGE`; undefined when it worked, else the tail of apt's stderr. */
function aptGetInstall(pkg: string): string | undefined {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update'], { env, encoding: 'utf8' });
  const install =
    update.status === 0
      ? spawnSync('apt-get', ['install', '-y', '--no-install-recommends', pkg], { env, encoding: 'utf8' })
      : update;
  if (install.status === 0) return undefined;
  return (install.stderr ?? String(install.error ?? `exit ${install.status}`))
    .split('\n')
    .slice(-5)
    .join('\n');
}

/**
 * A command some tests need, installed with apt (Debian package `pkg`) if missing; `needs` says which tests, for the
 * log line. Where apt cannot, the build goes on and those tests fail saying the command is missing.
 */
function ensureAptCommand(command: string, versionArgs: string[], pkg: string, needs: string): boolean {
  const present = () => spawnSync(command, versionArgs, { encoding: 'utf8' }).status === 0;
  if (present()) return true;
  if (process.env.VMZONES_SKIP_APT === '1' || process.getuid?.() !== 0) {
    log(`${command} is not installed and apt is not usable here: ${needs} will fail until it is`);
    return false;
  }
  log(`apt-get install ${pkg} (${command}, for ${needs}) ...`);
  const failed = aptGetInstall(pkg);
  if (failed !== undefined || !present()) {
    log(`apt-get install ${pkg} failed; ${needs} will fail:\n${failed ?? ''}`);
    return false;
  }
  return true;
}

/** tmux, the terminal the `vmzones status --watch` test (test/e2e/cli/status.test.ts) draws in. */
export function ensureTmux(): boolean {
  return ensureAptCommand('tmux', ['-V'], 'tmux', 'the status --watch test');
}

/** Lua 5.1 (Argo CD's gopher-lua is Lua 5.1): the unit tests run the generated Argo CD health checks in it
 *  (test/unit/observe/zone-health-lua.test.ts), and fail without it. */
export function ensureLua(): boolean {
  return ensureAptCommand('lua5.1', ['-v'], 'lua5.1', 'the Argo CD health check unit tests');
}

/**
 * iproute2's `ip`, which makes the sandbox's pod network namespace (test/sandbox/pod-network.ts; as root) for the
 * tests that reach Pods through kube-apiserver's pod proxy (test/e2e/multicluster/walk.test.ts).
 */
export function ensureIproute2(): boolean {
  return ensureAptCommand('ip', ['-V'], 'iproute2', 'the tests with a pod network (zonePodNetwork)');
}

/**
 * Debian's redis-server, Argo CD's cache (the sandbox's `argocd` option): on PATH, else installed with apt. Undefined
 * where neither works; starting Argo CD then fails naming it (test/sandbox/argocd.ts).
 */
export function ensureRedis(): string | undefined {
  const found = () => {
    const which = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
    return which.status === 0 ? which.stdout.trim() : undefined;
  };
  const present = found();
  if (present) return present;
  if (process.env.VMZONES_SKIP_APT === '1' || process.getuid?.() !== 0) {
    log('redis-server is not installed and apt is not usable here: the sandbox cannot start Argo CD');
    return undefined;
  }
  log('apt-get install redis-server (the cache of Argo CD) ...');
  const failed = aptGetInstall('redis-server');
  const installed = found();
  if (failed !== undefined || !installed) {
    log(`apt-get install redis-server failed; the sandbox cannot start Argo CD:\n${failed ?? ''}`);
    return undefined;
  }
  // The package enables a redis-server service on port 6379; the sandbox starts its own on a free port.
  spawnSync('systemctl', ['disable', '--now', 'redis-server'], { encoding: 'utf8' });
  return installed;
}

/** Installs Debian's victoria-metrics package (1.79.5) if missing; returns undefined where apt cannot. */
export function ensureDebianVictoriaMetrics(): DebianBinaries | undefined {
  const bins: DebianBinaries = {
    victoriaMetrics: '/usr/bin/victoria-metrics',
    vmagent: '/usr/bin/vmagent',
    vmauth: '/usr/bin/vmauth',
  };
  const present = () => Object.values(bins).every((path) => existsSync(path));
  if (present()) return bins;
  if (process.env.VMZONES_SKIP_APT === '1' || process.getuid?.() !== 0) {
    log(
      'Debian victoria-metrics (1.79.5) not installed and apt is not usable here: offering only the built version',
    );
    return undefined;
  }
  log('apt-get install victoria-metrics (1.79.5, the oldest version the sandbox offers) ...');
  const install = aptGetInstall('victoria-metrics');
  if (install !== undefined || !present()) {
    log(`apt-get failed, continuing without 1.79.5:\n${install ?? ''}`);
    return undefined;
  }
  // The package enables a victoria-metrics service; the sandbox starts its own processes.
  spawnSync('systemctl', ['disable', '--now', 'victoria-metrics'], { encoding: 'utf8' });
  return bins;
}

/** Builds one binary if the cache lacks it (npm run image needs two of them, not the whole sandbox). */
export function ensureBuilt(name: BinaryName): string {
  const target = targets.find((t) => t.name === name);
  if (!target) throw new BuildError(name, 'no such target');
  const out = binaryPath(target);
  if (!existsSync(out)) {
    if (missingFromEnv() === 'fail') {
      throw new BuildError(name, `not in the cache and this process does not build (${noBuildVariable}=1)`);
    }
    mkdirSync(dirname(out), { recursive: true });
    buildTarget(target, out);
  }
  return out;
}

/**
 * Builds whatever is missing from the cache and returns the path of every binary. `except` names binaries the
 * caller does not use (a sandbox without Argo CD does not need it); their paths are returned all the same, and may
 * not exist. `missing: 'fail'` (the default where ${noBuildVariable}=1, as npm test sets it for its test files)
 * builds nothing and fails naming what is missing: only npm test's build phase builds.
 */
export function buildAll(
  options: { except?: readonly BinaryName[]; missing?: 'build' | 'fail' } & BuildBound = {},
): BuiltBinaries {
  const binDir = join(cacheDir(), 'bin');
  mkdirSync(binDir, { recursive: true });
  const built = {} as Record<BinaryName, string>;
  const mode = options.missing ?? missingFromEnv();
  const missing: Target[] = [];
  for (const target of targets) {
    const out = binaryPath(target);
    if (existsSync(out)) touch(out);
    else if (!options.except?.includes(target.name)) missing.push(target);
    built[target.name] = out;
  }
  if (mode === 'build') {
    prefetchModules(missing);
    for (const target of missing) buildTarget(target, built[target.name], options);
  }
  if (mode === 'fail' && missing.length > 0) {
    throw new BuildError(
      missing.map((t) => t.name).join(', '),
      `not in the cache (${binDir}) and this process does not build (${noBuildVariable}=1: npm test builds every ` +
        `binary in its build phase, before any test file starts); run "npm run env:build"`,
    );
  }
  const { debian, redisServer } = ensureTools();
  return {
    ...built,
    ...(debian ? { debianVictoriaMetrics: debian } : {}),
    ...(redisServer ? { redisServer } : {}),
  };
}

/**
 * The Debian packages the tests use, installed with apt where missing (each a no-op when present): npm test runs
 * this first (`--tools-only`), before the unit tests, which need lua5.1 on a fresh machine too.
 */
export function ensureTools(): { debian: DebianBinaries | undefined; redisServer: string | undefined } {
  const debian = ensureDebianVictoriaMetrics();
  ensureTmux();
  ensureIproute2();
  ensureLua();
  return { debian, redisServer: ensureRedis() };
}

// A binary's mtime is when a build last used it: another checkout on the machine (a branch, a worktree, a clean
// clone running CI) may use other keys of the same target right now.
function touch(path: string): void {
  const now = new Date();
  try {
    utimesSync(path, now, now);
  } catch {
    // read-only cache: the binary is still usable
  }
}

const unusedFor = 2 * 24 * 3600_000;

/** Binaries of older keys are left behind by version bumps; remove those no build has used for two days. */
export function pruneCache(): void {
  const binDir = join(cacheDir(), 'bin');
  if (!existsSync(binDir)) return;
  const keep = new Set(targets.map((t) => binaryPath(t)));
  for (const name of readdirSync(binDir)) {
    const path = join(binDir, name);
    const stat = statSync(path);
    if (!keep.has(path) && stat.isFile() && Date.now() - stat.mtimeMs > unusedFor) rmSync(path);
  }
}

/** Where Go keeps a module's source (downloading it if needed): CRDs are read from there. */
export function moduleDir(module: string, version: string, fromModule: Target['module']): string {
  const out = execFileSync('go', ['mod', 'download', '-json', `${module}@${version}`], {
    cwd: join(envDir, fromModule),
    encoding: 'utf8',
    env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
  });
  const parsed: unknown = JSON.parse(out);
  if (typeof parsed === 'object' && parsed !== null && 'Dir' in parsed && typeof parsed.Dir === 'string') {
    return parsed.Dir;
  }
  throw new BuildError(module, `go mod download gave no Dir: ${out}`);
}

if (import.meta.main) {
  const started = Date.now();
  // `--except NAME` (repeatable): leave NAME out (a sandbox without Argo CD, run by hand, does not need it).
  const { values } = parseArgs({
    options: { except: { type: 'string', multiple: true }, 'tools-only': { type: 'boolean' } },
  });
  if (values['tools-only']) {
    // `--tools-only`: only the Debian packages (npm test's first phase; no Go build).
    const { debian, redisServer } = ensureTools();
    process.stdout.write(
      `debian victoria-metrics: ${debian ? 'present' : 'missing'}; redis-server: ${redisServer ?? 'missing'}\n`,
    );
    process.exit(0);
  }
  const names = targets.map((t) => t.name);
  const unknown = (values.except ?? []).filter((name) => !names.some((n) => n === name));
  if (unknown.length > 0) {
    process.stderr.write(
      `build.ts: --except ${unknown.join(', ')}: no such binary (one of ${names.join(', ')})\n`,
    );
    process.exit(2);
  }
  const except = names.filter((n) => values.except?.includes(n));
  const built = buildAll({ except, missing: 'build' });
  pruneCache();
  for (const [name, path] of Object.entries(built)) {
    const shown =
      typeof path !== 'string' ? JSON.stringify(path) : existsSync(path) ? path : 'not built (--except)';
    process.stdout.write(`${name}: ${shown}\n`);
  }
  process.stdout.write(`build took ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
