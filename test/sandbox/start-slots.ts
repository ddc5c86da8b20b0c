// At most N sandboxes of one `npm test` run start at the same time. A start is the CPU-heaviest stretch of a
// sandbox's life (kube-apiserver's boot, CRDs, the operator's first rollout of the zones); four at once on two
// loaded cores pushed one past kubectl's 32 s OpenAPI download (2026-12-03: the GitOps file's start failed). Past
// its start a sandbox mostly waits, so only starts take turns. scripts/test.ts sets VMZONES_SANDBOX_START_SLOTS to
// `<folder>:<n>`; without it nothing waits.
//
// A slot is a file `slot-<i>` in the folder holding the pid of the process starting (made whole by a hard link, which
// fails when the slot is taken); a slot whose process is gone (a test killed mid-start) is taken over.

import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive } from './processes.ts';

export const startSlotsVariable = 'VMZONES_SANDBOX_START_SLOTS';

export interface StartSlotDeps {
  pid: number;
  isAlive: (pid: number) => boolean;
  sleep: (ms: number) => Promise<unknown>;
  now: () => number;
}

const defaults: StartSlotDeps = { pid: process.pid, isAlive, sleep, now: Date.now };

/** `<folder>:<n>` → the folder and n ≥ 1; undefined when unset; an error naming the variable when malformed. */
export function parseStartSlots(value: string | undefined): { dir: string; slots: number } | undefined {
  if (value === undefined || value === '') return undefined;
  const colon = value.lastIndexOf(':');
  const slots = Number(value.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(slots) || slots < 1)
    throw new Error(`${startSlotsVariable}=${value}: expected <folder>:<number of slots, at least 1>`);
  return { dir: value.slice(0, colon), slots };
}

/** Takes the slot at `path` if it is free or its process is gone; the file appears whole (a link of a written one). */
function tryTake(path: string, deps: StartSlotDeps): boolean {
  const mine = `${path}.${deps.pid}`;
  writeFileSync(mine, String(deps.pid));
  try {
    linkSync(mine, path);
    return true;
  } catch {
    let holder = Number.NaN;
    try {
      holder = Number(readFileSync(path, 'utf8'));
    } catch {
      return false; // released meanwhile: the next poll takes it
    }
    if (!(Number.isInteger(holder) && holder > 0 && deps.isAlive(holder))) rmSync(path, { force: true });
    return false;
  } finally {
    rmSync(mine, { force: true });
  }
}

/**
 * Waits for a free slot (polling every `pollMs`, at most `timeoutMs`: the error names the pids holding them) and
 * returns its release. Without the variable it returns at once.
 */
export async function takeStartSlot(
  value: string | undefined = process.env[startSlotsVariable],
  { timeoutMs = 15 * 60_000, pollMs = 1000 } = {},
  deps: StartSlotDeps = defaults,
): Promise<() => void> {
  const config = parseStartSlots(value);
  if (config === undefined) return () => undefined;
  mkdirSync(config.dir, { recursive: true });
  const paths = [...Array(config.slots).keys()].map((i) => join(config.dir, `slot-${i}`));
  const deadline = deps.now() + timeoutMs;
  for (;;) {
    const taken = paths.find((path) => tryTake(path, deps));
    if (taken !== undefined) return () => rmSync(taken, { force: true });
    if (deps.now() >= deadline) {
      const holders = paths.map((p) => {
        try {
          return readFileSync(p, 'utf8');
        } catch {
          return '?';
        }
      });
      throw new Error(
        `no sandbox start slot free in ${config.dir} within ${timeoutMs / 1000} s (${startSlotsVariable}); held by pids ${holders.join(', ')}`,
      );
    }
    await deps.sleep(pollMs);
  }
}
