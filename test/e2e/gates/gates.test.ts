// The vmzones/gates metric provider end to end on the sandbox: real kube-apiserver, the real Argo Rollouts
// controller exec'ing dist/vmzones.mjs, real vmagent / vmauth / VictoriaMetrics processes, the real operator
// stopping and restarting zones (its vmselect Pods are what the query gate asks).
//
// Run: npm run build && node --test test/e2e/gates/gates.test.ts

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { applyAnalysisTemplates } from '../../sandbox/analysis-templates.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { exportedSeqs } from '../../sandbox/loadgen-client.ts';
import { readUser } from '../../sandbox/manifests.ts';
import { pidsRunning } from '../../sandbox/processes.ts';
import { repoRoot } from '../../sandbox/sandbox.ts';
import {
  cluster,
  rolloutCanProgress,
  rolloutObject,
  rolloutState,
  routedZones,
  sandboxKube,
  sandboxZones,
  startReadProber,
  startRoutingWatcher,
  stepsFor,
  vmzonesAnnotations,
  withRoundSpacing,
  zoneSpec,
} from '../step/harness.ts';
import { eventually, gateMetric, measure, providerFor, type Reading, rawQueue } from './support.ts';

const ns = 'vm';
const podRestartSeconds = 30;
let sandbox: Sandbox;
let fakeAgent: Server | undefined;

before(async () => {
  // The controller runs dist/vmzones.mjs: build it from these sources.
  execFileSync(process.execPath, ['scripts/build.ts'], { cwd: repoRoot, stdio: 'inherit' });
  // The real operator: its vmselect Pods are what zoneAnswers (in vmzones-zone-healthy) asks, and the data plane
  // starts vmagent with the remote-write URLs its Deployment's pods carry, so the queue directory names the drain
  // gate cross-checks match; see docs/gates.md (sandbox notes).
  sandbox = await startSandbox({ podRestartSeconds, operator: 'real' });
  await applyAnalysisTemplates(sandbox.kubectl);
});

after(async () => {
  fakeAgent?.close();
  if (!sandbox) return;
  const report = await sandbox.stop();
  assert.deepEqual(report.portsStillBound, [], 'no port may stay bound after down');
});

type Vmc = {
  metadata: { generation: number };
  status?: { updateStatus?: string; reason?: string; observedGeneration?: number };
};

const getVmc = (name: string) => sandbox.kubectl.getJson<Vmc>(['vmcluster', name, '-n', ns]);

function patchVmc(name: string, patch: object): Promise<string> {
  return sandbox.kubectl.run([
    'patch',
    'vmcluster',
    name,
    '-n',
    ns,
    '--type=merge',
    '-p',
    JSON.stringify(patch),
  ]);
}

const operational = (vmc: Vmc) =>
  vmc.status?.updateStatus === 'operational' &&
  (vmc.status.observedGeneration ?? 0) >= vmc.metadata.generation;

test('vmclusterReady follows the VMCluster through expanding to operational, and fails on failed', async () => {
  const provider = providerFor(sandbox.state.kubeconfig);
  const metric = gateMetric({
    gate: 'vmclusterReady',
    vmcluster: 'vm-zone-b',
    namespace: ns,
    pollInterval: '2s',
  });
  await patchVmc('vm-zone-b', { spec: { vmstorage: { extraArgs: { 'search.latencyOffset': '7s' } } } });
  const readings = await measure(provider, metric, { timeoutMs: 120_000 });
  const states = readings.map((reading) => reading.figures.updateStatus);
  assert.ok(states.includes('expanding'), `readings saw ${states.join(' → ')}`);
  assert.ok(
    readings.slice(0, -1).every((reading) => reading.result.phase === 'Running'),
    'not ready while expanding',
  );
  const last = readings.at(-1) as Reading;
  assert.equal(last.result.phase, 'Successful', last.result.message);
  assert.equal(last.figures.updateStatus, 'operational');
  assert.equal(last.figures.observedGeneration, last.figures.generation);

  // A spec the operator's validation rejects goes `failed` at once: the gate fails with the reason.
  await patchVmc('vm-zone-b', {
    spec: { vmselect: { serviceSpec: { metadata: { name: 'vmselect-vm-zone-b' }, spec: {} } } },
  });
  const failed = await measure(provider, metric, { timeoutMs: 60_000 });
  const end = failed.at(-1) as Reading;
  assert.equal(end.result.phase, 'Failed');
  assert.match(
    end.result.message ?? '',
    /VMCluster vm\/vm-zone-b failed at generation \d+: .*serviceSpec\.Name cannot be equal/,
  );
  // Fixing it restarts the zone (podRestartSeconds); later tests wait for it where they need it.
  await patchVmc('vm-zone-b', { spec: { vmselect: { serviceSpec: null } } });
});

