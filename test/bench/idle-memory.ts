// Idle memory and start → handshake of the product bundle in both roles, launched as the controller launches it (the
// manifests' Node flags, its go-plugin environment, the role's cookie; docs/deploy.md, "Memory"): for each role the
// median over `--launches` of VmRSS and RssAnon one second after the handshake line, and the median and the least
// of start → handshake (on a loaded machine the least shows the process's own cost best).
// Prints `name value` lines: plugin_idle_rss_mib_<role>, plugin_idle_anon_mib_<role>,
// plugin_start_to_handshake_ms_<role>, plugin_start_to_handshake_min_ms_<role>, plugin_start_cpu_ms_<role> (CPU
// time used until the handshake), and against a bare `node` with the same flags that prints the handshake line at once
// (what the machine's load and Node itself cost): plugin_bare_node_handshake_ms, and per role
// plugin_start_to_handshake_over_bare_<role> (ratio of medians) and plugin_start_to_handshake_own_ms_<role> (median
// minus the bare node's: the bundle's own share). The goal is start → handshake ≤ 200 ms (docs/deploy.md, "Memory").
// `--bundle FILE` measures another bundle (e.g. an older commit's dist/vmzones.mjs); `--observe` adds
// --observe-address=127.0.0.1:0 (the endpoint with express and prom-client). Part of `npm run bench`.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { pluginNodeFlags } from '../../scripts/package.ts';

const { values } = parseArgs({
  options: {
    bundle: { type: 'string', default: 'dist/vmzones.mjs' },
    launches: { type: 'string', default: '5' },
    observe: { type: 'boolean', default: false },
  },
});
const launches = Number(values.launches);
if (!Number.isInteger(launches) || launches < 1) throw new Error('--launches must be a whole number ≥ 1');

interface Launch {
  handshakeMs: number;
  /** CPU time (user + system) the process had used at its handshake: what a loaded machine changes least. */
  cpuMs: number;
  rssMib: number;
  anonMib: number;
}

function statusField(pid: number, field: string): number {
  const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kb === undefined) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(kb) / 1024;
}

/** A bare node with the manifests' flags that prints a handshake-shaped line as its first act. */
const bareNode = ['-e', "process.stdout.write('1|1|unix|/bare|grpc\\n')"];

async function launch(role: 'step' | 'metricprovider', bare = false): Promise<Launch> {
  const args = [
    ...pluginNodeFlags,
    ...(bare ? bareNode : [values.bundle]),
    ...(values.observe && !bare ? ['--observe-address=127.0.0.1:0'] : []),
  ];
  const began = performance.now();
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      ARGO_ROLLOUTS_RPC_PLUGIN: role,
      PLUGIN_MIN_PORT: '10000',
      PLUGIN_MAX_PORT: '25000',
      PLUGIN_PROTOCOL_VERSIONS: '1',
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let cpuAtHandshake = Number.NaN;
  try {
    const handshakeMs = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`${role}: no handshake within 30 s`)), 30_000);
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (!out.includes('\n')) return;
        clearTimeout(timer);
        if (/^1\|1\|(unix|tcp)\|/.test(out)) {
          const elapsed = performance.now() - began;
          cpuAtHandshake = cpuMs(child.pid ?? 0);
          resolve(elapsed);
        } else reject(new Error(`${role}: printed ${JSON.stringify(out.slice(0, 120))}`));
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${role}: exited (${code}) before its handshake`));
      });
    });
    if (bare) return { handshakeMs, cpuMs: cpuAtHandshake, rssMib: Number.NaN, anonMib: Number.NaN };
    await sleep(1_000);
    const pid = child.pid ?? 0;
    return {
      handshakeMs,
      cpuMs: cpuAtHandshake,
      rssMib: statusField(pid, 'VmRSS'),
      anonMib: statusField(pid, 'RssAnon'),
    };
  } finally {
    child.kill('SIGKILL');
  }
}

/** utime + stime of /proc/<pid>/stat, in ms (the kernel counts in ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

// Bare launches between the bundle's, so that both see the same load.
const bare: number[] = [];
for (const [role, name] of [
  ['step', 'step'],
  ['metricprovider', 'gates'],
] as const) {
  const runs: Launch[] = [];
  for (let i = 0; i < launches; i++) {
    runs.push(await launch(role));
    bare.push((await launch(role, true)).handshakeMs);
  }
  console.log(`plugin_idle_rss_mib_${name} ${median(runs.map((r) => r.rssMib)).toFixed(1)}`);
  console.log(`plugin_idle_anon_mib_${name} ${median(runs.map((r) => r.anonMib)).toFixed(1)}`);
  console.log(`plugin_start_to_handshake_ms_${name} ${median(runs.map((r) => r.handshakeMs)).toFixed(0)}`);
  console.log(
    `plugin_start_to_handshake_min_ms_${name} ${Math.min(...runs.map((r) => r.handshakeMs)).toFixed(0)}`,
  );
  console.log(`plugin_start_cpu_ms_${name} ${median(runs.map((r) => r.cpuMs)).toFixed(0)}`);
  const handshake = median(runs.map((r) => r.handshakeMs));
  console.log(`plugin_start_to_handshake_over_bare_${name} ${(handshake / median(bare)).toFixed(2)}`);
  console.log(`plugin_start_to_handshake_own_ms_${name} ${(handshake - median(bare)).toFixed(0)}`);
}
console.log(`plugin_bare_node_handshake_ms ${median(bare).toFixed(0)}`);
console.log('plugin_start_to_handshake_goal_ms 200');
