// Test helper: starts a private sandbox (its own state dir, its own ports) for one test file and
// tears it down afterwards, also when the test process is interrupted.

import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../env/build.ts';
import { checkDuringEveryWait, interruptedWaitPrefix, waitsInProgress } from './eventually.ts';
import { Kubectl } from './kubectl.ts';
import { deadDaemon, isAlive } from './processes.ts';
import {
  crashAndRestartController,
  type DownReport,
  down,
  type Endpoint,
  endpointOf,
  readOwner,
  readState,
  type SandboxOptions,
  type SandboxState,
  up,
  writeOwner,
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
  /**
   * Leaves the sandbox running after this process ends (the demo's --keep): its owner becomes its own etcd, so
   * the prune keeps it while it runs.
   */
  keep(): void;
  stop(): Promise<DownReport>;
}

export interface PruneDeps {
  isAlive: (pid: number) => boolean;
  /** Takes down a sandbox whose owner is gone (its daemons, its pod network). */
  down: (stateDir: string) => Promise<unknown>;
  now: () => number;
}

/** A folder without an owner file younger than this may be one whose owner is being written (or from before). */
const ownerlessGraceMs = 10 * 60_000;

function stateOf(dir: string): SandboxState | undefined {
  try {
    return readState(dir);
  } catch {
    return undefined; // state.json being written
  }
}

/**
 * Removes the state folders of earlier test sandboxes that nobody owns any more; returns them. A folder whose owner
 * (owner.pid: the test process that started it) is alive is never touched, however long its start takes (a cold
 * Argo CD build ran 969 s before its state.json existed). A sandbox whose owner is gone (a killed test) is taken
 * down first, its daemons and pod network with it. The newest folder is kept for its logs.
 */
function mtimeOf(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

export async function pruneOldTestDirs(
  root: string,
  deps: PruneDeps = { isAlive, down, now: Date.now },
): Promise<string[]> {
  // Another lane's start prunes the same root at the same time: a folder gone between the listing and its stat
  // (or a dangling link) is no folder to prune, not an error.
  const dirs = readdirSync(root)
    .filter((name) => name.startsWith('test-'))
    .map((name) => ({ dir: join(root, name), mtimeMs: mtimeOf(join(root, name)) }))
    .filter((entry): entry is { dir: string; mtimeMs: number } => entry.mtimeMs !== undefined)
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  const removed: string[] = [];
  for (const [i, { dir, mtimeMs }] of dirs.entries()) {
    const owner = readOwner(dir);
    if (owner !== undefined && deps.isAlive(owner)) continue;
    const state = stateOf(dir);
    if (owner === undefined && deps.now() - mtimeMs < ownerlessGraceMs) continue;
    if (state?.daemons.some((d) => deps.isAlive(d.pid))) {
      if (owner === undefined) continue; // from before owner files: whoever runs it stops it
      await deps.down(dir);
    }
    if (i === 0) continue;
    rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}

export async function startSandbox(options: Omit<SandboxOptions, 'stateDir'> = {}): Promise<Sandbox> {
  const root = join(cacheDir(), 'sandbox');
  mkdirSync(root, { recursive: true });
  await pruneOldTestDirs(root);
  const stateDir = mkdtempSync(join(root, 'test-'));
  writeOwner(stateDir, process.pid);
  let stopped: Promise<DownReport> | undefined;
  const stop = () => {
    stopped ??= down(stateDir);
    return stopped;
  };
  const starting = up({ ...options, stateDir });
  // A signal while the sandbox starts waits for the start to end, so no daemon it spawns afterwards is left.
  const onSignal = (signal: NodeJS.Signals) => {
    // Said first and synchronously: node's test runner ends the process on the same signal (reporting the running
    // test as "still pending"), and npm test's closing table repeats these lines (scripts/test.ts).
    for (const w of waitsInProgress()) {
      process.stderr.write(`${interruptedWaitPrefix}${w.what} (for ${w.seconds.toFixed(0)} s)\n`);
    }
    void starting
      .catch(() => undefined)
      .then(stop)
      .then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const state = await starting;
  const kubectl = new Kubectl(state.binaries.kubectl, state.kubeconfig);
  // Every wait of this process fails at once when a daemon of this sandbox dies (state.daemons follows restarts).
  const stopWatching = checkDuringEveryWait(() => deadDaemon(state.daemons));
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
    keep: () => {
      const etcd = state.daemons.find((d) => d.name === 'etcd');
      if (etcd !== undefined) writeOwner(stateDir, etcd.pid);
    },
    stop: async () => {
      stopWatching();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      return stop();
    },
  };
}
