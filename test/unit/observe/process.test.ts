// The endpoint in a real plugin process, launched as the controller launches it (the go-plugin cookie set, the
// flags in its args): it listens where told, answers over HTTP, reports an unreachable Kubernetes API instead of
// inventing zones, and a bad flag stops the process with a message naming it.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../../../plugin/main.ts', import.meta.url));
const children: ChildProcess[] = [];
after(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** A kubeconfig whose API server refuses connections (port 1 on loopback). */
function unreachableKubeconfig(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vmzones-observe-'));
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
      'users: [{name: u, user: {token: not-a-secret}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n'),
  );
  return path;
}

interface Launched {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function launch(role: string, args: string[]): Launched {
  const child = spawn(process.execPath, [main, ...args], {
    env: { ...process.env, ARGO_ROLLOUTS_RPC_PLUGIN: role, KUBECONFIG: unreachableKubeconfig() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function until<T>(what: string, probe: () => T | undefined, launched: Launched): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen; stderr:\n${launched.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function boundPort(launched: Launched): Promise<number> {
  return until(
    'observe endpoint listening',
    () => {
      const match = /"observe endpoint listening".*"address":"127\.0\.0\.1:(\d+)"/.exec(launched.stderr());
      return match ? Number(match[1]) : undefined;
    },
    launched,
  );
}

test('the step role serves /healthz, /metrics and /status; an unreachable API is said, not papered over', async () => {
  const plugin = launch('step', ['--observe-address', '127.0.0.1:0', '--observe-cache-ttl=1s']);
  const port = await boundPort(plugin);
  await until(
    'the go-plugin handshake',
    () => (plugin.stdout().includes('|netrpc|') ? true : undefined),
    plugin,
  );
  const base = `http://127.0.0.1:${port}`;
  assert.equal(await (await fetch(`${base}/healthz`)).text(), 'ok\n');
  // The snapshot lists Rollouts and VMClusters at once and fails with the first refused list: the other one's
  // error may be counted a moment later.
  const vmclusterError =
    /\nvmzones_kube_api_errors_total\{verb="list",resource="VMCluster",kind="unavailable",role="step"\} \d+\n/;
  let page = '';
  for (const deadline = Date.now() + 15_000; !vmclusterError.test(page) && Date.now() < deadline; ) {
    page = await (await fetch(`${base}/metrics`)).text();
    if (!vmclusterError.test(page)) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.match(page, /\nvmzones_zone_snapshot_success\{role="step"\} 0\n/);
  assert.doesNotMatch(page, /\nvmzones_zone_maintenance\{/);
  assert.match(page, vmclusterError);
  assert.match(page, /\nprocess_cpu_seconds_total\{role="step"\} [\d.e-]+\n/);
  assert.match(page, /\nnodejs_eventloop_lag_seconds\{role="step"\}/);
  assert.doesNotMatch(page, /not-a-secret/);
  const status = await fetch(`${base}/status`);
  assert.equal(status.status, 503);
  const body = (await status.json()) as {
    role: string;
    pid: number;
    kubernetes: { ok: boolean; error: string };
  };
  assert.equal(body.role, 'step');
  assert.equal(body.pid, plugin.child.pid);
  assert.equal(body.kubernetes.ok, false);
  assert.match(body.kubernetes.error, /listing (Rollout|VMCluster) in all namespaces/);
  assert.doesNotMatch(JSON.stringify(body), /not-a-secret/);
});

test('the gates role serves its own metrics and leaves zone states to the step role', async () => {
  const plugin = launch('metricprovider', ['--observe-address=:0']);
  const port = await boundPort(plugin);
  const page = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  assert.match(page, /\nprocess_cpu_seconds_total\{role="metricprovider"\}/);
  assert.doesNotMatch(page, /vmzones_zone_/);
  const body = (await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as {
    role: string;
    zones: unknown;
  };
  assert.deepEqual([body.role, body.zones], ['metricprovider', null]);
});

test('a taken port is logged and the plugin still serves the controller', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const taken = (blocker.address() as { port: number }).port;
  try {
    const plugin = launch('step', ['--observe-address', `127.0.0.1:${taken}`]);
    await until(
      'the error',
      () => (plugin.stderr().includes('observe endpoint not started') ? true : undefined),
      plugin,
    );
    assert.match(plugin.stderr(), /EADDRINUSE/);
    await until(
      'the go-plugin handshake',
      () => (plugin.stdout().includes('|netrpc|') ? true : undefined),
      plugin,
    );
    assert.equal(plugin.child.exitCode, null);
  } finally {
    blocker.close();
  }
});

test('a bad observe flag ends the process with exit 1 and a message naming the flag', async () => {
  const plugin = launch('step', ['--observe-address', 'localhost']);
  assert.equal(await plugin.exited, 1);
  assert.match(
    plugin.stderr(),
    /bad observe flag.*--observe-address \\"localhost\\": expected \[HOST\]:PORT/,
  );
  assert.equal(plugin.stdout(), '');
});