function rollout(revision: string, roundSpacing: string): object {
  const spec = [
    'vmauth: {vmuser: vmauth-read}',
    'vmagent: {vmagent: vmagent}',
    'zones:',
    '  zone-a: {vmcluster: vm-zone-a}',
    '  zone-b: {vmcluster: vm-zone-b}',
  ].join('\n');
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'gates', namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'gates' } },
      template: {
        metadata: {
          labels: { app: 'gates' },
          annotations: { 'vmzones.io/spec': spec, 'vmzones.io/revision': revision },
        },
        spec: { containers: [{ name: 'placeholder', image: 'registry.k8s.io/pause:3.10' }] },
      },
      strategy: {
        canary: {
          steps: [
            {
              analysis: {
                templates: [{ templateName: 'vmzones-zone-healthy', clusterScope: true }],
                args: [
                  { name: 'zone', value: 'zone-a' },
                  { name: 'roundSpacing', value: roundSpacing },
                ],
              },
            },
          ],
        },
      },
    },
  };
}

interface MeasurementJson {
  phase?: string;
  message?: string;
  value?: string;
  finishedAt?: string;
}
interface AnalysisRunJson {
  metadata: { name: string; ownerReferences?: { kind: string; name: string }[] };
  status?: {
    phase?: string;
    metricResults?: { name: string; phase?: string; measurements?: MeasurementJson[] }[];
  };
}

interface Observation {
  at: number;
  zoneOperational: boolean;
  raw: { pendingDataBytes: number; onDiskBytes: number } | undefined;
  runPhase: string | undefined;
  drain: MeasurementJson | undefined;
}

