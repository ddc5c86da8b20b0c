// Time as the upper layers read it and wait on it, handed to them as a dependency (like the logger), so that unit
// tests drive a clock of their own (test/unit/fake-clock.ts) instead of waiting in real time.

import { setTimeout as wait } from 'node:timers/promises';

export interface Clock {
  now(): Date;
  /** Resolves once `ms` have passed on this clock. */
  sleep(ms: number): Promise<void>;
}

/** The machine's clock: what the product runs on. */
export const systemClock: Clock = {
  now: () => new Date(),
  sleep: async (ms) => {
    await wait(ms);
  },
};
