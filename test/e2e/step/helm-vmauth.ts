// A helm-managed vmauth in the sandbox: a real vmauth process whose -auth.config comes from a Secret, and a Pod
// for it (made Ready by the simulated kubelet's probe against the real process) so that it can be discovered.
// What a cluster would do and the sandbox cannot is simulated here, in the open:
//   - the kubelet projecting the Secret into the pod and a config-reloader sending SIGHUP on change: a poll of
//     the Secret that rewrites the file and signals vmauth;
//   - cluster DNS: vmselect-<vmcluster>.<ns>.svc:8481/select/<tenant>/prometheus becomes the zone's loopback
//     address with /prometheus (the zone is a single-node process), as the operator simulator does.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import type { Sandbox } from '../../sandbox/helper.ts';
import { freePort } from '../../sandbox/ports.ts';
import { eventually, ns } from './harness.ts';

export const helmSecret = { name: 'helm-vmauth', key: 'auth.yml' };
export const helmUser = { username: 'helm-read', password: 'helm' };
export const helmPodLabels = { app: 'helm-vmauth' };

/** The kind of config the victoria-metrics-auth chart users keep in Git: comments, quoting, flow lists. */
export function helmConfig(zones: string[]): string {
  const urls = zones.map((z, i) =>
    i === 1
      ? `        - "http://vmselect-${z}.${ns}.svc:8481/select/0/prometheus/"   # second zone, quoted`
      : `        - http://vmselect-${z}.${ns}.svc:8481/select/0/prometheus/`,
  );
  return [
    '# vmauth for Grafana, managed by helm (values.yaml -> config).',
    'users:',
    `  - username: ${helmUser.username}   # read-only user`,
    `    password: '${helmUser.password}'`,
    '    url_map:',
    '      # every zone serves reads; vmzones takes one out while it changes',
    '      - src_paths: ["/api/v1/.*"]',
    '        url_prefix:',
    ...urls,
    '        load_balancing_policy: least_loaded',
    '',
  ].join('\n');
}

function translate(config: string, zonePorts: Map<string, number>): string {
  return config.replace(
    /http:\/\/vmselect-([a-z0-9-]+)\.([a-z0-9-]+)\.svc:8481\/select\/[^/]+\/prometheus\//g,
    (whole, vmcluster: string) => {
      const port = zonePorts.get(vmcluster);
      return port === undefined ? whole : `http://127.0.0.1:${port}/prometheus/`;
    },
  );
}

export interface HelmVmauth {
  url: string;
  stop(): Promise<void>;
}

/** `namespace` and `config` (default: `vm` and helmConfig(zones)): test/bench/waves-scale.ts routes placeholder
 *  zones, which have no process (their URLs stay as written), through a vmauth of its own namespace. `ports`: a
 *  zone's vmselect reached at another loopback port than its process's (a proxy in front of it). */
export async function startHelmVmauth(
  sandbox: Sandbox,
  kube: KubeObjects,
  zones: string[],
  {
    namespace = ns,
    config = helmConfig(zones),
    ports = {},
  }: { namespace?: string; config?: string; ports?: Record<string, number> } = {},
): Promise<HelmVmauth> {
  const dir = mkdtempSync(join(tmpdir(), 'vmzones-helm-vmauth-'));
  const configPath = join(dir, 'auth.yml');
  const port = await freePort();
  const zonePorts = new Map(
    zones.map((z) => [z, ports[z] ?? Number(new URL(sandbox.endpoint('VMCluster', z).url).port)]),
  );
  const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace, name: helmSecret.name };

  await sandbox.kubectl.apply([
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: helmSecret.name, namespace },
      stringData: { [helmSecret.key]: config },
    },
  ]);
  const read = async () => {
    const secret = (await kube.get(secretRef)) as { data?: Record<string, string> };
    return Buffer.from(secret.data?.[helmSecret.key] ?? '', 'base64').toString('utf8');
  };
  let last = await read();
  writeFileSync(configPath, translate(last, zonePorts));
  const log = openSync(join(sandbox.state.stateDir, 'logs', 'helm-vmauth.log'), 'a');
  const vmauth: ChildProcess = spawn(
    sandbox.state.binaries.vmauth,
    [`-httpListenAddr=127.0.0.1:${port}`, `-auth.config=${configPath}`],
    { stdio: ['ignore', log, log] },
  );
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    'helm vmauth to answer',
    async () => ((await fetch(`${url}/health`)).ok ? true : undefined),
    20_000,
    200,
  );

  await sandbox.kubectl.apply([
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'helm-vmauth-0', namespace, labels: helmPodLabels },
      spec: {
        containers: [
          {
            name: 'vmauth',
            image: 'victoriametrics/vmauth:v1.151.0',
            ports: [{ name: 'http', containerPort: port }],
            readinessProbe: { httpGet: { host: '127.0.0.1', port: 'http', path: '/health' } },
          },
        ],
      },
    },
  ]);
  await eventually('the helm vmauth Pod to be Ready', async () => {
    const pod = (await kube.get({ apiVersion: 'v1', kind: 'Pod', namespace, name: 'helm-vmauth-0' })) as {
      status?: { conditions?: { type: string; status: string }[] };
    };
    return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
  });

  let stopped = false;
  const sync = (async () => {
    while (!stopped) {
      try {
        const text = await read();
        if (text !== last) {
          last = text;
          writeFileSync(configPath, translate(text, zonePorts));
          vmauth.kill('SIGHUP');
        }
      } catch {
        // the next poll retries
      }
      await sleep(300);
    }
  })();

  return {
    url,
    async stop() {
      stopped = true;
      await sync;
      vmauth.kill('SIGTERM');
      await new Promise((resolve) =>
        vmauth.exitCode !== null ? resolve(undefined) : vmauth.once('exit', resolve),
      );
    },
  };
}