test('through the real controller: the drain gate waits while the zone is down and while its queue holds data', async (t) => {
  const agentUrl = sandbox.endpoint('VMAgent', 'vmagent').url;
  await sandbox.kubectl.apply([rollout('1', '3s')]);
  await eventually('revision 1 Healthy', async () => {
    const ro = await sandbox.kubectl.getJson<{ status?: { phase?: string } }>(['rollout', 'gates', '-n', ns]);
    return ro.status?.phase === 'Healthy' ? true : undefined;
  });

  // Take zone-a down (pod turnover of podRestartSeconds) while vmagent keeps writing, then start revision 2,
  // whose only step is the zone-healthy analysis of zone-a.
  await patchVmc('vm-zone-a', { spec: { vmstorage: { extraArgs: { 'search.latencyOffset': '6s' } } } });
  await eventually('zone-a expanding', async () =>
    (await getVmc('vm-zone-a')).status?.updateStatus === 'expanding' ? true : undefined,
  );
  await sandbox.kubectl.apply([rollout('2', '3s')]);

  const observations: Observation[] = [];
  let run: AnalysisRunJson | undefined;
  const deadline = Date.now() + 240_000;
  while (Date.now() < deadline) {
    const at = Date.now();
    const [vmc, raw, runs] = await Promise.all([
      getVmc('vm-zone-a'),
      rawQueue(agentUrl, 1).catch(() => undefined),
      sandbox.kubectl.getJson<{ items: AnalysisRunJson[] }>(['analysisrun', '-n', ns]),
    ]);
    run = runs.items.find((item) => item.metadata.ownerReferences?.some((owner) => owner.name === 'gates'));
    const drain = run?.status?.metricResults?.find((result) => result.name === 'vmagent-queue-drained');
    observations.push({
      at,
      zoneOperational: operational(vmc),
      raw,
      runPhase: run?.status?.phase,
      drain: drain?.measurements?.at(-1),
    });
    const phase = run?.status?.phase ?? '';
    if (phase !== '' && phase !== 'Running' && phase !== 'Pending') break;
    await sleep(1000);
  }
  assert.ok(run, 'the Rollout created an AnalysisRun');
  const finalRun = run as AnalysisRunJson;
  const yaml = await sandbox.kubectl.run([
    'get',
    'analysisrun',
    finalRun.metadata.name,
    '-n',
    ns,
    '-o',
    'yaml',
  ]);
  const yamlPath = join(sandbox.state.stateDir, 'drained-analysisrun.yaml');
  writeFileSync(yamlPath, yaml);
  t.diagnostic(`AnalysisRun of the drained zone: ${yamlPath}`);
  assert.equal(finalRun.status?.phase, 'Successful', yaml);

  const during = observations.filter((o) => (o.runPhase ?? '') !== '');
  const zoneDown = during.filter((o) => !o.zoneOperational);
  assert.ok(zoneDown.length > 0, 'the analysis ran while the zone was down');
  for (const o of zoneDown) {
    assert.notEqual(
      o.drain?.phase,
      'Successful',
      `drained reported while the zone was down (${new Date(o.at).toISOString()})`,
    );
  }
  const holding = during.filter((o) => (o.raw?.onDiskBytes ?? 0) > 0);
  assert.ok(holding.length > 0, "vmagent's on-disk queue for the zone held data during the analysis");
  for (const o of holding) {
    assert.notEqual(
      o.drain?.phase,
      'Successful',
      `drained reported while ${o.raw?.onDiskBytes} bytes were queued on disk`,
    );
  }
  // The gate itself saw the backlog: one of its readings showed queued bytes and it kept waiting.
  assert.ok(
    during.some(
      (o) => o.drain?.phase === 'Running' && Number(JSON.parse(o.drain.value || '{}').onDiskPendingBytes) > 0,
    ),
    "a reading of the gate showed the zone's queue holding data",
  );

  const iso = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString());
  const emptied = observations.find(
    (o) => o.zoneOperational && o.at > (holding.at(-1)?.at ?? 0) && o.raw?.onDiskBytes === 0,
  );
  const succeeded = observations.find((o) => o.drain?.phase === 'Successful');
  t.diagnostic(
    `zone down ${iso(zoneDown[0]?.at)} … ${iso(zoneDown.at(-1)?.at)}; on-disk queue up to ` +
      `${Math.max(...holding.map((o) => o.raw?.onDiskBytes ?? 0))} bytes until ${iso(holding.at(-1)?.at)}; ` +
      `queue empty ${iso(emptied?.at)}; gate Successful seen ${iso(succeeded?.at)}`,
  );
  const drain = finalRun.status?.metricResults?.find((result) => result.name === 'vmagent-queue-drained');
  const last = drain?.measurements?.at(-1) as MeasurementJson;
  const figures = JSON.parse(last.value ?? '{}') as Record<string, unknown> & { windowStart: string };
  assert.equal(figures.drained, true);
  assert.equal(figures.pendingDataBytes, 0);
  assert.equal(figures.onDiskPendingBytes, 0);
  assert.equal(figures.zoneReady, true);
  const agent = (figures.agents as Record<string, { windowStart: string; queueIndex: number }>).vmagent;
  assert.equal(agent?.queueIndex, 1);
  const backOnline = observations.find(
    (o, index) => index > 0 && o.zoneOperational && !observations[index - 1]?.zoneOperational,
  );
  assert.ok(backOnline, 'the zone came back during the analysis');
  assert.ok(
    Date.parse(agent?.windowStart ?? '') >= backOnline.at - 2_000,
    `the counted rounds (from ${agent?.windowStart}) all came after the zone was back (${new Date(backOnline.at).toISOString()})`,
  );

  // Independent evidence: the queue is empty and every sample pushed before the zone came back is in it.
  const now = await rawQueue(agentUrl, 1);
  assert.equal(now.onDiskBytes, 0);
  const loadgen = (await (await fetch(sandbox.state.loadgenUrl ?? '')).json()) as {
    lastSeq: number;
    startMs: number;
    intervalMs: number;
  };
  const upTo = Math.floor((backOnline.at - loadgen.startMs) / loadgen.intervalMs) - 1;
  const zoneUrl = sandbox.endpoint('VMCluster', 'vm-zone-a').url;
  let missing: number[] = [];
  await eventually(
    'every sample pushed before the zone came back to be in it',
    async () => {
      const seqs = await exportedSeqs(zoneUrl);
      missing = [];
      for (let seq = 1; seq <= upTo; seq++) if (!seqs.has(seq)) missing.push(seq);
      return missing.length === 0 ? true : undefined;
    },
    30_000,
  ).catch(() => undefined);
  assert.deepEqual(missing, [], 'samples queued while the zone was down reached it');

  await eventually('revision 2 Healthy', async () => {
    const ro = await sandbox.kubectl.getJson<{ status?: { phase?: string } }>(['rollout', 'gates', '-n', ns]);
    return ro.status?.phase === 'Healthy' ? true : undefined;
  });
});

