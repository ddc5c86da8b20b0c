// `npm run bench` part: the same three-zone change (a vmstorage flag that restarts every zone) done by vmzones and
// by the VictoriaMetrics operator's VMDistributed, each in its own fresh sandbox (neither sees the other's objects
// or processes), with reads probed through vmauth every 50 ms and the load generator's stream checked in every
// zone. Prints per-zone and total wall time, failed reads, samples lost, the vmzones per-zone timeline,
// dead_time_per_zone_s and rollout_wall_ratio_vmzones_over_vmdistributed.
// Flags: --only vmzones|vmdistributed, --records FILE (the raw records as JSON).

import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startSandbox } from '../sandbox/helper.ts';
import { handshakeMs } from './plugin-processes.ts';
import { fixed, type RunFigures, seconds } from './rollout-sandbox.ts';
import { printTimeline, zoneTimelines } from './rollout-timeline.ts';
import { runVmdistributed } from './rollout-vmdistributed.ts';
import { runVmzones } from './rollout-vmzones.ts';

const { values } = parseArgs({ options: { only: { type: 'string' }, records: { type: 'string' } } });
if (values.only !== undefined && values.only !== 'vmzones' && values.only !== 'vmdistributed') {
  console.error('rollout bench: --only must be vmzones or vmdistributed');
  process.exit(2);
}
const started = Date.now();
const log = (line: string) =>
  console.error(`[rollout bench ${fixed(seconds(Date.now() - started), 0).padStart(4)} s] ${line}`);

const results: RunFigures[] = [];
const raw: Record<string, unknown> = {};
let failed = false;
let timelineLines: string[] = [];
let rssLines: string[] = [];

async function inSandbox(
  what: string,
  plugin: boolean,
  run: (s: Awaited<ReturnType<typeof startSandbox>>) => Promise<void>,
) {
  log(
    `${what}: starting a fresh sandbox (3 zones, real operator v0.74.1${plugin ? ', vmzones plugins' : ''})`,
  );
  const sandbox = await startSandbox({ zones: 3, plugin, log: () => {} });
  try {
    await run(sandbox);
  } catch (error) {
    failed = true;
    console.error(
      `rollout bench: ${what} did not complete: ${error instanceof Error ? error.message : String(error)}`,
    );
    console.error(`  logs: ${sandbox.state.stateDir}/logs`);
  } finally {
    await sandbox.stop();
  }
}

if (values.only !== 'vmdistributed') {
  await inSandbox('vmzones', true, async (sandbox) => {
    const { figures, records, rss } = await runVmzones(sandbox, log);
    results.push(figures);
    raw.vmzones = { figures, records, rss };
    const plugin = sandbox.state.plugin;
    const command = plugin === undefined ? [] : [plugin.location, ...plugin.args];
    const env = { KUBECONFIG: sandbox.state.kubeconfig };
    const startup = {
      step: await handshakeMs(command, 'step', env),
      gates: await handshakeMs(command, 'gates', env),
    };
    rssLines = [
      `---- the product's plugin processes during the vmzones walk (the bundle with the manifests' Node flags; ${rss.samples} samples) ----`,
      ...(['step', 'gates'] as const).flatMap((role) => [
        `plugin_peak_rss_mib_${role} ${rss.peak[role] === undefined ? 'not-running' : fixed(rss.peak[role])}`,
        `plugin_steady_rss_mib_${role} ${rss.steady[role] === undefined ? 'not-running' : fixed(rss.steady[role])}`,
        `plugin_start_to_handshake_ms_${role} ${fixed(startup[role], 0)}`,
      ]),
    ];
    timelineLines = printTimeline(zoneTimelines(records));
  });
}
if (values.only !== 'vmzones') {
  await inSandbox('VMDistributed', false, async (sandbox) => {
    const figures = await runVmdistributed(sandbox, log);
    results.push(figures);
    raw.vmdistributed = { figures };
  });
}
if (values.records) writeFileSync(values.records, `${JSON.stringify(raw, null, 2)}\n`);

console.log(
  '\n---- rollout: vmzones vs VMDistributed, same 3 zones, same change (vmstorage -search.latencyOffset) ----',
);
for (const r of results) console.log(`${r.product}: ${r.settings}`);
const row = (cells: string[]) =>
  console.log(cells.map((c, i) => (i === 0 ? c.padEnd(34) : c.padStart(16))).join(''));
row(['', ...results.map((r) => r.product)]);
for (const [i] of (results[0]?.zones ?? []).entries()) {
  row([
    `zone ${results[0]?.zones[i]?.zone} wall s`,
    ...results.map((r) => {
      const z = r.zones[i];
      return z ? fixed(seconds(z.endMs - z.startMs)) : '-';
    }),
  ]);
}
row(['total wall s (change → done)', ...results.map((r) => fixed(r.totalS))]);
row(['reads via vmauth failed / sent', ...results.map((r) => `${r.reads.failed} / ${r.reads.sent}`)]);
row(['vmauth backend errors', ...results.map((r) => String(r.reads.backendErrors))]);
row(['samples lost (per zone a/b/c)', ...results.map((r) => Object.values(r.samplesLost).join('/'))]);
row(['samples checked per zone', ...results.map((r) => String(r.samplesChecked))]);
for (const r of results) for (const f of r.reads.failures) console.log(`  ${r.product} read failure: ${f}`);
for (const line of timelineLines) console.log(line);
for (const line of rssLines) console.log(line);
const vmzones = results.find((r) => r.product === 'vmzones');
const vmd = results.find((r) => r.product === 'VMDistributed');
if (vmzones && vmd)
  console.log(`rollout_wall_ratio_vmzones_over_vmdistributed ${fixed(vmzones.totalS / vmd.totalS, 2)}`);
if (failed) process.exitCode = 1;
