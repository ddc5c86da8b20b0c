// Loopback port helpers: the sandbox picks free ports at start so several sandboxes (a developer's
// `sandbox up` and a test run) can live side by side.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

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
    if (await isPortFree(port)) {
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
