// Where a sandbox start spends its time: each step of up() (test/sandbox/sandbox.ts) is timed and kept in state.json
// as `startSteps`, in the order the steps began. Steps may run side by side (the zone clusters beside the hub), so
// each carries the second it began at, counted from the start, besides its length: the longest chain of steps is
// what a start costs, not their sum.

export interface StartStep {
  step: string;
  /** Seconds from the start of up() to this step's beginning. */
  at: number;
  seconds: number;
  /** Set when the step threw: what it was doing when the start failed. */
  failed?: true;
}

export interface StartStepClock {
  now: () => number;
}

export class StartSteps {
  readonly steps: StartStep[] = [];
  readonly #clock: StartStepClock;
  readonly #started: number;
  readonly #onStep: (step: StartStep) => void;

  /** `onStep` sees each step as it ends (up() writes state.json and a log line). */
  constructor(clock: StartStepClock, onStep: (step: StartStep) => void = () => undefined) {
    this.#clock = clock;
    this.#started = clock.now();
    this.#onStep = onStep;
  }

  /** Seconds since the start, to a tenth. */
  elapsed(): number {
    return round(this.#clock.now() - this.#started);
  }

  /** Runs `work` as the step `name` and records its length, also when it throws (then marked failed). */
  async time<T>(name: string, work: () => Promise<T> | T): Promise<T> {
    const began = this.#clock.now();
    const step: StartStep = { step: name, at: round(began - this.#started), seconds: 0 };
    this.steps.push(step);
    try {
      return await work();
    } catch (error) {
      step.failed = true;
      throw error;
    } finally {
      step.seconds = round(this.#clock.now() - began);
      this.#onStep(step);
    }
  }
}

function round(ms: number): number {
  return Math.round(ms / 100) / 10;
}
