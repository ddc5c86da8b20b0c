// The install as a platform team runs it: manifests/kustomize built with kustomize over the upstream install.yaml
// and applied to the sandbox's API server; the init container of the Deployment it renders, run from the unpacked
// image; then the statically built Argo Rollouts controller, chrooted into a root that holds what distroless/static
// holds, read-only, as uid 999, with plugin-bin/ and /tmp as its only writable folders, the runtime volume mounted
// read-only and the service account it would get in the pod. It walks a three-zone change with the gates to
// Healthy. Figures: bytes written to the emptyDirs, the plugins' RSS, controller start to both handshakes.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { installedAt, pluginEntry } from '../../../scripts/package.ts';
import { applyAnalysisTemplates } from '../../sandbox/analysis-templates.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { controllerNamespace, vmNamespace } from '../../sandbox/manifests.ts';
import { freePort } from '../../sandbox/ports.ts';
import { type DaemonRecord, startDaemon } from '../../sandbox/processes.ts';
import {
  cluster,
  eventually,
  pluginStatuses,
  rolloutCanProgress,
  rolloutObject,
  rolloutState,
  sandboxKube,
  withRoundSpacing,
  zoneSpec,
} from '../step/harness.ts';
import {
  buildPayload,
  type Container,
  deploymentSchema,
  type Payload,
  type PodSpec,
  renderOverlay,
} from './payload.ts';
import { containerEnv, distrolessStaticRoot, rootCommand } from './root.ts';

const controllerHome = '/home/argo-rollouts';
let dir: string;
let payload: Payload;
let sandbox: Sandbox;
let pod: PodSpec;
/** The host folders behind the pod's emptyDirs, by volume name. */
const volumes = new Map<string, string>();
let controllerStart = 0;
let controller: DaemonRecord;
let root: string;
const report: string[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vmzones-empty-root-'));
  chmodSync(dir, 0o755); // uid 999 walks into the roots below
  payload = buildPayload(dir);
  sandbox = await startSandbox({ zones: 3, plugin: false, rolloutsController: false, podRestartSeconds: 5 });
});

after(async () => {
  await sandbox?.stop();
  if (report.length) process.stdout.write(`\n${report.join('\n')}\n`);
  rmSync(dir, { recursive: true, force: true });
});

test('the kustomize overlay applies to the API server, and the Deployment it created carries the runtime', async () => {
  const rendered = renderOverlay(dir);
  const started = Date.now();
  await sandbox.kubectl.run([
    'apply',
    '--server-side',
    '--force-conflicts',
    '--field-manager=kustomize-overlay',
    '-f',
    rendered,
  ]);
  report.push(`kustomize overlay applied (server-side) in ${Date.now() - started} ms`);
  const deployment = deploymentSchema.parse(
    await sandbox.kubectl.getJson(['deployment', 'argo-rollouts', '-n', controllerNamespace]),
  );
  pod = deployment.spec.template.spec;
  assert.deepEqual(
    pod.initContainers.map((c) => c.name),
    ['vmzones-runtime'],
  );
  const config = await sandbox.kubectl.getJson<{ data: Record<string, string> }>([
    'configmap',
    'argo-rollouts-config',
    '-n',
    controllerNamespace,
  ]);
  assert.match(config.data.stepPlugins ?? '', /vmzones\/step/);
  assert.match(config.data.metricProviderPlugins ?? '', /vmzones\/gates/);
  // The default install is namespace-scoped (manifests/kustomize/namespaced): a RoleBinding where the zones are.
  await sandbox.kubectl.getJson(['rolebinding', 'vmzones', '-n', vmNamespace]);
  assert.match(config.data.stepPlugins ?? '', new RegExp(`--watch-namespaces=${vmNamespace}\\]`));
});

function container(name: string, list: Container[]): Container {
  const found = list.find((c) => c.name === name);
  assert.ok(found, `container ${name} in the applied Deployment`);
  return found;
}

