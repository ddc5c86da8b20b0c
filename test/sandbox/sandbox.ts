// Starts and stops the whole sandbox: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, the simulated kubelet, the Argo Rollouts controller, the simulated
// VictoriaMetrics operator with its real data plane, and the load generator.

import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { Agent, request } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { pluginNodeFlags } from '../../scripts/package.ts';
import { type BuiltBinaries, buildAll, cacheDir, moduleDir } from '../env/build.ts';
import { versions } from '../env/versions.ts';
import { addressViolations } from './addresses.ts';
import { type ArgoCdState, startArgoCd } from './argocd.ts';
import { Kubectl } from './kubectl.ts';
import {
  argoRolloutsConfig,
  controllerNamespace,
  namespace,
  type PluginExtraArgs,
  type PluginLocation,
  type SandboxZoneKind,
  vlAgent,
  vlagentName,
  vlCluster,
  vmAgent,
  vmAuth,
  vmagentName,
  vmauthName,
  vmCluster,
  vmNamespace,
  vmSingle,
  vmUser,
  type Zone,
  zonesFor,
} from './manifests.ts';
import {
  createPodNetwork,
  netnsPath,
  type PodNetwork,
  pruneStalePodNetworks,
  removePodNetwork,
} from './pod-network.ts';
import { freePort, isPortFree } from './ports.ts';
import {
  type DaemonRecord,
  type DaemonSpec,
  isAlive,
  killDaemon,
  processGroupOf,
  StartError,
  startDaemon,
  stopDaemon,
  waitFor,
} from './processes.ts';
import { takeStartSlot } from './start-slots.ts';
import { type StartStep, StartSteps } from './start-steps.ts';
import { startZoneCluster, type ZoneClusterState } from './zone-clusters.ts';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface SandboxOptions {
  /** Where state, logs and data go; default ${VMZONES_CACHE}/sandbox/default. */
  stateDir?: string;
  /** Number of zones (VMClusters); default 2. */
  zones?: number;
  /**
   * What each zone is; default VMCluster. VMSingle and VLCluster zones need the real operator; VLCluster zones get a
   * VLAgent (no VMAgent) and the load generator writes log lines through it.
   */
  zoneKind?: SandboxZoneKind;
  /** Configure the vmzones plugins in argo-rollouts-config (needs dist/vmzones.mjs); default: if built. */
  plugin?: boolean;
  /** false: start no Argo Rollouts controller, the test runs its own (test/e2e/install); default true. */
  rolloutsController?: boolean;
  /** Seconds a restarted zone may take to become healthy before its VMCluster goes failed. */
  readyTimeoutSeconds?: number;
  /** Seconds between stopping a zone's old process and starting the new one (pod turnover). */
  podRestartSeconds?: number;
  /** Progress lines go here; default stderr. */
  log?: (line: string) => void;
  /** Aborting stops the start: what was started is torn down (Ctrl-C). */
  signal?: AbortSignal;
  /** The process this sandbox belongs to (its state folder's owner.pid, test/sandbox/helper.ts); default this one. */
  owner?: number;
  /**
   * Put the fault proxy (test/sandbox/fault-proxy.ts) between the plugin processes and the API server:
   * the controller's environment gets KUBECONFIG=<state>/plugin-kubeconfig (pointing at the proxy), which
   * the plugins it execs inherit, while the controller itself keeps --kubeconfig (the direct one, which
   * takes precedence over KUBECONFIG in client-go). Default: VMZONES_SANDBOX_FAULT_PROXY=1, else off.
   */
  faultProxy?: boolean;
  /**
   * "real" (default): the real VictoriaMetrics operator owns statuses and workloads, the
   * simulator only runs the data plane. "simulated": the simulator plays the operator too.
   */
  operator?: OperatorMode;
  /** Arguments the controller passes to each plugin after the bundle. */
  pluginArgs?: PluginExtraArgs;
  /**
   * Namespaces the real operator reconciles (its WATCH_NAMESPACE); default all. test/bench/scale.ts keeps its
   * placeholder zones in a namespace of their own that no operator touches.
   */
  operatorWatchNamespaces?: string[];
  /**
   * Start Argo CD (test/sandbox/argocd.ts): Redis, repo-server, application controller, API server and a Git
   * server on loopback. Default: VMZONES_SANDBOX_ARGOCD=1, else off (it adds ~1 GB of memory and start time).
   */
  argocd?: boolean;
  /**
   * The last `zoneClusters` zones each live in a Kubernetes cluster of their own (test/sandbox/zone-clusters.ts),
   * registered in the hub as cluster Secrets; the plugins get --cluster-secrets-namespace, and --watch-namespaces=vm
   * for the namespace-scoped RBAC there. Default 0. With it, `zones` defaults to zoneClusters + 1 (one zone in the
   * hub). Needs the real operator.
   */
  zoneClusters?: number;
  /**
   * How many zones each zone cluster holds (default 1): the last `zoneClusters × zonesPerZoneCluster` zones go to the
   * zone clusters, in order, and a cluster is named after its first zone (zone-e and zone-f in cluster-e).
   */
  zonesPerZoneCluster?: number;
  /**
   * The zone clusters' Pods get an address inside a network namespace the sandbox makes (test/sandbox/pod-network.ts:
   * `ip netns` and a veth pair on a private /30) and their data planes' ports are forwarded there, so that
   * kube-apiserver, which refuses to proxy to loopback, reaches them through the pod proxy subresource. Needs root
   * and iproute2; start fails saying so otherwise. Default off (127.0.0.1).
   */
  zonePodNetwork?: boolean;
  /**
   * Install the VMDistributed CRD with its full schema (test/bench/rollout-vs-vmdistributed.ts creates one). Default
   * off: like the other kinds nothing else here creates, it gets the upstream's spec-less CRD (vmCrdsFile).
   */
  vmDistributed?: boolean;
}

export type OperatorMode = 'real' | 'simulated';

/** VMZONES_SANDBOX_OPERATOR: "real" (default) or "simulated". */
export function operatorFromEnv(): OperatorMode {
  const value = process.env.VMZONES_SANDBOX_OPERATOR ?? 'real';
  if (value === 'real' || value === 'simulated') return value;
  throw new StartError('sandbox', `VMZONES_SANDBOX_OPERATOR must be "real" or "simulated", not "${value}"`);
}

export interface Endpoint {
  kind: string;
  key: string;
  url: string;
  version: string;
  pid: number;
  logPath: string;
  args: string[];
}

