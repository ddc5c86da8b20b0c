// Daemon processes of the sandbox: each runs in its own process group (so stopping it also stops
// whatever it started), writes to its own log file and outlives the `sandbox up` command.

import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually, WaitError } from './eventually.ts';

export interface DaemonRecord {
  name: string;
  pid: number;
  log: string;
  ports: number[];
}

export class StartError extends Error {
  readonly part: string;
  readonly log: string | undefined;
  constructor(part: string, reason: string, log?: string) {
    const tail = log ? tailLog(log, 25) : '';
    super(
      `sandbox part "${part}" failed to start: ${reason}${log ? `\n--- last lines of ${log} ---\n${tail}` : ''}`,
    );
    this.name = 'StartError';
    this.part = part;
    this.log = log;
  }
}

export function tailLog(path: string, lines: number): string {
  if (!existsSync(path)) return '(no log written)';
  const text = readFileSync(path, 'utf8');
  return text
    .split('\n')
    .slice(-lines - 1)
    .join('\n');
}

export interface DaemonSpec {
  name: string;
  command: string;
  args: string[];
  log: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  ports?: number[];
}

export function startDaemon(spec: DaemonSpec): DaemonRecord {
  const fd = openSync(spec.log, 'a');
  try {
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env ?? process.env,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    if (child.pid === undefined) throw new StartError(spec.name, `could not exec ${spec.command}`, spec.log);
    child.unref();
    return { name: spec.name, pid: child.pid, log: spec.log, ports: spec.ports ?? [] };
  } finally {
    closeSync(fd);
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !isZombie(pid);
  } catch {
    return false;
  }
}

/** The process group of `pid` (from /proc: Node has no getpgid); undefined when it is gone. */
export function processGroupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After "pid (comm) ": state, ppid, pgrp.
    const group = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    return Number.isInteger(group) ? group : undefined;
  } catch {
    return undefined;
  }
}

function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

/** True while any non-zombie process is left in the group. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  return groupMembers(pgid).some((pid) => !isZombie(pid));
}

function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid) members.push(Number(entry));
    } catch {
      // the process vanished meanwhile
    }
  }
  return members;
}

/** Daemons this process ended on purpose (a stop, a crash a test makes): their death is no failure to report. */
const endedOnPurpose = new Set<number>();

/** Records that `pid` is about to be ended on purpose (deadDaemon does not report it). */
export function expectEnd(pid: number): void {
  endedOnPurpose.add(pid);
}

/**
 * The first of `daemons` that died without this process ending it, as a reason naming it with its log's last
 * lines; undefined while all live. test/sandbox/helper.ts makes it a check of every wait (test/sandbox/eventually.ts).
 */
export function deadDaemon(daemons: readonly DaemonRecord[]): string | undefined {
  const dead = daemons.find((d) => !endedOnPurpose.has(d.pid) && !isAlive(d.pid));
  if (dead === undefined) return undefined;
  return `sandbox daemon ${dead.name} (pid ${dead.pid}) died\n--- last lines of ${dead.log} ---\n${tailLog(dead.log, 15)}`;
}

/** SIGTERM the whole process group, then SIGKILL what is left after the grace period. */
export async function stopDaemon(record: DaemonRecord, graceMs = 15_000): Promise<void> {
  expectEnd(record.pid);
  if (!groupAlive(record.pid)) return;
  try {
    process.kill(-record.pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!groupAlive(record.pid)) return;
    await sleep(100);
  }
  try {
    process.kill(-record.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  const killDeadline = Date.now() + 5_000;
  while (groupAlive(record.pid) && Date.now() < killDeadline) await sleep(100);
}

/** SIGKILL of the whole process group at once (a crash: nothing gets to clean up), then waits until it is gone. */
export async function killDaemon(record: DaemonRecord): Promise<void> {
  expectEnd(record.pid);
  try {
    process.kill(-record.pid, 'SIGKILL');
  } catch {
    return;
  }
  const deadline = Date.now() + 5_000;
  while (groupAlive(record.pid) && Date.now() < deadline) await sleep(50);
}

/**
 * Pids of the processes whose executable is `argv0` and, with `argIncluding`, one of whose arguments contains it
 * (the sandbox's state folder: another sandbox's processes run the same binary).
 */
export function pidsRunning(argv0: string, argIncluding?: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv[0] === argv0 && (argIncluding === undefined || argv.some((a) => a.includes(argIncluding))))
        pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

export interface WaitOptions {
  part: string;
  log?: string;
  timeoutMs: number;
  /** A daemon whose death means waiting is pointless. */
  pid?: number;
  intervalMs?: number;
}

/** Polls check() until it returns a value; fails naming the part when it times out or its process dies. */
export async function waitFor<T>(check: () => Promise<T | undefined>, options: WaitOptions): Promise<T> {
  const { pid } = options;
  try {
    return await eventually(options.part, check, {
      timeoutMs: options.timeoutMs,
      intervalMs: options.intervalMs ?? 250,
      unless: () => (pid !== undefined && !isAlive(pid) ? 'process exited' : undefined),
    });
  } catch (error) {
    if (!(error instanceof WaitError)) throw error;
    throw new StartError(
      options.part,
      error.kind === 'impossible'
        ? (error.detail ?? 'process exited')
        : `not healthy after ${options.timeoutMs / 1000} s (${error.detail ?? 'not ready'})`,
      options.log,
    );
  }
}