function emptyDir(name: string): string {
  let path = volumes.get(name);
  if (!path) {
    assert.ok(
      pod.volumes.some((v) => v.name === name && v.emptyDir),
      `volume ${name} is an emptyDir`,
    );
    path = join(dir, 'volumes', name);
    mkdirSync(path, { recursive: true });
    chmodSync(path, 0o777); // how the kubelet creates an emptyDir
    volumes.set(name, path);
  }
  return path;
}

function bytesUnder(path: string): number {
  return readdirSync(path, { withFileTypes: true }).reduce((sum, e) => {
    const child = join(path, e.name);
    return sum + (e.isDirectory() ? bytesUnder(child) : statSync(child).size);
  }, 0);
}

test('the init container, run from the unpacked image as its Deployment says, fills the runtime volume', () => {
  const init = container('vmzones-runtime', pod.initContainers);
  const uid = init.securityContext?.runAsUser ?? Number(payload.config.User);
  const { command, args } = rootCommand({
    root: payload.imageRoot,
    binds: init.volumeMounts.map((m) => ({ host: emptyDir(m.name), at: m.mountPath, readOnly: m.readOnly })),
    uid,
    cwd: '/',
    argv: [...payload.config.Entrypoint, ...(init.args ?? payload.config.Cmd)],
  });
  const result = spawnSync(command, args, { encoding: 'utf8', env: { PATH: process.env.PATH } });
  assert.equal(result.status, 0, `init container: ${result.stderr}`);
  const runtimeVolume = emptyDir('vmzones-runtime');
  for (const file of payload.runtime.files) {
    assert.equal(statSync(join(runtimeVolume, file.path)).size, file.bytes, file.path);
  }
  report.push(`runtime emptyDir (init container copy): ${bytesUnder(runtimeVolume)} bytes`);
});

function recordDaemon(record: DaemonRecord): void {
  // The sandbox's teardown stops what its state file lists.
  const stateFile = join(sandbox.state.stateDir, 'state.json');
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as { daemons: DaemonRecord[] };
  state.daemons.push(record);
  writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`);
}

test('the static controller starts in the distroless-like read-only root as uid 999 with the Deployment’s volumes', async () => {
  const binary = sandbox.state.binaries['rollouts-controller'];
  const ldd = spawnSync('ldd', [binary], { encoding: 'utf8' });
  assert.match(
    `${ldd.stdout}${ldd.stderr}`,
    /not a dynamic executable/,
    'the controller is statically linked',
  );
  const main = container('argo-rollouts', pod.containers);
  assert.equal(main.image, 'quay.io/argoproj/argo-rollouts:v1.10.1');
  const token = (
    await sandbox.kubectl.run([
      'create',
      'token',
      pod.serviceAccountName,
      '-n',
      controllerNamespace,
      '--duration=2h',
    ])
  ).trim();
  root = join(dir, 'controller-root');
  const serviceAccount = '/var/run/secrets/kubernetes.io/serviceaccount';
  distrolessStaticRoot(root, {
    '/bin/rollouts-controller': readFileSync(binary),
    [`${serviceAccount}/token`]: token,
    [`${serviceAccount}/ca.crt`]: readFileSync(join(sandbox.state.stateDir, 'pki', 'ca.crt')),
    [`${serviceAccount}/namespace`]: controllerNamespace,
  });
  const mounts = main.volumeMounts.map((m) => ({
    host: emptyDir(m.name),
    at: m.mountPath,
    readOnly: m.readOnly,
  }));
  assert.deepEqual(mounts.map((m) => [m.at, m.readOnly ?? false]).sort(), [
    [`${controllerHome}/plugin-bin`, false],
    [installedAt, true],
    ['/tmp', false],
  ]);
  // The Deployment passes no flags. The two ports are moved off 8090/8080 because loopback is shared here.
  const metricsPort = await freePort();
  const healthzPort = await freePort();
  const { command, args } = rootCommand({
    root,
    binds: mounts,
    uid: 999,
    cwd: controllerHome,
    argv: [
      '/bin/rollouts-controller',
      ...(main.args ?? []),
      `--metricsport=${metricsPort}`,
      `--healthzPort=${healthzPort}`,
    ],
  });
  const api = new URL(sandbox.state.apiServer);
  controllerStart = Date.now();
  controller = startDaemon({
    name: 'rollouts-controller-chroot',
    command,
    args,
    env: containerEnv(controllerHome, {
      HOSTNAME: 'argo-rollouts-0',
      KUBERNETES_SERVICE_HOST: api.hostname,
      KUBERNETES_SERVICE_PORT: api.port,
    }),
    log: join(sandbox.state.stateDir, 'logs', 'rollouts-controller-chroot.log'),
    ports: [metricsPort, healthzPort],
  });
  recordDaemon(controller);
  await eventually(
    'the chrooted controller to be healthy',
    async () => ((await fetch(`http://127.0.0.1:${healthzPort}/healthz`)).ok ? true : undefined),
    60_000,
    250,
  );
  report.push(
    `controller healthy ${Date.now() - controllerStart} ms after start (chroot, uid 999, read-only root)`,
  );
});