export interface SandboxState {
  stateDir: string;
  kubeconfig: string;
  startedAt: string;
  startSeconds?: number;
  apiServer: string;
  zones: Zone[];
  vmNamespace: string;
  controllerNamespace: string;
  plugin: PluginLocation | undefined;
  binaries: BuiltBinaries;
  operator: OperatorMode;
  daemons: DaemonRecord[];
  endpointsFile: string;
  loadgenUrl?: string;
  /** With the faultProxy option: the proxy the plugins talk to, and its control API. */
  faultProxy?: { url: string; controlUrl: string; pluginKubeconfig: string };
  /** With the argocd option: where Argo CD's API and the Git server listen. */
  argocd?: ArgoCdState;
  /** With the zoneClusters option: the zones of the zone clusters, in zone order (one entry per zone). */
  zoneClusters?: ZoneClusterState[];
  /** With the zonePodNetwork option: the network namespace holding the zone clusters' Pod IP (removed by down). */
  podNetwork?: PodNetwork;
  /** Seconds this start spent building missing binaries (0 when the cache had them all). */
  buildSeconds?: number;
  /** Each step of the start with the second it began at and its length (test/sandbox/start-steps.ts). */
  startSteps?: StartStep[];
  /** The process group of the process that started it: npm test stops a phase by its group, then takes down
   *  the sandboxes that group started (their daemons run in groups of their own). */
  processGroup?: number;
}

export function defaultStateDir(): string {
  return process.env.VMZONES_SANDBOX_DIR ?? join(cacheDir(), 'sandbox', 'default');
}

function stateFile(stateDir: string): string {
  return join(stateDir, 'state.json');
}

const ownerFile = 'owner.pid';

/** Records the process a sandbox belongs to: while it lives, nothing prunes the folder (test/sandbox/helper.ts). */
export function writeOwner(stateDir: string, pid: number): void {
  writeFileSync(join(stateDir, ownerFile), `${pid}\n`);
}

/** The owner's pid, or undefined when the folder has none (yet, or from before owner files). */
export function readOwner(stateDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(stateDir, ownerFile), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

const buildTimeoutVariable = 'VMZONES_SANDBOX_BUILD_TIMEOUT_SECONDS';
const defaultBuildTimeoutSeconds = 1080;

/**
 * The bound of each binary's build inside a sandbox start: 18 minutes, above the slowest measured (a cold Argo CD
 * build, 969 s on a loaded machine) and under npm test's 20-minute limit per test and hook (scripts/test.ts), so a
 * starved build fails naming the binary and its time rather than as a bare test timeout.
 */
export function sandboxBuildTimeoutSeconds(): number {
  const raw = process.env[buildTimeoutVariable];
  if (raw === undefined || raw === '') return defaultBuildTimeoutSeconds;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new StartError(
      'sandbox',
      `${buildTimeoutVariable} must be a positive number of seconds, not "${raw}"`,
    );
  }
  return seconds;
}

export function readState(stateDir = defaultStateDir()): SandboxState | undefined {
  const file = stateFile(stateDir);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as SandboxState;
}

function writeState(state: SandboxState): void {
  writeFileSync(stateFile(state.stateDir), `${JSON.stringify(state, null, 2)}\n`);
}

export function readEndpoints(state: Pick<SandboxState, 'endpointsFile'>): Endpoint[] {
  if (!existsSync(state.endpointsFile)) return [];
  const parsed = JSON.parse(readFileSync(state.endpointsFile, 'utf8')) as { endpoints?: Endpoint[] };
  return parsed.endpoints ?? [];
}

/** An endpoint of the hub's data plane, or else of a zone cluster's. */
export function endpointOf(state: SandboxState, kind: string, name: string): Endpoint | undefined {
  const files = [state.endpointsFile, ...(state.zoneClusters ?? []).map((c) => c.endpointsFile)];
  for (const endpointsFile of files) {
    const found = readEndpoints({ endpointsFile }).find(
      (e) => e.kind === kind && e.key === `${vmNamespace}/${name}`,
    );
    if (found) return found;
  }
  return undefined;
}

/** GET over TLS with the sandbox's admin client certificate. */
function httpsGet(url: string, pkiDir: string): Promise<{ status: number; body: string }> {
  const agent = new Agent({
    ca: readFileSync(join(pkiDir, 'ca.crt')),
    cert: readFileSync(join(pkiDir, 'admin.crt')),
    key: readFileSync(join(pkiDir, 'admin.key')),
    rejectUnauthorized: false, // component serving certs are self-signed
  });
  return new Promise((resolvePromise, reject) => {
    const req = request(url, { agent, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

async function httpOk(url: string): Promise<true | undefined> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
  return response.ok ? true : undefined;
}

export function kubeconfigYaml(server: string, pkiDir: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'vmzones-sandbox', cluster: { server, 'certificate-authority': join(pkiDir, 'ca.crt') } },
    ],
    users: [
      {
        name: 'vmzones-sandbox-admin',
        user: { 'client-certificate': join(pkiDir, 'admin.crt'), 'client-key': join(pkiDir, 'admin.key') },
      },
    ],
    contexts: [
      { name: 'vmzones-sandbox', context: { cluster: 'vmzones-sandbox', user: 'vmzones-sandbox-admin' } },
    ],
    'current-context': 'vmzones-sandbox',
  });
}

/** The plugin as the controller runs it: Node 24 (copied into plugin-bin/) with the Node flags the manifests deploy
 *  (scripts/package.ts) and the bundle as arguments, so every sandbox test runs the process users run. */
export function pluginLocation(): PluginLocation | undefined {
  const bundle = join(repoRoot, 'dist', 'vmzones.mjs');
  const node = join(repoRoot, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(bundle) || !existsSync(node)) return undefined;
  return { location: realpathSync(node), args: [...pluginNodeFlags, bundle] };
}

/** The kinds the simulated operator serves. */
const simulatedKinds = ['vmclusters', 'vmagents', 'vmauths', 'vmusers'];

/**
 * The kinds the sandbox and the tests create: they keep their full schema, so the API server validates, prunes and
 * defaults them as in a cluster. VMDistributed (0.75 MB, half of these) only with the `vmDistributed` option.
 */
export const fullSchemaKinds = [...simulatedKinds, 'vmsingles', 'vlclusters', 'vlagents'];

/** The CRDs of a bundle file, by plural name (`vmclusters`), in the bundle's order. */
export function crdsByPlural(bundle: string): Map<string, string> {
  const crds = new Map<string, string>();
  for (const doc of bundle.split(/^---\s*$/m)) {
    const name = /^ {2}name: ([a-z0-9]+)\.operator\.victoriametrics\.com$/m.exec(doc)?.[1];
    if (name !== undefined && /^kind: CustomResourceDefinition$/m.test(doc)) crds.set(name, doc.trim());
  }
  return crds;
}

/**
 * The VictoriaMetrics CRDs the sandbox installs, from the operator module's bundles. The real operator refuses to
 * start without every kind it serves (25), but the sandbox creates only `fullSchemaKinds`: those come from the
 * description-less bundle with their whole schema; the others from the upstream's spec-less bundle (same kinds,
 * versions and status schema, spec unvalidated). The spec-less ones are 2 % of the bytes: the API server's work on
 * the 25 CRDs (structural schemas, managed fields, the OpenAPI document kubectl downloads next) is CPU on two loaded
 * cores, 14 s of a 41 s start with the whole bundle (docs/testing.md, "Sandbox start"). The simulated operator
 * gets only the four kinds it serves.
 */
