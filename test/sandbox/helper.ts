// Test helper: starts a private sandbox (its own state dir, its own ports) for one test file and
// tears it down afterwards, also when the test process is interrupted.

import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../env/build.ts';
import { Kubectl } from './kubectl.ts';
import { isAlive } from './processes.ts';
import {
  crashAndRestartController,
  type DownReport,
  down,
  type Endpoint,
  endpointOf,
  readState,
  type SandboxOptions,
  type SandboxState,
  up,
} from './sandbox.ts';

export interface Sandbox {
  state: SandboxState;
  kubectl: Kubectl;
  /** The real `kubectl argo rollouts` promote|abort|retry|status commands. */
  rollouts(args: string[]): Promise<string>;
  endpoint(
    kind: 'VMCluster' | 'VMSingle' | 'VLCluster' | 'VMAgent' | 'VLAgent' | 'VMAuth',
    name: string,
  ): Endpoint;
  /** SIGKILL of the Argo Rollouts controller with the plugins it started, then the same controller again. */
  crashController(): Promise<void>;
  stop(): Promise<DownReport>;
}

/** Removes the state dirs of earlier test sandboxes that no longer run (the newest is kept for its logs). */
function pruneOldTestDirs(root: string): void {
  const dirs = readdirSync(root)
    .filter((name) => name.startsWith('test-'))
    .map((name) => join(root, name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  for (const dir of dirs.slice(1)) {
    const state = readState(dir);
    // A folder without state yet may be a sandbox another test process is starting right now (parallel lanes).
    const starting = state === undefined && Date.now() - statSync(dir).mtimeMs < 10 * 60_000;
    if (!starting && !state?.daemons.some((d) => isAlive(d.pid)))
      rmSync(dir, { recursive: true, force: true });
  }
}

export async function startSandbox(options: Omit<SandboxOptions, 'stateDir'> = {}): Promise<Sandbox> {
  const root = join(cacheDir(), 'sandbox');
  mkdirSync(root, { recursive: true });
  pruneOldTestDirs(root);
  const stateDir = mkdtempSync(join(root, 'test-'));
  let stopped: Promise<DownReport> | undefined;
  const stop = () => {
    stopped ??= down(stateDir);
    return stopped;
  };
  const starting = up({ ...options, stateDir });
  // A signal while the sandbox starts waits for the start to end, so no daemon it spawns afterwards is left.
  const onSignal = (signal: NodeJS.Signals) => {
    void starting
      .catch(() => undefined)
      .then(stop)
      .then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const state = await starting;
  const kubectl = new Kubectl(state.binaries.kubectl, state.kubeconfig);
  return {
    state,
    kubectl,
    rollouts: (args) =>
      new Promise((resolve, reject) => {
        execFile(
          state.binaries.sandboxctl,
          ['rollouts', '--kubeconfig', state.kubeconfig, ...args],
          (error, stdout, stderr) =>
            error ? reject(new Error(`rollouts ${args.join(' ')}: ${stderr}`)) : resolve(stdout),
        );
      }),
    endpoint: (kind, name) => {
      const found = endpointOf(state, kind, name);
      if (!found) throw new Error(`no ${kind} ${name} endpoint in ${state.endpointsFile}`);
      return found;
    },
    crashController: async () => {
      Object.assign(state, await crashAndRestartController(stateDir));
    },
    stop: async () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      return stop();
    },
  };
}