interface PluginProcess {
  pid: number;
  role: string;
  rssKiB: number;
  /** Of rssKiB: the heap and other private memory, and pages of mapped files (node's binary, the libraries). */
  anonKiB: number;
  fileKiB: number;
}

/** The plugin processes of our controller: its process group, the runtime's bundle on the command line. */
function pluginProcesses(): PluginProcess[] {
  const found: PluginProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== controller.pid) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!argv.includes(`${installedAt}/vmzones.mjs`)) continue;
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
      const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      found.push({
        pid: Number(entry),
        role: /ARGO_ROLLOUTS_RPC_PLUGIN=(\w+)/.exec(environ)?.[1] ?? '?',
        rssKiB: kib('VmRSS'),
        anonKiB: kib('RssAnon'),
        fileKiB: kib('RssFile'),
      });
    } catch {
      // the process ended meanwhile
    }
  }
  return found;
}

test('a three-zone change walks to Healthy under the chrooted controller, steps and gates running as plugins', async () => {
  const kube = sandboxKube(sandbox);
  await applyAnalysisTemplates(sandbox.kubectl);
  const name = 'victoria-metrics';
  // The project's gates, their scrape rounds 1.5 s apart (withRoundSpacing in test/e2e/step/harness.ts).
  const steps = withRoundSpacing(
    renderSteps(parseSpecDocument(stringify(zoneSpec({}))), { pauseBetweenZones: '5s' }),
  );
  await sandbox.kubectl.apply([rolloutObject(name, zoneSpec({}), steps)]);
  await eventually(
    'revision 1 to be Healthy',
    async () => ((await rolloutState(kube, name)).status.phase === 'Healthy' ? true : undefined),
    { timeoutMs: 180_000, unless: rolloutCanProgress(kube, name) },
  );
  const first = (await rolloutState(kube, name)).status.currentPodHash;
  const change = { vmselect: { extraArgs: { 'search.maxQueryDuration': '45s' } } };
  await sandbox.kubectl.apply([rolloutObject(name, zoneSpec(change), steps)]);
  const peakRss = new Map<string, PluginProcess>();
  const seen = new Map<number, string>();
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    for (const p of pluginProcesses()) {
      if (p.rssKiB > (peakRss.get(p.role)?.rssKiB ?? 0)) peakRss.set(p.role, p);
      if (!seen.has(p.pid)) {
        seen.set(p.pid, p.role);
        // The plugin runs inside the root, as uid 999.
        assert.equal(readlinkSync(`/proc/${p.pid}/root`), root);
        assert.match(readFileSync(`/proc/${p.pid}/status`, 'utf8'), /^Uid:\s+999\s+999\s+999\s+999$/m);
      }
    }
    const state = await rolloutState(kube, name);
    if (state.status.phase === 'Healthy' && state.status.currentPodHash !== first) {
      assert.equal(state.status.stableRS, state.status.currentPodHash);
      break;
    }
    assert.ok(!state.status.abort, `the rollout aborted: ${state.status.message}`);
    assert.ok(Date.now() < deadline, `the walk did not finish in 15 min: ${JSON.stringify(state.status)}`);
    await sleep(1000);
  }
  for (const zone of ['zone-a', 'zone-b', 'zone-c']) {
    const spec = (await cluster(kube, `vm-${zone}`)).spec as {
      vmselect?: { extraArgs?: Record<string, string> };
    };
    assert.equal(spec.vmselect?.extraArgs?.['search.maxQueryDuration'], '45s', `${zone} has the change`);
  }
  const runs = pluginStatuses(await rolloutState(kube, name)).filter((s) => s.operation === 'Run');
  assert.ok(runs.length >= 3 && runs.every((s) => s.phase === 'Successful'), JSON.stringify(runs));
  assert.deepEqual([...new Set(seen.values())].sort(), ['metricprovider', 'step'], 'both plugins ran');

  const log = readFileSync(controller.log, 'utf8');
  const handshakes = handshakeTimes(log);
  report.push(
    `bytes written to the controller's emptyDirs: plugin-bin ${bytesUnder(emptyDir('plugin-bin'))}, /tmp ${bytesUnder(emptyDir('tmp'))}`,
    `plugin processes' peak RSS: ${[...peakRss]
      .map(([role, p]) => `${role} ${mib(p.rssKiB)} MiB (anon ${mib(p.anonKiB)}, file ${mib(p.fileKiB)})`)
      .join(', ')}`,
    `handshakes (controller start -> plugin's "using plugin"; plugin exec -> handshake): ${handshakes
      .map((h) => `${h.path} ${h.fromControllerStartMs} ms (${h.execToHandshakeMs} ms)`)
      .join(', ')}`,
  );
  assert.equal(handshakes.length, 2, `two plugin handshakes in ${controller.log}`);
});