export function vmCrdsFile(stateDir: string, operator: OperatorMode, { vmDistributed = false } = {}): string {
  const dir = join(
    moduleDir('github.com/VictoriaMetrics/operator', versions.vmOperator, 'vmoperator'),
    'config',
    'crd',
    'overlay',
  );
  const full = crdsByPlural(readFileSync(join(dir, 'crd.descriptionless.yaml'), 'utf8'));
  const specless = crdsByPlural(readFileSync(join(dir, 'crd.specless.yaml'), 'utf8'));
  const plurals = operator === 'real' ? [...full.keys()] : simulatedKinds;
  const whole = vmDistributed ? [...fullSchemaKinds, 'vmdistributed'] : fullSchemaKinds;
  const docs = plurals.map((plural) => (whole.includes(plural) ? full : specless).get(plural));
  const missing = [
    ...plurals.filter((_, i) => docs[i] === undefined),
    ...whole.filter((plural) => !full.has(plural)),
  ];
  if (missing.length > 0) {
    throw new StartError('vm-crds', `the operator's CRD bundles in ${dir} lack ${missing.join(', ')}`);
  }
  const out = join(stateDir, 'vm-crds.yaml');
  writeFileSync(out, `${docs.join('\n---\n')}\n`);
  return out;
}

/**
 * A copy of `value` without the `description` texts of its OpenAPI schemas; a field named "description" (a key of a
 * `properties` map) stays. Descriptions only document (kubectl explain): validation, pruning and defaults are the same.
 */
export function withoutDescriptions(value: unknown, keysAreFieldNames = false): unknown {
  if (Array.isArray(value)) return value.map((item) => withoutDescriptions(item));
  if (value === null || typeof value !== 'object') return value;
  const kept: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === 'description' && !keysAreFieldNames && typeof item === 'string') continue;
    kept[key] = withoutDescriptions(item, key === 'properties' && !keysAreFieldNames);
  }
  return kept;
}

/**
 * The Argo Rollouts CRDs of the controller's module, without their descriptions (as the operator's
 * crd.descriptionless.yaml): 1.35 MB of JSON with them, 0.32 MB without, and the API server's work on CRDs is
 * most of a start's CPU (docs/testing.md, "Sandbox start").
 */
function argoCrdsFile(stateDir: string): string {
  const dir = join(
    moduleDir('github.com/argoproj/argo-rollouts', versions.argoRollouts, 'kube'),
    'manifests',
    'crds',
  );
  const docs = readdirSync(dir)
    .filter((f) => f.endsWith('-crd.yaml'))
    .map((f) => JSON.stringify(withoutDescriptions(parseYaml(readFileSync(join(dir, f), 'utf8')))));
  const out = join(stateDir, 'rollouts-crds.yaml');
  writeFileSync(out, `${docs.join('\n---\n')}\n`);
  return out;
}

/**
 * ${stateDir}/bin: kubectl and the sandbox binaries under their plain names, plus a
 * kubectl-argo-rollouts wrapper so that `kubectl argo rollouts promote ...` works with PATH set.
 */
function writeBinDir(stateDir: string, binaries: BuiltBinaries): void {
  const bin = join(stateDir, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const [name, path] of Object.entries(binaries)) {
    if (typeof path === 'string') symlinkSync(path, join(bin, name));
  }
  writeFileSync(
    join(bin, 'kubectl-argo-rollouts'),
    `#!/bin/sh\n# The real promote/abort/retry/status commands of kubectl-argo-rollouts ${versions.argoRollouts}.\nexec '${binaries.sandboxctl}' rollouts "$@"\n`,
    { mode: 0o755 },
  );
}

/** Times a step of a start (StartSteps.time); the default runs it untimed. */
export type TimeStep = <T>(step: string, work: () => Promise<T> | T) => Promise<T>;

const untimed: TimeStep = async (_step, work) => await work();

export interface ControlPlaneOptions {
  /** Times the waits on etcd and kube-apiserver; default untimed. */
  time?: TimeStep;
  /** Starts and records a daemon (torn down with the rest of its sandbox). */
  daemon: (spec: Parameters<typeof startDaemon>[0]) => DaemonRecord;
  binaries: BuiltBinaries;
  /** etcd data and apiserver certs go under this directory. */
  stateDir: string;
  /** Written by `sandboxctl pki`: ca.crt, apiserver.*, admin.*, sa.*. */
  pkiDir: string;
  logDir: string;
  /** etcd member name; also names the logs of a second control plane (`<name>-etcd.log`). */
  name: string;
}

/** etcd and kube-apiserver of one cluster; returns the API server's URL once /readyz answers 200. */
export async function startControlPlane(options: ControlPlaneOptions): Promise<string> {
  const { daemon, binaries, stateDir, pkiDir, logDir } = options;
  const time = options.time ?? untimed;
  const prefix = options.name === 'sandbox' ? '' : `${options.name}-`;
  const etcdClient = await freePort();
  const etcdPeer = await freePort();
  const etcd = daemon({
    name: `${prefix}etcd`,
    command: binaries.etcd,
    args: [
      `--name=${options.name}`,
      `--data-dir=${join(stateDir, `${prefix}etcd`)}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=${options.name}=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ],
    log: join(logDir, `${prefix}etcd.log`),
    ports: [etcdClient, etcdPeer],
  });
  await time(`${prefix}etcd healthy`, () =>
    waitFor(() => httpOk(`http://127.0.0.1:${etcdClient}/health`), {
      part: `${prefix}etcd`,
      log: etcd.log,
      pid: etcd.pid,
      timeoutMs: 30_000,
    }),
  );

  const apiPort = await freePort();
  const apiServer = `https://127.0.0.1:${apiPort}`;
  const apiserver = daemon({
    name: `${prefix}kube-apiserver`,
    command: binaries['kube-apiserver'],
    args: [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--cert-dir=${join(stateDir, `${prefix}apiserver`)}`,
      `--tls-cert-file=${join(pkiDir, 'apiserver.crt')}`,
      `--tls-private-key-file=${join(pkiDir, 'apiserver.key')}`,
      `--client-ca-file=${join(pkiDir, 'ca.crt')}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(pkiDir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pkiDir, 'sa.key')}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      '--authorization-mode=RBAC',
      // The loopback address is not a valid endpoint for the kubernetes Service.
      '--endpoint-reconciler-type=none',
      '--profiling=false',
      '--v=1',
    ],
    log: join(logDir, `${prefix}kube-apiserver.log`),
    ports: [apiPort],
  });
  await time(`${prefix}kube-apiserver ready`, () =>
    waitFor(
      async () => {
        const r = await httpsGet(`${apiServer}/readyz`, pkiDir);
        if (r.status !== 200) throw new Error(`readyz ${r.status}: ${r.body.slice(0, 200)}`);
        return true;
      },
      { part: `${prefix}kube-apiserver`, log: apiserver.log, pid: apiserver.pid, timeoutMs: 90_000 },
    ),
  );
  return apiServer;
}

