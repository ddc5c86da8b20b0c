// Polling for the tests that run on the sandbox: wait until `check` returns a value, or fail saying what was
// awaited and the last error seen.

import { setTimeout as sleep } from 'node:timers/promises';

export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  intervalMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await sleep(intervalMs);
  }
  throw new Error(
    `timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? `: ${String(last)}` : ''}`,
  );
}