test('an agent pod that stops answering is not drained; drained again once it answers', async () => {
  await eventually(
    'zone-b operational',
    async () => (operational(await getVmc('vm-zone-b')) ? true : undefined),
    120_000,
  );
  const agent = sandbox.endpoint('VMAgent', 'vmagent');
  const provider = providerFor(sandbox.state.kubeconfig);
  const metric = gateMetric({
    gate: 'vmagentQueueDrained',
    namespace: ns,
    vmcluster: 'vm-zone-b',
    vmagent: 'vmagent',
    consecutiveRounds: 2,
    // Further apart than the provider's in-call window (gatesInCallWaitMs, 5 s): each round is a call of its own,
    // so the test stops and resumes the pod between rounds (2 s rounds would all be taken inside one call).
    roundSpacing: '6s',
    timeout: '2m',
    pods: { scrapeTimeout: '1s' },
  });
  let stoppedAt: number | undefined;
  let resumedAt: number | undefined;
  const whileStopped: Reading[] = [];
  try {
    const readings = await measure(provider, metric, {
      timeoutMs: 120_000,
      onReading: async (reading) => {
        if (stoppedAt === undefined) {
          process.kill(agent.pid, 'SIGSTOP'); // the vmagent process hangs: no answer, readiness probe fails
          stoppedAt = Date.now();
          // Resumed after two calls that saw it stopped, not after a time: a call may look several times inside
          // its in-call window (gatesInCallWaitMs), so 8 s can pass within one call.
        } else if (resumedAt === undefined) {
          whileStopped.push(reading);
          if (whileStopped.length < 2) return;
          process.kill(agent.pid, 'SIGCONT');
          resumedAt = Date.now();
        }
      },
    });
    assert.ok(whileStopped.length >= 2, `${whileStopped.length} readings while the pod was stopped`);
    for (const reading of whileStopped) {
      assert.equal(reading.result.phase, 'Running');
      assert.match(reading.result.message ?? '', /pod vm\/vmagent-vmagent-[a-z0-9-]+ is unreachable: /);
      assert.equal(reading.figures.pendingDataBytes, null, 'an unreachable pod makes the figures unknown');
    }
    assert.equal(readings.at(-1)?.result.phase, 'Successful', readings.at(-1)?.result.message);
  } finally {
    if (stoppedAt !== undefined && resumedAt === undefined) process.kill(agent.pid, 'SIGCONT');
  }
});