export interface ClusterDaemonOptions {
  /** Times the waits of this cluster's start; default untimed. */
  time?: TimeStep;
  daemon: (spec: DaemonSpec) => DaemonRecord;
  binaries: BuiltBinaries;
  stateDir: string;
  logDir: string;
  kubeconfig: string;
  /** "sandbox" for the hub; else the cluster's name, which prefixes its daemons, logs and state. */
  name: string;
  /**
   * The pod network (test/sandbox/pod-network.ts): the simulated kubelet gives every Pod its address, and the data
   * plane forwards each process's port there from inside the namespace. Default: Pods at 127.0.0.1.
   */
  podNetwork?: Pick<PodNetwork, 'podAddress' | 'netns'>;
}

function clusterPrefix(name: string): string {
  return name === 'sandbox' ? '' : `${name}-`;
}

export interface NodeDaemons {
  kcm: DaemonRecord;
  kcmPort: number;
  scheduler: DaemonRecord;
  schedulerPort: number;
  kubelet: DaemonRecord;
  nodeName: string;
  pkiDir: string;
}

/** kube-controller-manager, kube-scheduler and the simulated kubelet of one cluster (wait with nodeDaemonsReady). */
export async function startNodeDaemons(
  options: ClusterDaemonOptions & { pkiDir: string },
): Promise<NodeDaemons> {
  const { daemon, binaries, stateDir, pkiDir, logDir, kubeconfig } = options;
  const prefix = clusterPrefix(options.name);
  const nodeName = `${options.name}-node`;
  const kcmPort = await freePort();
  const kcm = daemon({
    name: `${prefix}kube-controller-manager`,
    command: binaries['kube-controller-manager'],
    args: [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${kcmPort}`,
      `--cert-dir=${join(stateDir, `${prefix}kube-controller-manager`)}`,
      `--service-account-private-key-file=${join(pkiDir, 'sa.key')}`,
      `--root-ca-file=${join(pkiDir, 'ca.crt')}`,
      '--leader-elect=false',
      `--cluster-name=vmzones-${options.name}`,
      '--v=1',
    ],
    log: join(logDir, `${prefix}kube-controller-manager.log`),
    ports: [kcmPort],
  });
  const schedulerPort = await freePort();
  const scheduler = daemon({
    name: `${prefix}kube-scheduler`,
    command: binaries['kube-scheduler'],
    args: [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${schedulerPort}`,
      '--leader-elect=false',
      '--v=1',
    ],
    log: join(logDir, `${prefix}kube-scheduler.log`),
    ports: [schedulerPort],
  });
  const kubelet = daemon({
    name: `${prefix}kubelet-sim`,
    command: binaries.sandboxctl,
    // The operator's config-reloader sidecars are played by the data plane (it reloads vmauth).
    args: [
      'kubelet',
      `--kubeconfig=${kubeconfig}`,
      `--node=${nodeName}`,
      '--played-images=victoriametrics/operator:config-reloader',
      ...(options.podNetwork === undefined ? [] : [`--pod-ip=${options.podNetwork.podAddress}`]),
    ],
    log: join(logDir, `${prefix}kubelet-sim.log`),
  });
  return { kcm, kcmPort, scheduler, schedulerPort, kubelet, nodeName, pkiDir };
}

/** Waits until the controller-manager and scheduler are healthy, the node Ready and the vm namespace has its SA. */
export async function nodeDaemonsReady(node: NodeDaemons, kubectl: Kubectl): Promise<void> {
  for (const [record, port] of [
    [node.kcm, node.kcmPort],
    [node.scheduler, node.schedulerPort],
  ] as const) {
    await waitFor(
      async () => {
        const r = await httpsGet(`https://127.0.0.1:${port}/healthz`, node.pkiDir);
        return r.status === 200 ? true : undefined;
      },
      { part: record.name, log: record.log, pid: record.pid, timeoutMs: 60_000 },
    );
  }
  await waitFor(
    async () => {
      const found = await kubectl.getJson<{ status?: { conditions?: { type: string; status: string }[] } }>([
        'node',
        node.nodeName,
      ]);
      return found.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
        ? true
        : undefined;
    },
    { part: node.kubelet.name, log: node.kubelet.log, pid: node.kubelet.pid, timeoutMs: 30_000 },
  );
  // Pods need the namespace's default ServiceAccount, which kube-controller-manager creates.
  await waitFor(() => kubectl.getJson(['serviceaccount', 'default', '-n', vmNamespace]).then(() => true), {
    part: node.kcm.name,
    log: node.kcm.log,
    pid: node.kcm.pid,
    timeoutMs: 30_000,
  });
}

export interface DataPlaneOptions extends ClusterDaemonOptions {
  operator: OperatorMode;
  endpointsFile: string;
  readyTimeoutSeconds: number;
  podRestartSeconds: number;
  watchNamespaces?: string[];
  /** Services of this cluster put on loopback addresses for the other clusters (test/env/kube/internal/vmsim). */
  publish?: { address: string; service: string }[];
}

/**
 * How long the CRDs (the Argo Rollouts ones and all 25 of the operator's) may take to be established: a few seconds
 * alone, past 60 s in a zone cluster started beside three other sandboxes at a load average of 35 (2026-12-03).
 */
const crdEstablishedTimeout = '180s';

/** Waits until every CRD of the cluster `kubectl` reaches is established, within crdEstablishedTimeout. */
export async function crdsEstablished(kubectl: Kubectl): Promise<void> {
  await kubectl.run([
    'wait',
    '--for=condition=established',
    `--timeout=${crdEstablishedTimeout}`,
    'crd',
    '--all',
  ]);
}

/**
 * The real operator's own poll intervals (its config, `internal/config/config.go` of v0.74.1): how often it looks
 * whether a Pod it replaced is ready (`VM_PODWAITREADYINTERVALCHECK`, default 5 s, also slept once before every
 * StatefulSet rolling update) and whether a VM object it waits on is operational (`VM_WAIT_READY_INTERVAL`, 5 s).
 * They only wait: at 1 s a zone's restart is seen ~10 s sooner and nothing else changes (the product reads the
 * statuses the operator writes either way). `VMZONES_SANDBOX_OPERATOR_POLL` sets another (e.g. `5s`, upstream's).
 */
export function operatorPollEnv(): Record<string, string> {
  const poll = process.env.VMZONES_SANDBOX_OPERATOR_POLL || '1s';
  return { VM_PODWAITREADYINTERVALCHECK: poll, VM_WAIT_READY_INTERVAL: poll };
}

