// `npm run bench` part: the same three-zone change (a vmstorage flag that restarts every zone) done by vmzones and
// by the VictoriaMetrics operator's VMDistributed, each in its own fresh sandbox (neither sees the other's objects
// or processes), with reads probed through vmauth every 50 ms and the load generator's stream checked in every
// zone. Three ways: (a) equal pauses (no pause between zones on either side), (b) each tool with its shipped
// defaults (vmzones: render's pause between zones; VMDistributed: its own updatePause), and (c) vmzones in waves
// [zone-a], [zone-b, zone-c] (issue 38: a wave's zones move together) against VMDistributed's run of (a), which
// walks zones one at a time only. Prints per-zone and total
// wall time, failed reads, samples lost, the vmzones per-zone timeline, dead_time_per_zone_s, the product's plugin
// processes' RSS and start → handshake, rollout_wall_ratio_vmzones_over_vmdistributed for (a),
// rollout_wall_ratio_defaults_vmzones_over_vmdistributed for (b) and
// rollout_wall_ratio_waves_vmzones_over_vmdistributed for (c); the per-zone timeline for each vmzones way.
// Flags: --only vmzones|vmdistributed, --ways equal|defaults|waves|both|all (default all; both = equal and
// defaults), --records FILE (raw records, JSON).

import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startSandbox } from '../sandbox/helper.ts';
import { handshakeMs } from './plugin-processes.ts';
import { fixed, type RunFigures, seconds } from './rollout-sandbox.ts';
import { printTimeline, zoneTimelines } from './rollout-timeline.ts';
import { runVmdistributed } from './rollout-vmdistributed.ts';
import { benchWaves, runVmzones } from './rollout-vmzones.ts';

const { values } = parseArgs({
  options: { only: { type: 'string' }, ways: { type: 'string' }, records: { type: 'string' } },
});
if (values.only !== undefined && values.only !== 'vmzones' && values.only !== 'vmdistributed') {
  console.error('rollout bench: --only must be vmzones or vmdistributed');
  process.exit(2);
}
const ways = values.ways ?? 'all';
if (!['equal', 'defaults', 'waves', 'both', 'all'].includes(ways)) {
  console.error('rollout bench: --ways must be equal, defaults, waves, both or all');
  process.exit(2);
}
const started = Date.now();
const log = (line: string) =>
  console.error(`[rollout bench ${fixed(seconds(Date.now() - started), 0).padStart(4)} s] ${line}`);

type Way = 'equal' | 'defaults' | 'waves';
const results: { way: Way; figures: RunFigures }[] = [];
const raw: Record<string, unknown> = {};
let failed = false;
const timelineLines: string[] = [];
let rssLines: string[] = [];