const mib = (kib: number) => (kib / 1024).toFixed(1);

interface Handshake {
  path: string;
  fromControllerStartMs: number;
  execToHandshakeMs: number;
}

/** go-plugin's client log lines in the controller's output: "starting plugin: path=..." then "using plugin". */
function handshakeTimes(log: string): Handshake[] {
  const pending: { path: string; at: number }[] = [];
  const done: Handshake[] = [];
  for (const line of log.split('\n')) {
    const at = Date.parse(line.slice(0, line.indexOf(' ')));
    const starting = /plugin: starting plugin: path=(\S+)/.exec(line);
    if (starting?.[1] && !done.some((d) => d.path === starting[1])) pending.push({ path: starting[1], at });
    else if (/plugin: using plugin/.test(line) && pending.length > 0) {
      const first = pending.shift();
      if (first) {
        done.push({
          path: first.path,
          fromControllerStartMs: at - controllerStart,
          execToHandshakeMs: at - first.at,
        });
      }
    }
  }
  return done;
}

test('the plugin the controller copied per plugin name is the loader, not node', () => {
  const pluginBin = emptyDir('plugin-bin');
  const copied = execFileSync('find', [pluginBin, '-type', 'f'], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .sort();
  assert.deepEqual(
    copied.map((p) => p.slice(pluginBin.length)),
    ['/vmzones/gates', '/vmzones/step'],
  );
  const loader = readFileSync(
    join(
      emptyDir('vmzones-runtime'),
      new URL(pluginEntry(installedAt).location).pathname.slice(installedAt.length),
    ),
  );
  for (const path of copied) assert.ok(readFileSync(path).equals(loader), `${path} is the runtime's loader`);
  report.push(`copied per plugin into plugin-bin/: ${loader.length} bytes (${copied.length} plugins)`);
});