/** The real VM operator (unless simulated) and the data plane (`sandboxctl vmoperator`) of one cluster. */
export async function startOperatorAndDataPlane(options: DataPlaneOptions): Promise<DaemonRecord> {
  const { daemon, binaries, stateDir, logDir, kubeconfig } = options;
  const prefix = clusterPrefix(options.name);
  const operatorMode = options.operator;
  const simConfig = join(stateDir, `${prefix}vmoperator-sim.json`);
  const builtVersion = versions.victoriaMetrics;
  const simBinaries: Record<string, { victoriaMetrics: string; vmagent: string; vmauth: string }> = {
    [builtVersion]: {
      victoriaMetrics: binaries['victoria-metrics'],
      vmagent: binaries.vmagent,
      vmauth: binaries.vmauth,
    },
  };
  if (binaries.debianVictoriaMetrics)
    simBinaries[versions.victoriaMetricsDebian] = binaries.debianVictoriaMetrics;
  const logsBinaries = {
    [versions.victoriaLogs]: { victoriaLogs: binaries['victoria-logs'], vlagent: binaries.vlagent },
  };
  writeFileSync(
    simConfig,
    JSON.stringify({
      stateDir: join(stateDir, `${prefix}data`),
      logDir,
      binaries: simBinaries,
      defaultVersion: builtVersion,
      logsBinaries,
      defaultLogsVersion: versions.victoriaLogs,
      readyTimeoutSeconds: options.readyTimeoutSeconds,
      podRestartSeconds: options.podRestartSeconds,
      endpointsFile: options.endpointsFile,
      mode: operatorMode === 'real' ? 'dataplane' : 'operator',
      publish: options.publish ?? [],
      ...(options.podNetwork === undefined
        ? {}
        : { podIP: options.podNetwork.podAddress, podNetns: netnsPath(options.podNetwork) }),
    }),
  );
  if (operatorMode === 'real') {
    const metricsPort = await freePort();
    const probePort = await freePort();
    const realOperator = daemon({
      name: `${prefix}vm-operator`,
      command: binaries['vm-operator'],
      args: [
        `--metrics-bind-address=127.0.0.1:${metricsPort}`,
        `--health-probe-bind-address=127.0.0.1:${probePort}`,
        '--pprof-addr=',
      ],
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        ...operatorPollEnv(),
        ...(options.watchNamespaces === undefined
          ? {}
          : { WATCH_NAMESPACE: options.watchNamespaces.join(',') }),
      },
      log: join(logDir, `${prefix}vm-operator.log`),
      ports: [metricsPort, probePort],
    });
    // The operator serves its probes at /health and /ready (not /healthz, /readyz).
    await (options.time ?? untimed)(`${prefix}vm-operator ready`, () =>
      waitFor(() => httpOk(`http://127.0.0.1:${probePort}/ready`), {
        part: realOperator.name,
        log: realOperator.log,
        pid: realOperator.pid,
        timeoutMs: 60_000,
      }),
    );
  }
  const name = operatorMode === 'real' ? 'vm-dataplane' : 'vmoperator-sim';
  return daemon({
    name: `${prefix}${name}`,
    command: binaries.sandboxctl,
    args: ['vmoperator', `--kubeconfig=${kubeconfig}`, `--config=${simConfig}`],
    log: join(logDir, `${prefix}${name}.log`),
  });
}

/** Waits until each of `resources` (kind/name in the vm namespace) is operational; a failed one fails the start. */
export async function resourcesOperational(
  kubectl: Kubectl,
  resources: string[],
  operator: DaemonRecord,
): Promise<void> {
  for (const resource of resources) {
    await waitFor(
      async () => {
        const obj = await kubectl.getJson<{ status?: { updateStatus?: string; reason?: string } }>([
          resource,
          '-n',
          vmNamespace,
        ]);
        if (obj.status?.updateStatus === 'failed')
          throw new Error(`${resource} failed: ${obj.status.reason}`);
        return obj.status?.updateStatus === 'operational' ? true : undefined;
      },
      { part: `${operator.name} (${resource})`, log: operator.log, pid: operator.pid, timeoutMs: 180_000 },
    );
  }
}