test('vmauthReloaded waits for a config change to be loaded by every vmauth pod', async () => {
  const provider = providerFor(sandbox.state.kubeconfig);
  const since = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000);
  await sleep(since.getTime() - Date.now());
  const metric = gateMetric({
    gate: 'vmauthReloaded',
    namespace: ns,
    vmauth: 'vmauth',
    since: since.toISOString(),
    pollInterval: '1s',
    timeout: '60s',
  });
  let patched = false;
  const readings = await measure(provider, metric, {
    timeoutMs: 60_000,
    onReading: async (reading) => {
      if (patched) return;
      assert.equal(reading.result.phase, 'Running', 'vmauth loaded nothing after `since` yet');
      assert.match(
        reading.result.message ?? '',
        /1 of 1 vmauth pods have not loaded the config written since/,
      );
      await sandbox.kubectl.run([
        'patch',
        'vmuser',
        'vmauth-read',
        '-n',
        ns,
        '--type=json',
        '-p',
        JSON.stringify([{ op: 'add', path: '/spec/targetRefs/0/paths/-', value: '/vmzones-e2e/.*' }]),
      ]);
      patched = true;
    },
  });
  const last = readings.at(-1) as Reading;
  assert.equal(last.result.phase, 'Successful', last.result.message);
  const pods = last.figures.pods as { evidence?: string; reloadedAt?: string; version?: string }[];
  // The load came after the first reading (the patch was made after it). vmauth's stamp may read up to 2 s early
  // (lib/fasttime, docs/victoriametrics.md): a stamp before `since` proves nothing alone, but being above the
  // stamp the first reading saw, it proves a load after that reading.
  const stamp = Date.parse(pods[0]?.reloadedAt ?? '');
  assert.equal(pods[0]?.evidence, stamp >= since.getTime() ? 'reloadTimestamp' : 'reloadAfterBaseline');
  assert.ok(stamp >= since.getTime() - 2000, `stamp ${pods[0]?.reloadedAt}, since ${since.toISOString()}`);
});

test('through the real controller: unknown gate, bad condition and malformed /metrics are clear Errors', async () => {
  // A pod named by a selector whose /metrics (served here) is not valid text format.
  fakeAgent = createServer((_request, response) =>
    response.end(
      'vmagent_remotewrite_pending_data_bytes{url="1:secret-url",path="/q/1_0000000000000000"} zero\n',
    ),
  );
  await new Promise<void>((resolve) => fakeAgent?.listen(0, '127.0.0.1', resolve));
  const port = (fakeAgent.address() as AddressInfo).port;
  await sandbox.kubectl.apply([
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'fake-agent', namespace: ns, labels: { app: 'fake-agent' } },
      spec: {
        containers: [
          { name: 'agent', image: 'victoriametrics/vmagent', ports: [{ name: 'http', containerPort: port }] },
        ],
      },
    },
  ]);
  await eventually('fake-agent Ready', async () => {
    const pod = await sandbox.kubectl.getJson<{
      status?: { conditions?: { type: string; status: string }[] };
    }>(['pod', 'fake-agent', '-n', ns]);
    return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
  });
  const plugin = (config: object) => ({ plugin: { 'vmzones/gates': config } });
  await sandbox.kubectl.apply([
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AnalysisRun',
      metadata: { name: 'gates-errors', namespace: ns },
      spec: {
        metrics: [
          {
            name: 'unknown-gate',
            consecutiveErrorLimit: 0,
            provider: plugin({ gate: 'vmclusterHappy', zone: 'zone-a' }),
          },
          {
            name: 'bad-condition',
            consecutiveErrorLimit: 0,
            successCondition: 'result.ready | not',
            provider: plugin({ gate: 'vmclusterReady', vmcluster: 'vm-zone-b' }),
          },
          {
            name: 'malformed-metrics',
            consecutiveErrorLimit: 0,
            provider: plugin({
              gate: 'vmagentQueueDrained',
              pods: { selector: 'app=fake-agent' },
              remoteWriteIndex: 1,
              requireZoneReady: false,
            }),
          },
        ],
      },
    },
  ]);
  const run = await eventually(
    'the error AnalysisRun to finish',
    async () => {
      const ar = await sandbox.kubectl.getJson<AnalysisRunJson>(['analysisrun', 'gates-errors', '-n', ns]);
      return ar.status?.phase === 'Error' ? ar : undefined;
    },
    90_000,
  );
  const message = (name: string) => {
    const result = run.status?.metricResults?.find((r) => r.name === name);
    assert.equal(result?.phase, 'Error', name);
    return result?.measurements?.at(-1)?.message ?? '';
  };
  assert.match(
    message('unknown-gate'),
    /^failed to run via plugin: invalid vmzones\/gates config: gate: unknown gate "vmclusterHappy" \(known: vmclusterReady, vmagentQueueDrained, vmauthReloaded, zoneAnswers\)$/,
  );
  assert.match(
    message('bad-condition'),
    /^failed to run via plugin: could not evaluate successCondition "result.ready \| not": /,
  );
  assert.match(
    message('malformed-metrics'),
    /^failed to run via plugin: pod vm\/fake-agent: scraping http:\/\/127.0.0.1:\d+\/metrics: metrics text line 1 \(vmagent_remotewrite_pending_data_bytes\): invalid sample value "zero"$/,
  );
});

