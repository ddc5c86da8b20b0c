// `npm run sandbox -- up|down|status`: the one entry point to the local real environment.

import { join } from 'node:path';
import { cacheDir } from '../env/build.ts';
import { argocdAdmin } from './argocd.ts';
import { StartError, tailLog } from './processes.ts';
import { defaultStateDir, down, readEndpoints, type SandboxState, status, up } from './sandbox.ts';

const usage = `usage: sandbox up [--argocd]|down|status
  --argocd: also start Argo CD v3.2.11 and a Git server on loopback (or VMZONES_SANDBOX_ARGOCD=1)
  environment: VMZONES_CACHE (build cache, default ~/.cache/vmzones),
               VMZONES_SANDBOX_DIR (state dir, default $VMZONES_CACHE/sandbox/default),
               VMZONES_SANDBOX_ZONES (number of zones, default 2),
               VMZONES_SANDBOX_OPERATOR (real | simulated VictoriaMetrics operator, default real),
               VMZONES_SANDBOX_POD_RESTART_SECONDS (zone restart pause, default 10),
               VMZONES_SANDBOX_READY_TIMEOUT_SECONDS (restart deadline before "failed", default 60)`;

function describe(state: SandboxState): string {
  const lines = [
    `kubeconfig:   ${state.kubeconfig}`,
    `shell:        export KUBECONFIG=${state.kubeconfig} PATH=${join(state.stateDir, 'bin')}:$PATH`,
    '              (kubectl v1.34.5; kubectl argo rollouts promote|abort|retry|status <rollout> -n <ns>)',
    `API server:   ${state.apiServer}`,
    `state dir:    ${state.stateDir}`,
    `logs:         ${join(state.stateDir, 'logs')}`,
    `plugin:       ${state.plugin ? `${state.plugin.location} ${state.plugin.args.join(' ')}` : '(not configured: dist/vmzones.mjs missing)'}`,
    `VM operator:  ${state.operator === 'real' ? 'real (v0.74.1) + sandbox data plane' : 'simulated'}`,
    `zones:        ${state.zones.map((z) => `${z.zone}=${state.vmNamespace}/${z.vmcluster}`).join(', ')}`,
    `loadgen:      ${state.loadgenUrl ?? '-'}`,
  ];
  if (state.argocd) {
    lines.push(
      `Argo CD:      ${state.argocd.url} (${state.argocd.version}; admin / ${argocdAdmin.password}; namespace ${state.argocd.namespace})`,
      `Git server:   ${state.argocd.gitUrl}/<repo>.git (bare repositories in ${state.argocd.gitRoot}, push by path)`,
    );
  }
  for (const e of readEndpoints(state)) {
    const details = e.version ? ` (${e.version}, log ${e.logPath})` : '';
    lines.push(`${`${e.kind} ${e.key}:`.padEnd(30)}${e.url}${details}`);
  }
  return lines.join('\n');
}

async function main(): Promise<number> {
  const command = process.argv[2];
  if (command === 'up') {
    const controller = new AbortController();
    let interrupted = false;
    process.on('SIGINT', () => {
      if (interrupted) return;
      interrupted = true;
      process.stderr.write('\n[sandbox] interrupted: tearing down ...\n');
      controller.abort();
      void down(defaultStateDir()).then(() => process.exit(130));
    });
    const number = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);
    const state = await up({
      zones: number('VMZONES_SANDBOX_ZONES') ?? 2,
      podRestartSeconds: number('VMZONES_SANDBOX_POD_RESTART_SECONDS'),
      readyTimeoutSeconds: number('VMZONES_SANDBOX_READY_TIMEOUT_SECONDS'),
      ...(process.argv.includes('--argocd') ? { argocd: true } : {}),
      signal: controller.signal,
    });
    process.stdout.write(`sandbox is up in ${state.startSeconds?.toFixed(1)} s\n${describe(state)}\n`);
    return 0;
  }
  if (command === 'down') {
    const report = await down(defaultStateDir());
    process.stdout.write(
      report.stopped.length ? `stopped: ${report.stopped.join(', ')}\n` : 'nothing was running\n',
    );
    if (report.portsStillBound.length) {
      process.stderr.write(`ports still bound after down: ${report.portsStillBound.join(', ')}\n`);
      return 1;
    }
    return 0;
  }
  if (command === 'status') {
    const result = status(defaultStateDir());
    if (!result) {
      process.stdout.write(`no sandbox in ${defaultStateDir()} (cache ${cacheDir()})\n`);
      return 1;
    }
    const dead = result.parts.filter((p) => !p.alive);
    for (const p of result.parts)
      process.stdout.write(`${p.name.padEnd(26)}${p.alive ? 'running' : 'DEAD'}  pid ${p.pid}\n`);
    let unhealthy = 0;
    for (const e of readEndpoints(result.state)) {
      const healthy = await fetch(`${e.url}/health`, { signal: AbortSignal.timeout(2000) })
        .then((r) => r.ok)
        .catch(() => false);
      if (!healthy) unhealthy++;
      process.stdout.write(
        `${`${e.kind} ${e.key}`.padEnd(26)}${healthy ? 'healthy' : 'NOT HEALTHY'}  pid ${e.pid}\n`,
      );
    }
    process.stdout.write(`${describe(result.state)}\n`);
    for (const p of dead) process.stdout.write(`--- ${p.name} log tail ---\n${tailLog(p.log, 15)}\n`);
    return dead.length || unhealthy ? 1 : 0;
  }
  process.stderr.write(`${usage}\n`);
  return 2;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `${error instanceof StartError || error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  },
);