export async function up(options: SandboxOptions = {}): Promise<SandboxState> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[sandbox] ${line}\n`));
  const started = Date.now();
  // Each step's length goes to the log and, once state.json exists, into it (startSteps).
  let recordSteps: SandboxState | undefined;
  const steps = new StartSteps({ now: Date.now }, (step) => {
    log(`step "${step.step}": ${step.seconds.toFixed(1)} s${step.failed ? ' (failed)' : ''}`);
    if (recordSteps === undefined) return;
    recordSteps.startSteps = steps.steps;
    writeState(recordSteps);
  });
  const time: TimeStep = (step, work) => steps.time(step, work);
  const stateDir = resolve(options.stateDir ?? defaultStateDir());
  const operatorMode = options.operator ?? operatorFromEnv();
  const previous = readState(stateDir);
  if (previous?.daemons.some((d) => isAlive(d.pid))) {
    throw new StartError('sandbox', `a sandbox is already running in ${stateDir}: run "sandbox down" first`);
  }
  rmSync(stateDir, { recursive: true, force: true });
  const logDir = join(stateDir, 'logs');
  const pkiDir = join(stateDir, 'pki');
  mkdirSync(logDir, { recursive: true });
  // First thing in the folder: the process starting this sandbox, so that a prune never takes a sandbox that is
  // still starting (its state.json comes only after the build, which can take many minutes; test/sandbox/helper.ts).
  writeOwner(stateDir, options.owner ?? process.pid);

  log(`building missing binaries into ${join(cacheDir(), 'bin')} ...`);
  const withArgoCd = options.argocd ?? process.env.VMZONES_SANDBOX_ARGOCD === '1';
  // Argo CD is built only by a sandbox that starts it. Under npm test nothing is built here (its build phase built
  // every binary, Argo CD included): a missing one fails naming it. Elsewhere (a file run by hand, the demo, the
  // benches) a build is bounded, so a stuck or starved build fails naming the binary and its time.
  const buildStarted = Date.now();
  const bound = {
    timeoutMs: sandboxBuildTimeoutSeconds() * 1000,
    boundBy: `${buildTimeoutVariable}, default ${defaultBuildTimeoutSeconds} s`,
  };
  const binaries = await time('build missing binaries', () =>
    buildAll(withArgoCd ? bound : { ...bound, except: ['argocd'] }),
  );
  const buildSeconds = (Date.now() - buildStarted) / 1000;
  if (buildSeconds >= 1) log(`binaries built in ${buildSeconds.toFixed(1)} s`);
  const zoneClusters = options.zoneClusters ?? 0;
  const perCluster = options.zonesPerZoneCluster ?? 1;
  const remoteCount = zoneClusters * perCluster;
  const zones = zonesFor(options.zones ?? (zoneClusters > 0 ? remoteCount + 1 : 2), options.zoneKind);
  if (
    !Number.isInteger(perCluster) ||
    perCluster < 1 ||
    remoteCount > zones.length ||
    (zoneClusters > 0 && operatorMode !== 'real')
  ) {
    throw new StartError(
      'sandbox',
      `zoneClusters ${zoneClusters} of ${perCluster} zones each needs the real operator and as many zones`,
    );
  }
  const remoteZones = zones.slice(zones.length - remoteCount);
  const clusterZones = Array.from({ length: zoneClusters }, (_, i) =>
    remoteZones.slice(i * perCluster, (i + 1) * perCluster),
  );
  for (const group of clusterZones) {
    const name = `cluster-${(group[0]?.zone ?? '').replace(/^zone-/, '')}`;
    for (const z of group) z.cluster = name;
  }
  const pluginArgs: PluginExtraArgs =
    zoneClusters === 0
      ? (options.pluginArgs ?? {})
      : Object.fromEntries(
          (['vmzones/step', 'vmzones/gates'] as const).map((p) => [
            p,
            [
              ...(options.pluginArgs?.[p] ?? []),
              `--cluster-secrets-namespace=${controllerNamespace}`,
              // zone-cluster-rbac.yaml binds with a RoleBinding: the reconciler lists per namespace there.
              `--watch-namespaces=${vmNamespace}`,
            ],
          ]),
        );
  if (options.zoneKind !== undefined && options.zoneKind !== 'VMCluster' && operatorMode !== 'real') {
    throw new StartError(
      'sandbox',
      `${options.zoneKind} zones need the real operator (the simulated one serves VMCluster only)`,
    );
  }
  const logZones = options.zoneKind === 'VLCluster';
  if (logZones && zoneClusters > 0) {
    throw new StartError('sandbox', 'VLCluster zones live in the hub only (no zoneClusters)');
  }
  const plugin = options.plugin === false ? undefined : pluginLocation();
  if (options.plugin === true && !plugin) {
    throw new StartError('plugin', `dist/vmzones.mjs is missing in ${repoRoot}: run "npm run build" first`);
  }
  const kubeconfig = join(stateDir, 'kubeconfig');
  const state: SandboxState = {
    stateDir,
    kubeconfig,
    startedAt: new Date().toISOString(),
    apiServer: '',
    zones,
    vmNamespace,
    controllerNamespace,
    plugin,
    binaries,
    operator: operatorMode,
    daemons: [],
    endpointsFile: join(stateDir, 'endpoints.json'),
    processGroup: processGroupOf(process.pid),
    buildSeconds,
    startSteps: steps.steps,
  };
  writeState(state);
  recordSteps = state;

  // Starts that run beside the hub's (the zone clusters): a failed start tears down only once they ended.
  const backgroundStarts: Promise<unknown>[] = [];
  let tearingDown = false;
  // The zone clusters' registration awaits it; a failed start rejects it, so that they end too.
  const hubNamespaces = Promise.withResolvers<void>();
  hubNamespaces.promise.catch(() => undefined);
  const daemon = (spec: Parameters<typeof startDaemon>[0]): DaemonRecord => {
    if (options.signal?.aborted) throw new StartError(spec.name, 'interrupted');
    if (tearingDown) throw new StartError(spec.name, 'the start failed elsewhere');
    const record = startDaemon(spec);
    state.daemons.push(record);
    writeState(state);
    log(`started ${spec.name} (pid ${record.pid}), log ${spec.log}`);
    return record;
  };

  // Starts of one npm test run take turns (test/sandbox/start-slots.ts); the build above does not need a turn.
  const releaseStartSlot = await time('wait for a start slot', () => takeStartSlot());
  try {
    await time('pki and bin folder', () => {
      execFileSync(binaries.sandboxctl, ['pki', '--dir', pkiDir]);
      writeBinDir(stateDir, binaries);
    });

    state.apiServer = await startControlPlane({
      time,
      daemon,
      binaries,
      stateDir,
      pkiDir,
      logDir,
      name: 'sandbox',
    });
    writeFileSync(kubeconfig, kubeconfigYaml(state.apiServer, pkiDir), { mode: 0o600 });
    writeState(state);
    const kubectl = new Kubectl(binaries.kubectl, kubeconfig);

    // The zone clusters start beside the hub (their own etcd, API server, CRDs, operator and zone): only their
    // registration in the hub waits for the hub's namespaces, and the hub's VMAgent and VMUser for their URLs.
    let zoneClustersStarted: Promise<ZoneClusterState[]> | undefined;
    if (remoteZones.length > 0) {
      log(
        `starting ${clusterZones.length} zone clusters (${clusterZones.map((g) => `${g[0]?.cluster}: ${g.map((z) => z.zone).join(', ')}`).join('; ')}) ...`,
      );
      let podNetwork: PodNetwork | undefined;
      if (options.zonePodNetwork === true) {
        // Owned by the hub's etcd, the first daemon a sandbox starts and the last it stops: a namespace whose owner
        // is gone belongs to a sandbox that no longer runs, and the next start with a pod network removes it.
        const owner = state.daemons.find((d) => d.name === 'etcd');
        if (owner === undefined) throw new StartError('pod network', 'the hub etcd is not recorded');
        for (const removed of pruneStalePodNetworks(isAlive)) log(`removed the stale pod network ${removed}`);
        podNetwork = createPodNetwork(owner.pid);
        state.podNetwork = podNetwork;
        writeState(state);
        log(`pod network ${podNetwork.netns}: Pods at ${podNetwork.podAddress} (${podNetwork.subnet})`);
      }
      zoneClustersStarted = Promise.all(
        clusterZones.map((group, i) =>
          startZoneCluster({
            time,
            daemon,
            binaries,
            stateDir,
            logDir,
            name: group[0]?.cluster ?? '',
            zones: group,
            index: i + 1,
            hub: kubectl,
            hubReady: hubNamespaces.promise,
            secretsNamespace: controllerNamespace,
            readyTimeoutSeconds: options.readyTimeoutSeconds ?? 60,
            podRestartSeconds: options.podRestartSeconds ?? 10,
            ...(podNetwork === undefined ? {} : { podNetwork }),
          }),
        ),
      ).then((byCluster) => byCluster.flat());
      // Awaited below; a failure meanwhile must not end the process as an unhandled rejection.
      zoneClustersStarted.catch(() => undefined);
      backgroundStarts.push(zoneClustersStarted);
    }

    const node = await startNodeDaemons({
      daemon,
      binaries,
      stateDir,
      pkiDir,
      logDir,
      kubeconfig,
      name: 'sandbox',
    });

    log('installing the Argo Rollouts and VictoriaMetrics CRDs ...');
    // One kubectl for all (each run pays its start and discovery): the namespaces first, then what goes in them.
    const hubBase = join(stateDir, 'hub-base.yaml');
    writeFileSync(
      hubBase,
      [namespace(controllerNamespace), namespace(vmNamespace), argoRolloutsConfig(plugin, pluginArgs)]
        .map((o) => JSON.stringify(o))
        .join('\n---\n'),
    );
    await time('apply namespaces, config, CRDs', () =>
      kubectl.applyFiles([
        hubBase,
        argoCrdsFile(stateDir),
        vmCrdsFile(stateDir, operatorMode, { vmDistributed: options.vmDistributed === true }),
      ]),
    );
    hubNamespaces.resolve();
    await time('CRDs established', () => crdsEstablished(kubectl));

    await time('node daemons ready', () => nodeDaemonsReady(node, kubectl));

    let pluginKubeconfig = kubeconfig;
    if (options.faultProxy ?? process.env.VMZONES_SANDBOX_FAULT_PROXY === '1') {
      const proxyPort = await freePort();
      const controlPort = await freePort();
      const proxy = daemon({
        name: 'fault-proxy',
        command: process.execPath,
        args: [
          join(repoRoot, 'test', 'sandbox', 'fault-proxy-daemon.ts'),
          `--upstream=${state.apiServer}`,
          `--pki=${pkiDir}`,
          `--port=${proxyPort}`,
          `--control-port=${controlPort}`,
        ],
        log: join(logDir, 'fault-proxy.log'),
        ports: [proxyPort, controlPort],
      });
      const controlUrl = `http://127.0.0.1:${controlPort}`;
      await time('fault proxy ready', () =>
        waitFor(() => httpOk(`${controlUrl}/stats`), {
          part: 'fault-proxy',
          log: proxy.log,
          pid: proxy.pid,
          timeoutMs: 15_000,
        }),
      );
      pluginKubeconfig = join(stateDir, 'plugin-kubeconfig');
      writeFileSync(pluginKubeconfig, kubeconfigYaml(`https://127.0.0.1:${proxyPort}`, pkiDir), {
        mode: 0o600,
      });
      state.faultProxy = { url: `https://127.0.0.1:${proxyPort}`, controlUrl, pluginKubeconfig };
      writeState(state);
    }

    // The controller comes up (it copies the Node binary for each plugin first) while the operator creates the
    // zones: its health is awaited after theirs, not before the operator starts.
    let controllerReady: Promise<void> = Promise.resolve();
    if (options.rolloutsController !== false) {
      mkdirSync(join(stateDir, 'rollouts-controller'), { recursive: true });
      const spec = controllerSpec(state, pluginKubeconfig, await freePort(), await freePort());
      const controller = daemon(spec);
      controllerReady = controllerHealthy(controller, spec);
      // Awaited below; a failure meanwhile must not end the process as an unhandled rejection.
      controllerReady.catch(() => undefined);
    }

    // The hub's zones are created while the operator starts, so that its first reconcile finds them; without zone
    // clusters the VMAgent, VMAuth and VMUser too (with them, those wait for the clusters' URLs).
    const builtVersion = versions.victoriaMetrics;
    const hubZones = zones.filter((z) => z.cluster === undefined);
    const writer = logZones
      ? { kind: 'VLAgent', name: vlagentName, resource: `vlagent/${vlagentName}` }
      : { kind: 'VMAgent', name: vmagentName, resource: `vmagent/${vmagentName}` };
    log(`creating ${hubZones.length} zones, ${writer.name} and vmauth in namespace ${vmNamespace} ...`);
    const zonePorts = await Promise.all(hubZones.map(() => freePort()));
    const zoneObject = (z: Zone, port: number) => {
      if (z.kind === 'VLCluster') return vlCluster(z, versions.victoriaLogs, port);
      if (z.kind === 'VMSingle') return vmSingle(z, builtVersion, port);
      return vmCluster(z, `${builtVersion}-cluster`, port);
    };
    const readPath = async (remote: Record<string, ZoneClusterState>) => [
      logZones
        ? vlAgent(zones, versions.victoriaLogs, await freePort())
        : vmAgent(zones, builtVersion, await freePort(), remote),
      vmAuth(builtVersion, await freePort()),
      vmUser(zones, remote),
    ];
    const hubZoneObjects = hubZones.map((z, i) => zoneObject(z, zonePorts[i] ?? 0));
    const hubObjectsApplied = time(
      zoneClustersStarted === undefined ? 'apply zones, agent, vmauth' : 'apply hub zones',
      async () =>
        kubectl.apply(
          zoneClustersStarted === undefined ? [...hubZoneObjects, ...(await readPath({}))] : hubZoneObjects,
        ),
    );
    // Awaited once the operator runs; a failure meanwhile must not end the process as an unhandled rejection.
    hubObjectsApplied.catch(() => undefined);
    backgroundStarts.push(hubObjectsApplied);
    const operator = await startOperatorAndDataPlane({
      time,
      daemon,
      binaries,
      stateDir,
      logDir,
      kubeconfig,
      name: 'sandbox',
      operator: operatorMode,
      endpointsFile: state.endpointsFile,
      readyTimeoutSeconds: options.readyTimeoutSeconds ?? 60,
      podRestartSeconds: options.podRestartSeconds ?? 10,
      ...(options.operatorWatchNamespaces === undefined
        ? {}
        : { watchNamespaces: options.operatorWatchNamespaces }),
    });
    await hubObjectsApplied;
    if (zoneClustersStarted !== undefined) {
      state.zoneClusters = await time('zone clusters started', () => zoneClustersStarted);
      writeState(state);
      const remote = Object.fromEntries(state.zoneClusters.map((c) => [c.zone, c]));
      const objects = await readPath(remote);
      await time('apply agent, vmauth', () => kubectl.apply(objects));
    }
    const resources = [
      ...hubZones.map((z) => `${z.kind.toLowerCase()}/${z.vmcluster}`),
      writer.resource,
      `vmauth/${vmauthName}`,
    ];
    await time('zones, agent, vmauth operational', () => resourcesOperational(kubectl, resources, operator));
    await time('rollouts controller healthy', () => controllerReady);
    const agent = endpointOf(state, writer.kind, writer.name);
    if (!agent) throw new StartError(operator.name, `${writer.name} endpoint not published`, operator.log);

    const loadgenPort = await freePort();
    const loadgen = daemon({
      name: 'loadgen',
      command: process.execPath,
      args: [
        join(repoRoot, 'test', 'sandbox', 'loadgen.ts'),
        `--target=${agent.url}`,
        '--series=50',
        '--interval-ms=1000',
        `--port=${loadgenPort}`,
        ...(logZones ? ['--mode=logs'] : []),
      ],
      log: join(logDir, 'loadgen.log'),
      ports: [loadgenPort],
    });
    state.loadgenUrl = `http://127.0.0.1:${loadgenPort}`;
    await time('loadgen healthy', () =>
      waitFor(() => httpOk(`${state.loadgenUrl}/health`), {
        part: 'loadgen',
        log: loadgen.log,
        pid: loadgen.pid,
        timeoutMs: 20_000,
      }),
    );
    if (withArgoCd) {
      log('starting Argo CD (redis, repo-server, application controller, API server) and a Git server ...');
      state.argocd = await time('argo cd', () =>
        startArgoCd({
          stateDir,
          logDir,
          kubeconfig,
          kubectl,
          binaries,
          daemon,
          binDir: join(stateDir, 'bin'),
          repoRoot,
        }),
      );
      writeState(state);
    }
    const stray = addressViolations(
      [state, ...[state, ...(state.zoneClusters ?? [])].map((s) => readEndpoints(s))],
      state.podNetwork === undefined ? [] : [state.podNetwork],
    );
    if (stray.length > 0) {
      throw new StartError(
        'sandbox',
        `it hands out addresses outside loopback and its own network namespace: ${stray.join(', ')}`,
      );
    }
    state.startSeconds = (Date.now() - started) / 1000;
    writeState(state);
    return state;
  } catch (error) {
    log('start failed: tearing down what was started ...');
    // Stopping the daemons first ends the waits of the starts beside this one (each polls its daemon's pid); no
    // new daemon starts meanwhile, and what started before the stop is stopped by the second pass.
    tearingDown = true;
    hubNamespaces.reject(new StartError('sandbox', 'the hub failed to start'));
    await stopAll(state);
    await Promise.allSettled(backgroundStarts);
    await stopAll(state);
    throw error;
  } finally {
    releaseStartSlot();
  }
}

