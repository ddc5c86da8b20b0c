// The product's own plugin processes as the controller runs them: the children of the rollouts-controller process
// whose command line is the bundle under a role (the controller names the executable after the plugin, `…/step`
// or `…/gates`), and their resident memory from /proc. Used by the side-by-side walk and the scale bench.

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export type PluginRole = 'step' | 'gates';

/**
 * RSS in MiB of each plugin process the controller `controllerPid` has started now, by role: `VmRSS` (all
 * resident pages), or `RssAnon` (the process's private memory: heap, malloc; without the pages of node's binary and
 * libraries, which are shared and which the kernel can drop and read back under a memory limit).
 */
export function pluginRss(
  controllerPid: number,
  field: 'VmRSS' | 'RssAnon' = 'VmRSS',
): Partial<Record<PluginRole, number>> {
  const rss: Partial<Record<PluginRole, number>> = {};
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== controllerPid) continue;
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const role = cmd[0]?.endsWith('/step') ? 'step' : cmd[0]?.endsWith('/gates') ? 'gates' : undefined;
      if (role === undefined) continue;
      const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(
        readFileSync(`/proc/${entry}/status`, 'utf8'),
      )?.[1];
      rss[role] = Number(kb) / 1024;
    } catch {
      // the process went away between the listing and the read
    }
  }
  return rss;
}

export interface RssFigures {
  /** Highest sample per role; absent = the controller never started that role while sampled. */
  peak: Partial<Record<PluginRole, number>>;
  /** Median of the samples per role: what the process holds through the walk, not its spikes. */
  steady: Partial<Record<PluginRole, number>>;
  /** Highest RssAnon sample per role: the private memory a limit cannot squeeze (docs/deploy.md, "Memory"). */
  peakAnon: Partial<Record<PluginRole, number>>;
  samples: number;
}

/** Samples the plugins' RSS every `everyMs` until stopped (bounded by `maxMs`, so a forgotten sampler ends). */
export function sampleRss(controllerPid: number, everyMs = 250, maxMs = 60 * 60_000) {
  const seen: Record<PluginRole, number[]> = { step: [], gates: [] };
  const seenAnon: Record<PluginRole, number[]> = { step: [], gates: [] };
  let samples = 0;
  let stopped = false;
  const until = Date.now() + maxMs;
  const loop = (async () => {
    while (!stopped && Date.now() < until) {
      for (const [role, mib] of Object.entries(pluginRss(controllerPid)) as [PluginRole, number][])
        seen[role].push(mib);
      for (const [role, mib] of Object.entries(pluginRss(controllerPid, 'RssAnon')) as [PluginRole, number][])
        seenAnon[role].push(mib);
      samples++;
      await sleep(everyMs);
    }
  })();
  return {
    async stop(): Promise<RssFigures> {
      stopped = true;
      await loop;
      const peak: RssFigures['peak'] = {};
      const steady: RssFigures['steady'] = {};
      const peakAnon: RssFigures['peakAnon'] = {};
      for (const role of ['step', 'gates'] as const) {
        const values = seen[role];
        if (values.length === 0) continue;
        peak[role] = Math.max(...values);
        steady[role] = [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
        if (seenAnon[role].length > 0) peakAnon[role] = Math.max(...seenAnon[role]);
      }
      return { peak, steady, peakAnon, samples };
    },
  };
}

/**
 * Start → handshake of the product bundle under the manifests' Node flags, as the controller starts it (its
 * go-plugin environment, the role's cookie): the median over `launches` of the time until the handshake line is on
 * stdout. `env` carries what the process would find in the controller's pod (e.g. KUBECONFIG).
 */
export async function handshakeMs(
  command: readonly string[],
  role: PluginRole,
  env: Record<string, string>,
  launches = 5,
  timeoutMs = 30_000,
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < launches; i++) times.push(await oneHandshake(command, role, env, timeoutMs));
  return [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? Number.NaN;
}

function oneHandshake(
  command: readonly string[],
  role: PluginRole,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<number> {
  const [file, ...args] = command;
  if (file === undefined) return Promise.reject(new Error('handshake: no command'));
  const began = performance.now();
  const child = spawn(file, args, {
    env: {
      ...process.env,
      ...env,
      ARGO_ROLLOUTS_RPC_PLUGIN: role === 'step' ? 'step' : 'metricprovider',
      PLUGIN_MIN_PORT: '10000',
      PLUGIN_MAX_PORT: '25000',
      PLUGIN_PROTOCOL_VERSIONS: '1',
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`handshake: no handshake line from the ${role} process within ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (!out.includes('\n')) return;
      const elapsed = performance.now() - began;
      clearTimeout(timer);
      child.kill('SIGKILL');
      if (/^1\|1\|(unix|tcp)\|/.test(out)) resolve(elapsed);
      else reject(new Error(`handshake: the ${role} process printed ${JSON.stringify(out.slice(0, 120))}`));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!out.includes('\n'))
        reject(new Error(`handshake: the ${role} process exited (${code}) before its handshake`));
    });
  });
}
