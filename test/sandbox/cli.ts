// `npm run sandbox -- up|down|status`: the one entry point to the local real environment.

import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cacheDir } from '../env/build.ts';
import { argocdAdmin } from './argocd.ts';
import { type SandboxZoneKind, sandboxZoneKinds } from './manifests.ts';
import { StartError, tailLog } from './processes.ts';
import { defaultStateDir, down, readEndpoints, type SandboxState, status, up } from './sandbox.ts';

const usage = `usage: sandbox up [--argocd] [--zone-clusters N [--zone-pod-network]] [--zone-kind KIND]|down|status
  --argocd: also start Argo CD v3.2.11 and a Git server on loopback (or VMZONES_SANDBOX_ARGOCD=1)
  --zone-clusters N: the last N zones each in a Kubernetes cluster of its own (etcd + kube-apiserver +
               operator; docs/multicluster.md), registered as cluster-b, cluster-c, ...; zones default N + 1
  --zone-pod-network: the zone clusters' Pods get an address inside a network namespace the sandbox makes (root,
               iproute2), so that their API servers' pod proxy reaches them (docs/testing.md, "The simulated kubelet")
  --zone-kind KIND: what each zone is: ${sandboxZoneKinds.join(' | ')} (default VMCluster; docs/zone-kinds.md)
  environment: VMZONES_CACHE (build cache, default ~/.cache/vmzones),
               VMZONES_SANDBOX_DIR (state dir, default $VMZONES_CACHE/sandbox/default),
               VMZONES_SANDBOX_ZONES (number of zones, default 2, or zone clusters + 1),
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
    `zones:        ${state.zones.map((z) => `${z.zone}=${z.cluster === undefined ? '' : `${z.cluster}:`}${z.kind} ${state.vmNamespace}/${z.vmcluster}`).join(', ')}`,
    `loadgen:      ${state.loadgenUrl ?? '-'}`,
  ];
  for (const cluster of state.zoneClusters ?? []) {
    lines.push(
      `${`${cluster.name} (${cluster.zone}):`.padEnd(22)}API server ${cluster.apiServer}, kubeconfig ${cluster.kubeconfig}${cluster.podIP === undefined ? '' : `, Pods at ${cluster.podIP}`}`,
    );
  }
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

/** The flags of `up`, or what is wrong with them. */
function upFlags(
  args: string[],
):
  | { argocd: boolean; zoneClusters: number; zoneKind: SandboxZoneKind | undefined; zonePodNetwork: boolean }
  | string {
  let values: {
    argocd?: boolean;
    'zone-clusters'?: string;
    'zone-kind'?: string;
    'zone-pod-network'?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        argocd: { type: 'boolean' },
        'zone-clusters': { type: 'string' },
        'zone-kind': { type: 'string' },
        'zone-pod-network': { type: 'boolean' },
      },
    }));
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  const zoneClusters = Number(values['zone-clusters'] ?? 0);
  if (!Number.isInteger(zoneClusters) || zoneClusters < 0 || zoneClusters > 4) {
    return `--zone-clusters: a whole number from 0 to 4, not ${values['zone-clusters']}`;
  }
  const kind = values['zone-kind'];
  const zoneKind = sandboxZoneKinds.find((k) => k === kind);
  if (kind !== undefined && zoneKind === undefined) {
    return `--zone-kind: one of ${sandboxZoneKinds.join(', ')}, not ${kind}`;
  }
  const zonePodNetwork = values['zone-pod-network'] === true;
  if (zonePodNetwork && zoneClusters === 0) return '--zone-pod-network needs --zone-clusters';
  return { argocd: values.argocd === true, zoneClusters, zoneKind, zonePodNetwork };
}

async function main(): Promise<number> {
  const command = process.argv[2];
  if (command === 'up') {
    const flags = upFlags(process.argv.slice(3));
    if (typeof flags === 'string') {
      process.stderr.write(`${flags}\n${usage}\n`);
      return 2;
    }
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
      zones: number('VMZONES_SANDBOX_ZONES') ?? (flags.zoneClusters > 0 ? flags.zoneClusters + 1 : 2),
      ...(flags.zoneClusters > 0 ? { zoneClusters: flags.zoneClusters } : {}),
      ...(flags.zoneKind === undefined ? {} : { zoneKind: flags.zoneKind }),
      ...(flags.zonePodNetwork ? { zonePodNetwork: true } : {}),
      podRestartSeconds: number('VMZONES_SANDBOX_POD_RESTART_SECONDS'),
      readyTimeoutSeconds: number('VMZONES_SANDBOX_READY_TIMEOUT_SECONDS'),
      ...(flags.argocd ? { argocd: true } : {}),
      signal: controller.signal,
    });
    process.stdout.write(`sandbox is up in ${state.startSeconds?.toFixed(1)} s\n${describe(state)}\n`);
    return 0;
  }
  if (command === 'down') {
    const report = await down(defaultStateDir());
    process.stdout.write(
      report.stopped.length
        ? `stopped in ${report.seconds.toFixed(1)} s: ${report.stopped.join(', ')}\n`
        : 'nothing was running\n',
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
    const width = Math.max(26, ...result.parts.map((p) => p.name.length + 2));
    for (const p of result.parts)
      process.stdout.write(`${p.name.padEnd(width)}${p.alive ? 'running' : 'DEAD'}  pid ${p.pid}\n`);
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