/** The Argo Rollouts controller's daemon: the same spec at start and at a restart (same ports, same folder). */
function controllerSpec(
  state: SandboxState,
  pluginKubeconfig: string,
  metricsPort: number,
  healthzPort: number,
): DaemonSpec {
  return {
    name: controllerDaemon,
    command: state.binaries['rollouts-controller'],
    args: [
      `--kubeconfig=${state.kubeconfig}`,
      `--metricsport=${metricsPort}`,
      `--healthzPort=${healthzPort}`,
      '--leader-elect=false',
      '--loglevel=info',
    ],
    // plugin-bin/ is created relative to the working directory; the plugin inherits KUBECONFIG (the
    // controller's own client uses --kubeconfig, which wins over KUBECONFIG in client-go).
    cwd: join(state.stateDir, 'rollouts-controller'),
    env: { ...process.env, POD_NAMESPACE: controllerNamespace, KUBECONFIG: pluginKubeconfig },
    log: join(state.stateDir, 'logs', 'rollouts-controller.log'),
    ports: [metricsPort, healthzPort],
  };
}

const controllerDaemon = 'rollouts-controller';

async function controllerHealthy(record: DaemonRecord, spec: DaemonSpec): Promise<void> {
  await waitFor(() => httpOk(`http://127.0.0.1:${spec.ports?.[1]}/healthz`), {
    part: controllerDaemon,
    log: record.log,
    pid: record.pid,
    timeoutMs: 60_000,
  });
}

