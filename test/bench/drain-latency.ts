// Drain-gate latency on the sandbox: how long after a zone's vmagent queue has emptied does the
// vmagentQueueDrained gate report success, through the real Argo Rollouts controller? Each run takes zone-a
// down (a VMCluster change: pod turnover of --restart-seconds while the load generator keeps writing),
// starts an AnalysisRun with the gate at the given settings, and polls every 200 ms: vmagent's own figures
// for the zone's queue (both pending series 0, zone operational = "queue at zero") and the measurement's
// phase (Successful = "gate reports success").
// Run: npm run build && ./node_modules/.bin/node test/bench/drain-latency.ts [--runs 3] [--rounds 3]
//        [--spacing 10s] [--restart-seconds 15]
// The last output line is `BENCH_JSON {...}` with the figures, for a bench runner to collect.

import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { rawQueue } from '../e2e/gates/support.ts';
import { startSandbox } from '../sandbox/helper.ts';
import { repoRoot } from '../sandbox/sandbox.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    spacing: { type: 'string', default: '10s' },
    'restart-seconds': { type: 'string', default: '15' },
  },
});
const runs = Number(values.runs);
const ns = 'vm';

execFileSync(process.execPath, ['scripts/build.ts'], { cwd: repoRoot, stdio: 'inherit' });
const options: Record<string, unknown> = {
  podRestartSeconds: Number(values['restart-seconds']),
  operator: 'simulated',
  log: () => {},
};
const sandbox = await startSandbox(options as Parameters<typeof startSandbox>[0]);

interface Sample {
  run: number;
  outageSeconds: number;
  queueZeroAt: string;
  gateSuccessAt: string;
  latencySeconds: number;
  maxOnDiskBytes: number;
}

const samples: Sample[] = [];
try {
  const agentUrl = sandbox.endpoint('VMAgent', 'vmagent').url;
  for (let run = 1; run <= runs; run++) {
    await sandbox.kubectl.run([
      'patch',
      'vmcluster',
      'vm-zone-a',
      '-n',
      ns,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { vmstorage: { extraArgs: { 'search.latencyOffset': `${run}s` } } } }),
    ]);
    const downAt = Date.now();
    await sandbox.kubectl.apply([
      {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'AnalysisRun',
        metadata: { name: `drain-latency-${run}`, namespace: ns },
        spec: {
          metrics: [
            {
              name: 'drained',
              provider: {
                plugin: {
                  'vmzones/gates': {
                    gate: 'vmagentQueueDrained',
                    namespace: ns,
                    vmcluster: 'vm-zone-a',
                    vmagent: 'vmagent',
                    consecutiveRounds: values.rounds,
                    roundSpacing: values.spacing,
                  },
                },
              },
            },
          ],
        },
      },
    ]);
    let upAt: number | undefined;
    let queueZeroAt: number | undefined;
    let maxOnDiskBytes = 0;
    for (;;) {
      const at = Date.now();
      if (at - downAt > 600_000) throw new Error(`run ${run}: the gate did not succeed within 10 minutes`);
      const [vmc, raw, ar] = await Promise.all([
        sandbox.kubectl.getJson<{
          metadata: { generation: number };
          status?: { updateStatus?: string; observedGeneration?: number };
        }>(['vmcluster', 'vm-zone-a', '-n', ns]),
        rawQueue(agentUrl, 1).catch(() => undefined),
        sandbox.kubectl.getJson<{ status?: { phase?: string; message?: string } }>([
          'analysisrun',
          `drain-latency-${run}`,
          '-n',
          ns,
        ]),
      ]);
      const operational =
        vmc.status?.updateStatus === 'operational' &&
        (vmc.status.observedGeneration ?? 0) >= vmc.metadata.generation;
      if (operational && upAt === undefined && at - downAt > 2_000) upAt = at;
      maxOnDiskBytes = Math.max(maxOnDiskBytes, raw?.onDiskBytes ?? 0);
      const empty = raw !== undefined && raw.onDiskBytes === 0 && raw.pendingDataBytes === 0;
      if (upAt !== undefined && empty && queueZeroAt === undefined) queueZeroAt = at;
      // Data back on disk restarts the clock ("reaching zero" is the last time); a block in flight in memory
      // under steady load does not.
      if ((raw?.onDiskBytes ?? 0) > 0) queueZeroAt = undefined;
      const phase = ar.status?.phase ?? '';
      if (phase !== '' && phase !== 'Running') {
        if (phase !== 'Successful')
          throw new Error(`run ${run}: AnalysisRun ${phase}: ${ar.status?.message ?? ''}`);
        if (queueZeroAt === undefined || upAt === undefined)
          throw new Error(`run ${run}: success before the queue emptied`);
        samples.push({
          run,
          outageSeconds: (upAt - downAt) / 1000,
          queueZeroAt: new Date(queueZeroAt).toISOString(),
          gateSuccessAt: new Date(at).toISOString(),
          latencySeconds: (at - queueZeroAt) / 1000,
          maxOnDiskBytes,
        });
        const last = samples.at(-1) as Sample;
        console.log(
          `run ${run}: zone down ${last.outageSeconds.toFixed(1)} s, on-disk queue up to ${maxOnDiskBytes} B; ` +
            `queue at zero → gate success: ${last.latencySeconds.toFixed(1)} s`,
        );
        break;
      }
      await sleep(200);
    }
  }
} finally {
  await sandbox.stop();
}

const latencies = samples.map((sample) => sample.latencySeconds).sort((a, b) => a - b);
const median = latencies[Math.floor((latencies.length - 1) / 2)] ?? Number.NaN;
console.log(
  `drain gate latency (K=${values.rounds} rounds, ≥${values.spacing} apart, through the controller): ` +
    `median ${median.toFixed(1)} s, min ${latencies[0]?.toFixed(1)} s, max ${latencies.at(-1)?.toFixed(1)} s over ${latencies.length} runs`,
);
console.log(
  `BENCH_JSON ${JSON.stringify({ bench: 'drain-latency', rounds: Number(values.rounds), spacing: values.spacing, medianSeconds: median, samples })}`,
);
