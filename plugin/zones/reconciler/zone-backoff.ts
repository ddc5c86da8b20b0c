// The reconciler's bookkeeping for zones that cannot progress (plugin/zones/reconciler/reconciler.ts): a zone whose pass
// fails is tried again at the next pass, then after 10 s, 20 s, 40 s and at most every 60 s while it keeps
// failing, so that one broken zone (a forbidden patch, an unreachable cluster) does not cost API calls and a log
// warning every 5 s pass; its warning is said once per change of reason. A pass that gets through resets it.
// Time comes from the caller's clock, so tests move it.

export interface ZoneBackoffOptions {
  /** Milliseconds since the epoch, the reconciler's clock. */
  now: () => number;
  /** The wait after the second failure in a row, doubled after each further one. Default 10 s. */
  firstDelayMs?: number;
  /** The longest wait. Default 60 s. */
  maxDelayMs?: number;
}

interface Failing {
  failures: number;
  reason: string;
  notBefore: number;
  handedOver: boolean;
}

export class ZoneBackoff {
  readonly #now: () => number;
  readonly #firstDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #failing = new Map<string, Failing>();

  constructor(options: ZoneBackoffOptions) {
    this.#now = options.now;
    this.#firstDelayMs = options.firstDelayMs ?? 10_000;
    this.#maxDelayMs = options.maxDelayMs ?? 60_000;
  }

  /** Whether the zone may be tried in this pass. */
  due(id: string): boolean {
    const failing = this.#failing.get(id);
    return failing === undefined || this.#now() >= failing.notBefore;
  }

  /** Whether the zone rests after failing to advance handed-over work (a pass still reports it as working). */
  restingHandedOver(id: string): boolean {
    return this.#failing.get(id)?.handedOver === true;
  }

  /**
   * Records a failed try. `log` says whether to warn: on the first failure and whenever the reason differs from
   * the last one; `retryInMs` is how long the zone now rests (0 after the first failure: the next pass tries).
   */
  failed(
    id: string,
    reason: string,
    /** The failure was in advancing handed-over work (not in judging whether to take the zone over). */
    handedOver = false,
    /** A transient fault (409, 429, 5xx, a timeout): the zone can progress, so it does not rest; only its reason
     *  is kept, so that the warning is still said once per reason. */
    transient = false,
  ): { log: boolean; failures: number; retryInMs: number } {
    const before = this.#failing.get(id);
    if (transient) {
      const failures = before?.failures ?? 0;
      this.#failing.set(id, {
        failures,
        reason,
        notBefore: before?.notBefore ?? this.#now(),
        handedOver: before?.handedOver ?? handedOver,
      });
      return { log: before?.reason !== reason, failures, retryInMs: 0 };
    }
    const failures = (before?.failures ?? 0) + 1;
    const retryInMs =
      failures === 1 ? 0 : Math.min(this.#maxDelayMs, this.#firstDelayMs * 2 ** Math.min(failures - 2, 30));
    this.#failing.set(id, { failures, reason, notBefore: this.#now() + retryInMs, handedOver });
    return { log: before?.reason !== reason, failures, retryInMs };
  }

  /** Records a pass that got through; returns whether the zone had been failing (worth an info line). */
  succeeded(id: string): boolean {
    return this.#failing.delete(id);
  }

  /** Drops zones no longer listed (their object is gone or carries no vmzones state). */
  keepOnly(ids: ReadonlySet<string>): void {
    for (const id of this.#failing.keys()) if (!ids.has(id)) this.#failing.delete(id);
  }
}