async function inSandbox(
  what: string,
  plugin: boolean,
  run: (s: Awaited<ReturnType<typeof startSandbox>>) => Promise<void>,
) {
  log(
    `${what}: starting a fresh sandbox (3 zones, real operator v0.74.1${plugin ? ', vmzones plugins' : ''})`,
  );
  const sandbox = await startSandbox({ zones: 3, plugin, vmDistributed: true, log: () => {} });
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

const chosen: Way[] =
  ways === 'all' ? ['equal', 'defaults', 'waves'] : ways === 'both' ? ['equal', 'defaults'] : [ways as Way];
for (const way of chosen) {
  const shippedDefaults = way === 'defaults';
  if (values.only !== 'vmdistributed') {
    await inSandbox(`vmzones (${way})`, true, async (sandbox) => {
      const { figures, records, rss } = await runVmzones(
        sandbox,
        log,
        shippedDefaults,
        way === 'waves' ? benchWaves : undefined,
      );
      results.push({ way, figures });
      raw[`vmzones_${way}`] = { figures, records, rss };
      // A wave's zones each get their column, from the wave's steps (each zone's status under `zones.<zone>`).
      timelineLines.push(`(${way})`, ...printTimeline(zoneTimelines(records)));
      if (way !== 'equal' && rssLines.length > 0) return;
      const plugin = sandbox.state.plugin;
      const command = plugin === undefined ? [] : [plugin.location, ...plugin.args];
      const env = { KUBECONFIG: sandbox.state.kubeconfig };
      const startup = {
        step: await handshakeMs(command, 'step', env),
        gates: await handshakeMs(command, 'gates', env),
      };
      rssLines = [
        `---- the product's plugin processes during the vmzones walk (${way}; the bundle with the manifests' Node flags; ${rss.samples} samples) ----`,
        ...(['step', 'gates'] as const).flatMap((role) => [
          `plugin_peak_rss_mib_${role} ${rss.peak[role] === undefined ? 'not-running' : fixed(rss.peak[role])}`,
          `plugin_steady_rss_mib_${role} ${rss.steady[role] === undefined ? 'not-running' : fixed(rss.steady[role])}`,
          `plugin_peak_anon_mib_${role} ${rss.peakAnon[role] === undefined ? 'not-running' : fixed(rss.peakAnon[role])}`,
          `plugin_start_to_handshake_ms_${role} ${fixed(startup[role], 0)}`,
        ]),
      ];
    });
  }
  // VMDistributed has no waves: the waves walk is set against its run without pauses (a), made once.
  const vmdWay: Way = way === 'waves' ? 'equal' : way;
  if (values.only !== 'vmzones' && (way !== 'waves' || !chosen.includes('equal'))) {
    await inSandbox(`VMDistributed (${vmdWay})`, false, async (sandbox) => {
      const figures = await runVmdistributed(sandbox, log, shippedDefaults);
      results.push({ way: vmdWay, figures });
      raw[`vmdistributed_${vmdWay}`] = { figures };
    });
  }
}
if (values.records) writeFileSync(values.records, `${JSON.stringify(raw, null, 2)}\n`);

console.log(
  '\n---- rollout: vmzones vs VMDistributed, same 3 zones, same change (vmstorage -search.latencyOffset) ----',
);
for (const { way, figures: r } of results) console.log(`${r.product} (${way}): ${r.settings}`);
const row = (cells: string[]) =>
  console.log(cells.map((c, i) => (i === 0 ? c.padEnd(34) : c.padStart(22))).join(''));
row(['', ...results.map(({ way, figures }) => `${figures.product} (${way})`)]);
const first = results[0]?.figures;
for (const [i] of (first?.zones ?? []).entries()) {
  row([
    `zone ${first?.zones[i]?.zone} wall s`,
    ...results.map(({ figures: r }) => {
      const z = r.zones[i];
      return z ? fixed(seconds(z.endMs - z.startMs)) : '-';
    }),
  ]);
}
row(['total wall s (change → done)', ...results.map(({ figures: r }) => fixed(r.totalS))]);
row([
  'reads via vmauth failed / sent',
  ...results.map(({ figures: r }) => `${r.reads.failed} / ${r.reads.sent}`),
]);
row(['vmauth backend errors', ...results.map(({ figures: r }) => String(r.reads.backendErrors))]);
row([
  'samples lost (per zone a/b/c)',
  ...results.map(({ figures: r }) => Object.values(r.samplesLost).join('/')),
]);
row(['samples checked per zone', ...results.map(({ figures: r }) => String(r.samplesChecked))]);
for (const { figures: r } of results)
  for (const f of r.reads.failures) console.log(`  ${r.product} read failure: ${f}`);
for (const line of timelineLines) console.log(line);
for (const line of rssLines) console.log(line);
const ratio = (way: Way) => {
  const vmzones = results.find((r) => r.way === way && r.figures.product === 'vmzones')?.figures;
  const vmdWay: Way = way === 'waves' ? 'equal' : way;
  const vmd = results.find((r) => r.way === vmdWay && r.figures.product === 'VMDistributed')?.figures;
  return vmzones && vmd ? fixed(vmzones.totalS / vmd.totalS, 2) : undefined;
};
const equal = ratio('equal');
if (equal !== undefined) console.log(`rollout_wall_ratio_vmzones_over_vmdistributed ${equal}`);
const defaults = ratio('defaults');
if (defaults !== undefined) console.log(`rollout_wall_ratio_defaults_vmzones_over_vmdistributed ${defaults}`);
const inWaves = ratio('waves');
if (inWaves !== undefined) console.log(`rollout_wall_ratio_waves_vmzones_over_vmdistributed ${inWaves}`);
if (failed) process.exitCode = 1;