/**
 * A crash of the controller's pod: SIGKILL of its whole process group (the controller and the plugin processes
 * it started, as a container's processes die together), then the same controller starts again and is healthy.
 */
export async function crashAndRestartController(stateDir: string): Promise<SandboxState> {
  const state = readState(resolve(stateDir));
  const index = state?.daemons.findIndex((d) => d.name === controllerDaemon) ?? -1;
  const old = state?.daemons[index];
  if (state === undefined || old === undefined) throw new Error(`no ${controllerDaemon} runs in ${stateDir}`);
  await killDaemon(old);
  const [metricsPort = 0, healthzPort = 0] = old.ports;
  const spec = controllerSpec(
    state,
    state.faultProxy?.pluginKubeconfig ?? state.kubeconfig,
    metricsPort,
    healthzPort,
  );
  const record = startDaemon(spec);
  state.daemons[index] = record;
  writeState(state);
  await controllerHealthy(record, spec);
  return state;
}

/**
 * The order a teardown stops daemons in: everything that talks to an API server first (the data plane, the
 * controllers, the kubelet), then the API servers, then etcd; the daemons of one tier stop side by side, each with
 * its own grace period (a tier takes as long as its slowest daemon, not the sum).
 */
export function stopTiers(daemons: readonly DaemonRecord[]): DaemonRecord[][] {
  const tierOf = (d: DaemonRecord) =>
    d.name.endsWith('etcd') ? 2 : d.name.endsWith('kube-apiserver') ? 1 : 0;
  return [0, 1, 2].map((tier) => daemons.filter((d) => tierOf(d) === tier)).filter((t) => t.length > 0);
}

async function stopAll(state: SandboxState): Promise<void> {
  for (const tier of stopTiers(state.daemons)) await Promise.all(tier.map((record) => stopDaemon(record)));
  if (state.podNetwork !== undefined) removePodNetwork(state.podNetwork);
}

export interface DownReport {
  stopped: string[];
  portsStillBound: number[];
  /** How long the teardown took. */
  seconds: number;
}

/** Takes down every sandbox under `root` that a process of `processGroup` started and left running. */
export async function downStartedBy(
  processGroup: number,
  root = join(cacheDir(), 'sandbox'),
): Promise<string[]> {
  if (!existsSync(root)) return [];
  const taken: string[] = [];
  for (const name of readdirSync(root)) {
    const dir = join(root, name);
    const state = readState(dir);
    if (state?.processGroup !== processGroup || !state.daemons.some((d) => isAlive(d.pid))) continue;
    await down(dir);
    taken.push(dir);
  }
  return taken;
}

export async function down(stateDir = defaultStateDir()): Promise<DownReport> {
  const started = Date.now();
  const state = readState(resolve(stateDir));
  if (!state) return { stopped: [], portsStillBound: [], seconds: 0 };
  const stopped = state.daemons.filter((d) => isAlive(d.pid)).map((d) => d.name);
  const zoneUrls = [state, ...(state.zoneClusters ?? [])]
    .flatMap((s) => readEndpoints(s))
    .map((e) => new URL(e.url));
  await stopAll(state);
  const portsStillBound: number[] = [];
  for (const port of state.daemons.flatMap((d) => d.ports)) {
    if (!(await isPortFree(port))) portsStillBound.push(port);
  }
  for (const url of zoneUrls) {
    if (!(await isPortFree(Number(url.port), url.hostname))) portsStillBound.push(Number(url.port));
  }
  return { stopped, portsStillBound, seconds: (Date.now() - started) / 1000 };
}

export interface PartStatus {
  name: string;
  pid: number;
  alive: boolean;
  log: string;
}

export function status(
  stateDir = defaultStateDir(),
): { state: SandboxState; parts: PartStatus[] } | undefined {
  const state = readState(resolve(stateDir));
  if (!state) return undefined;
  const parts = state.daemons.map((d) => ({ name: d.name, pid: d.pid, alive: isAlive(d.pid), log: d.log }));
  return { state, parts };
}