test('through the real controller: a terminated run ends a waiting gate Inconclusive, not Successful', async () => {
  await sandbox.kubectl.apply([
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AnalysisRun',
      metadata: { name: 'gates-terminated', namespace: ns },
      spec: {
        metrics: [
          {
            name: 'drained',
            provider: {
              plugin: {
                'vmzones/gates': {
                  gate: 'vmagentQueueDrained',
                  vmcluster: 'vm-zone-b',
                  vmagent: 'vmagent',
                  // The most rounds a gate accepts (plugin/gates/config.ts), far apart: the run is still waiting
                  // when it is terminated.
                  consecutiveRounds: 30,
                  roundSpacing: '5s',
                  timeout: '10m',
                },
              },
            },
          },
        ],
      },
    },
  ]);
  await eventually('a waiting measurement', async () => {
    const ar = await sandbox.kubectl.getJson<AnalysisRunJson>(['analysisrun', 'gates-terminated', '-n', ns]);
    const last = ar.status?.metricResults?.[0]?.measurements?.at(-1);
    return last?.phase === 'Running' && /looks drained in \d+ of the 30/.test(last.message ?? '')
      ? true
      : undefined;
  });
  await sandbox.kubectl.run([
    'patch',
    'analysisrun',
    'gates-terminated',
    '-n',
    ns,
    '--type=merge',
    '-p',
    '{"spec":{"terminate":true}}',
  ]);
  const run = await eventually('the terminated run to finish', async () => {
    const ar = await sandbox.kubectl.getJson<AnalysisRunJson>(['analysisrun', 'gates-terminated', '-n', ns]);
    return ['', 'Running'].includes(ar.status?.phase ?? '') ? undefined : ar;
  });
  const last = run.status?.metricResults?.[0]?.measurements?.at(-1);
  assert.equal(last?.phase, 'Inconclusive');
  assert.equal(last?.message, 'Metric Terminated');
  assert.equal(JSON.parse(last?.value ?? '{}').gate, 'vmagentQueueDrained', 'the last figures are kept');
  assert.equal(run.status?.phase, 'Inconclusive');
});

/** Pids of this sandbox's vmagent processes (the simulated operator plays its Deployment's pod with one). */
const vmagentPids = () => pidsRunning(sandbox.state.binaries.vmagent, sandbox.state.stateDir);

