// `npm run demo`: the main job on the embedded local environment. Starts the sandbox (real kube-apiserver, the
// real Argo Rollouts controller exec'ing vmzones, the VictoriaMetrics operator, real zone processes, vmagent,
// vmauth), creates a Rollout whose pod template carries a three-zone spec document and the steps
// `vmzones render` generates, then commits a change to its overrideSpec and shows the controller walking the
// zones one at a time while queries run through vmauth. Flags: --keep (leave the sandbox running),
// --operator real|simulated, --gitops (the same job through Git and Argo CD: test/demo/gitops.ts).

import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { renderSteps } from '../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../plugin/zones/spec.ts';
import {
  cluster,
  eventually,
  ns,
  pluginStatuses,
  rolloutCanProgress,
  rolloutObject,
  rolloutState,
  routedZones,
  sandboxKube,
  startReadProber,
  vmzonesAnnotations,
  zoneSpec,
} from '../e2e/step/harness.ts';
import { applyAnalysisTemplates } from '../sandbox/analysis-templates.ts';
import { startSandbox } from '../sandbox/helper.ts';
import { readUser, vmauthName } from '../sandbox/manifests.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values } = parseArgs({
  options: {
    keep: { type: 'boolean', default: false },
    operator: { type: 'string' },
    gitops: { type: 'boolean', default: false },
  },
});
if (values.gitops) {
  const { gitopsDemo } = await import('./gitops.ts');
  process.exit(await gitopsDemo({ keep: values.keep }));
}
if (values.operator !== undefined && values.operator !== 'real' && values.operator !== 'simulated') {
  console.error('demo: --operator must be real or simulated');
  process.exit(2);
}

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s`;
const say = (line: string) => console.log(`${elapsed()}  ${line}`);

readFileSync(join(repoRoot, 'dist', 'vmzones.mjs')); // fails loudly when the bundle is missing
say('starting the sandbox (builds what is missing on the first run)…');
const sandbox = await startSandbox({
  zones: 3,
  plugin: true,
  podRestartSeconds: 5,
  operator: values.operator as 'real' | 'simulated' | undefined,
  log: () => {},
});
let exitCode = 0;
try {
  const kube = sandboxKube(sandbox);
  say(`sandbox up; kubeconfig ${sandbox.state.kubeconfig}`);
  await applyAnalysisTemplates(sandbox.kubectl);

  const name = 'victoria-metrics';
  const zones = ['zone-a', 'zone-b', 'zone-c'];
  const specFor = (overrideSpec: object) => zoneSpec(overrideSpec);
  const steps = renderSteps(parseSpecDocument(stringify(specFor({}))), { pauseBetweenZones: '5s' });

  say(
    `revision 1: Rollout ${ns}/${name} with ${zones.length} zones and ${steps.length} steps (the first revision runs none)`,
  );
  await sandbox.kubectl.apply([rolloutObject(name, specFor({}), steps)]);
  await waitForPhase(kube, name, 'Healthy', 180);
  const firstRevision = (await rolloutState(kube, name)).status.currentPodHash;

  const change = { vmselect: { extraArgs: { 'search.maxQueryDuration': '45s' } } };
  say(`revision 2: a commit sets overrideSpec ${JSON.stringify(change)}`);
  const prober = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  await sandbox.kubectl.apply([rolloutObject(name, specFor(change), steps)]);

  let lastLine = '';
  let lastPrinted = 0;
  const deadline = Date.now() + 20 * 60_000;
  for (;;) {
    const state = await rolloutState(kube, name);
    if (state.status.currentPodHash === firstRevision) {
      await sleep(500); // the controller has not picked up revision 2 yet
      continue;
    }
    const index = state.status.currentStepIndex ?? 0;
    const step = steps[index];
    const label =
      step === undefined
        ? 'done'
        : 'plugin' in step
          ? `${step.plugin.config.zone} ${step.plugin.config.action}`
          : 'analysis' in step
            ? `${step.analysis.args[0]?.value} vmzones-zone-healthy analysis`
            : `pause ${step.pause.duration ?? '(approval)'}`;
    const run = pluginStatuses(state)
      .filter((s) => s.index === index && s.operation === 'Run')
      .at(-1);
    const maintenance: string[] = [];
    for (const zone of zones) {
      const annotations = vmzonesAnnotations(await cluster(kube, `vm-${zone}`));
      if (annotations['vmzones.io/maintenance'] !== undefined) maintenance.push(zone);
    }
    const routed = await routedZones(kube).catch(() => []);
    const line =
      `step ${Math.min(index + 1, steps.length)}/${steps.length} ${label}` +
      `${run?.message ? ` — ${run.message}` : ''} | reads routed to: ${routed.join(', ') || 'none'}` +
      ` | in maintenance: ${maintenance.join(', ') || 'none'}`;
    // A line when something changes, and the query count at least every 20 s.
    if (line !== lastLine || Date.now() - lastPrinted > 20_000) {
      say(`${line} | queries ${prober.figures.sent} sent, ${prober.figures.failed} failed`);
      lastPrinted = Date.now();
    }
    lastLine = line;
    if (state.status.phase === 'Healthy' && state.status.stableRS === state.status.currentPodHash) break;
    if (state.status.abort || state.status.phase === 'Degraded') {
      say(`rollout stopped: ${state.status.phase} ${state.status.message ?? ''}`);
      exitCode = 1;
      break;
    }
    if (Date.now() > deadline) {
      say('rollout did not finish within 20 minutes');
      exitCode = 1;
      break;
    }
    await sleep(2000);
  }
  const figures = await prober.stop();
  say(`queries through vmauth during the walk: ${figures.sent} sent, ${figures.failed} failed`);
  const final = await rolloutState(kube, name);
  console.log(`\nstep statuses of the finished rollout:\n${stringify(pluginStatuses(final))}`);
  if (exitCode === 0) say(`all ${zones.length} zones changed one at a time; Rollout Healthy`);
} catch (error) {
  exitCode = 1;
  console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  if (values.keep) {
    sandbox.keep();
    say(
      `sandbox left running: export KUBECONFIG=${sandbox.state.kubeconfig}; ` +
        `stop it with VMZONES_SANDBOX_DIR=${sandbox.state.stateDir} npm run sandbox -- down`,
    );
  } else {
    await sandbox.stop();
    say('sandbox stopped');
  }
}
process.exit(exitCode);

async function waitForPhase(
  kube: ReturnType<typeof sandboxKube>,
  name: string,
  phase: string,
  seconds: number,
) {
  await eventually(
    `Rollout ${name} to become ${phase}`,
    async () => ((await rolloutState(kube, name)).status.phase === phase ? true : undefined),
    { timeoutMs: seconds * 1000, intervalMs: 1000, unless: rolloutCanProgress(kube, name) },
  );
}
