// Loopback port helpers: the sandbox picks free ports at start so several sandboxes (a developer's
// `sandbox up` and a test run) can live side by side.

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { cacheDir } from '../env/build.ts';
import { isAlive } from './processes.ts';

/** The lower bound of the kernel's ephemeral port range (outgoing connections take their ports from it). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

const handedOut = new Set<number>();

/**
 * Ports handed out to a live process of this machine, across processes: npm test runs sandboxes in parallel
 * lanes, and a port one sandbox picked but has not bound yet — or that a zone process frees while it restarts —
 * looks free to another. A reservation is a file named by the port holding the owner's pid; a dead owner's is
 * taken over.
 */
export function reservePort(port: number): boolean {
  const dir = join(cacheDir(), 'ports');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch {
      let text: string;
      try {
        text = readFileSync(file, 'utf8').trim();
      } catch {
        continue; // released meanwhile
      }
      // An empty file is a reservation being written right now.
      const owner = Number(text);
      if (text === '' || owner === process.pid || (Number.isInteger(owner) && owner > 0 && isAlive(owner)))
        return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

/**
 * A free loopback port BELOW the ephemeral range: a port from listen(0) lies inside it, and any outgoing
 * connection can take it between our check and the daemon's bind (seen: a zone failing with "address already
 * in use").
 */
export async function freePort(): Promise<number> {
  const min = 10_000;
  const max = ephemeralLow();
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = min + Math.floor(Math.random() * (max - min));
    if (handedOut.has(port)) continue;
    if ((await isPortFree(port)) && reservePort(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free loopback port in [${min}, ${max})`);
}

export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