test('a vmagent restarted mid-gate (its counters reset) is not drained until fresh rounds after the restart', async () => {
  const name = 'gates-vmagent-restart';
  const agentUrl = sandbox.endpoint('VMAgent', 'vmagent').url;
  await sandbox.kubectl.apply([
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AnalysisRun',
      metadata: { name, namespace: ns },
      spec: {
        metrics: [
          {
            name: 'drained',
            provider: {
              plugin: {
                'vmzones/gates': {
                  gate: 'vmagentQueueDrained',
                  vmcluster: 'vm-zone-b',
                  vmagent: 'vmagent',
                  consecutiveRounds: 3,
                  // Rounds beyond the in-call window (5 s) end each Measure call with "1 (or 2) of the 3", the
                  // moment this test restarts vmagent; 2 s rounds would pass the gate inside its first call.
                  roundSpacing: '6s',
                  timeout: '5m',
                },
              },
            },
          },
        ],
      },
    },
  ]);
  const lastMeasurement = async () =>
    (
      await sandbox.kubectl.getJson<AnalysisRunJson>(['analysisrun', name, '-n', ns])
    ).status?.metricResults?.[0]?.measurements?.at(-1);
  let message = '';
  await eventually(
    'the gate counting good rounds',
    async () => {
      const last = await lastMeasurement();
      message = `${last?.phase ?? 'no measurement'}: ${last?.message ?? ''}`;
      return last?.phase === 'Running' && /looks drained in [12] of the 3/.test(last.message ?? '')
        ? true
        : undefined;
    },
    180_000,
    500,
  ).catch((error: unknown) => assert.fail(`${String(error)}; last measurement ${message}`));
  const killed = vmagentPids();
  assert.equal(killed.length, 1, 'one vmagent process plays the VMAgent pod');
  for (const pid of killed) process.kill(pid, 'SIGKILL');
  const killedAt = Date.now();
  // The simulated operator notices the dead process on its next resync (≤ 15 s) and starts it again; the new
  // process's counters start from 0.
  const seen: { at: number; phase: string | undefined }[] = [];
  const restartedAt = await eventually(
    'vmagent answering again after the restart',
    async () => {
      seen.push({ at: Date.now(), phase: (await lastMeasurement())?.phase });
      const pids = vmagentPids();
      if (pids.length === 0 || pids.some((p) => killed.includes(p))) return undefined;
      return (await rawQueue(agentUrl, 1).catch(() => undefined)) === undefined ? undefined : Date.now();
    },
    60_000,
    500,
  );
  const run = await eventually(
    'the run to finish',
    async () => {
      const ar = await sandbox.kubectl.getJson<AnalysisRunJson>(['analysisrun', name, '-n', ns]);
      return ['', 'Running'].includes(ar.status?.phase ?? '') ? undefined : ar;
    },
    180_000,
  );
  const last = run.status?.metricResults?.[0]?.measurements?.at(-1);
  assert.equal(run.status?.phase, 'Successful', last?.message);
  assert.deepEqual(
    seen.filter((s) => s.phase === 'Successful'),
    [],
    'drained reported while vmagent was down or had just restarted',
  );
  const figures = JSON.parse(last?.value ?? '{}') as { agents?: Record<string, { windowStart?: string }> };
  const windowStart = Date.parse(figures.agents?.vmagent?.windowStart ?? '');
  assert.ok(
    windowStart >= restartedAt - 2_000,
    `the counted rounds (from ${figures.agents?.vmagent?.windowStart}) all came after vmagent restarted (${new Date(restartedAt).toISOString()}; killed ${new Date(killedAt).toISOString()})`,
  );
});

