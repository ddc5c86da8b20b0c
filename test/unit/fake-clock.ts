// A clock of the unit tests' own (plugin/goplugin/clock.ts): time stands still until something sleeps, and a sleep
// moves it on at once, so a test that waits 2 s for a reload stamp or 6 s of retry backoff takes no real time and
// still sees the same order of events and the same timestamps relative to each other.

import { setImmediate } from 'node:timers/promises';
import type { Clock } from '../../plugin/goplugin/index.ts';

/** A fixed, whole-second start, far from the machine's time, so that a real-time read slipping into the code under
 *  test stands out. */
export const fakeClockStart = Date.parse('2030-01-01T00:00:00Z');

export class FakeClock implements Clock {
  #ms: number;
  /** Every sleep asked for, in ms, in order. */
  readonly slept: number[] = [];

  constructor(startMs = fakeClockStart) {
    this.#ms = startMs;
  }

  readonly now = (): Date => new Date(this.#ms);

  /** Moves the time on by `ms` and resolves after other ready work ran (as a real sleep lets sockets progress). */
  readonly sleep = async (ms: number): Promise<void> => {
    this.slept.push(ms);
    this.advance(ms);
    await setImmediate();
  };

  /** Moves the time on by `ms` without sleeping (a test standing in for time passing between calls). */
  advance(ms: number): void {
    this.#ms += Math.max(0, ms);
  }
}