test('through the real controller: a zone whose storage comes back empty keeps its reads drained; the walk fails naming the zone and the query, no read through vmauth fails', async (t) => {
  const kube = sandboxKube(sandbox);
  const name = 'gates-answers';
  // The rendered steps with the zone-healthy gates; the query gate gives up after 60 s (5m by default).
  const steps = withRoundSpacing(stepsFor(zoneSpec({}), 'none', 'vmzones-zone-healthy')).map((step) =>
    'analysis' in step
      ? {
          analysis: {
            ...step.analysis,
            args: [...step.analysis.args, { name: 'queryTimeout', value: '60s' }],
          },
        }
      : step,
  );
  await sandbox.kubectl.apply([rolloutObject(name, zoneSpec({}), steps)]);
  await eventually(
    'the first revision Healthy',
    async () => ((await rolloutState(kube, name)).status.phase === 'Healthy' ? true : undefined),
    { timeoutMs: 60_000, unless: rolloutCanProgress(kube, name) },
  );

  // The change: zone-a's storage comes back empty (a new data folder, as a replaced volume would), so its vmselect
  // answers without the data written before the restart. Everything the objects say is fine.
  const emptyStorage = join(sandbox.state.stateDir, 'zone-a-empty-storage');
  const reads = startReadProber(sandbox.endpoint('VMAuth', 'vmauth').url, readUser);
  const routing = startRoutingWatcher(kube, sandboxZones);
  await sandbox.kubectl.apply([
    rolloutObject(name, zoneSpec({ vmstorage: { extraArgs: { storageDataPath: emptyStorage } } }), steps),
  ]);
  let run: AnalysisRunJson | undefined;
  await eventually(
    "zone-a's analysis to end",
    async () => {
      const runs = await sandbox.kubectl.getJson<{ items: AnalysisRunJson[] }>(['analysisrun', '-n', ns]);
      run = runs.items.find((item) => item.metadata.ownerReferences?.some((owner) => owner.name === name));
      const phase = run?.status?.phase ?? '';
      return phase !== '' && phase !== 'Running' && phase !== 'Pending' ? true : undefined;
    },
    300_000,
  );
  const analysisEnded = Date.now();
  const ended = run as AnalysisRunJson;
  const result = (metric: string) => ended.status?.metricResults?.find((r) => r.name === metric);
  const answers = result('zone-answers')?.measurements?.at(-1) as MeasurementJson & {
    metadata?: Record<string, string>;
  };
  t.diagnostic(`zone-answers: ${answers.message}`);
  assert.equal(ended.status?.phase, 'Failed');
  assert.equal(result('vmcluster-ready')?.phase, 'Successful', 'the zone object says all is well');
  assert.equal(answers.phase, 'Failed');
  assert.equal(answers.metadata?.['vmzones.io/failure-code'], 'QueryMismatch');
  assert.match(answers.message ?? '', /zone zone-a answers differently from the serving zone zone-(b|c) /);
  assert.match(
    answers.message ?? '',
    /query `sum\(count_over_time\(\{__name__!=""\}\[\d+s\]\)\)`: \{\} = \d+ in the zone, \d+ in the serving zone/,
  );
  const figures = JSON.parse(answers.value ?? '{}') as {
    pods: Record<string, { answers?: Record<string, Record<string, number>> }>;
    serving: { answers?: Record<string, Record<string, number>> };
  };
  const zoneSamples = Object.values(figures.pods)[0]?.answers?.samples?.['{}'] ?? 0;
  const servingSamples = figures.serving.answers?.samples?.['{}'] ?? 0;
  assert.ok(
    zoneSamples < servingSamples,
    `zone-a answers ${zoneSamples} samples, the serving zone ${servingSamples}`,
  );

  // The Rollout aborts; the reconciler rolls zone-a back (its old storage) and only then gives it its reads back.
  await eventually(
    'zone-a rolled back, released and routed',
    async () => {
      const vmc = await cluster(kube, 'vm-zone-a');
      const extra =
        (vmc.spec?.vmstorage as { extraArgs?: Record<string, string> } | undefined)?.extraArgs ?? {};
      const annotations = Object.keys(vmzonesAnnotations(vmc));
      const routed = await routedZones(kube);
      return extra.storageDataPath === undefined && annotations.length === 0 && routed.includes('zone-a')
        ? true
        : undefined;
    },
    300_000,
  );
  const read = await reads.stop();
  const { violations, outOfReads } = await routing.stop();
  // zone-a left the reads once (the drain) and came back once (the rollback), after the analysis had failed.
  const out = outOfReads.filter((o) => o.zones.includes('zone-a'));
  const back = outOfReads.find((o) => o.at > (out[0]?.at ?? 0) && !o.zones.includes('zone-a'));
  assert.ok(out.length > 0 && back !== undefined, JSON.stringify(outOfReads));
  assert.ok(
    back.at >= analysisEnded - 2_000,
    `zone-a stayed out of reads until its analysis failed (back ${new Date(back.at).toISOString()}, analysis ended ${new Date(analysisEnded).toISOString()})`,
  );
  assert.deepEqual(violations, [], 'no zone was routed while not operational');
  t.diagnostic(`reads through vmauth: ${read.sent} sent, ${read.failed} failed`);
  assert.ok(read.sent > 100);
  assert.equal(read.failed, 0, read.failures.join('\n'));
  await sandbox.kubectl.run(['delete', 'rollout', name, '-n', ns, '--wait=false']);
});
