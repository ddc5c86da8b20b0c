// How many /metrics pages one process reads at once, and how much of each it may keep. The gates and the
// reconciler run in processes the Argo Rollouts controller starts and shares its node's memory with, and the pages
// come from pods others control: a huge or hostile page must fail that pod's scrape, never grow the heap. A page's
// body streams through the parser (only kept lines stay, plugin/vm/metrics-text.ts), so what one process holds is
// bounded by concurrentScrapes × (one kept line + keptBytesPerScrape), whatever the number of pods a gate names
// (docs/gates.md, "Limits of a scrape").

export interface ScrapeBudgetLimits {
  /** Scrapes in flight at once in this process; more wait for a free slot. */
  readonly concurrentScrapes: number;
  /** Bytes of kept lines one scrape may hold (kept samples cost about 1.4× that in heap). */
  readonly keptBytesPerScrape: number;
}

/** The largest page any config may ask for (docs/gates.md, "Limits of a scrape"): bodies stream, but reading one
 *  costs time. Here rather than in scrape.ts so that config validation (and the CLI) need not load the HTTP client. */
export const maxScrapeBytesCap = 256 * 1024 * 1024;

/** Enough for every vmagent and vmauth page seen (a few KiB of kept series), far from what would hurt a controller. */
export const defaultScrapeBudgetLimits: ScrapeBudgetLimits = {
  concurrentScrapes: 16,
  keptBytesPerScrape: 4 * 1024 * 1024,
};

/** A counting semaphore of scrape slots whose waits end: a waiter not served within its deadline gets nothing. */
export class ScrapeBudget {
  readonly limits: ScrapeBudgetLimits;
  #inFlight = 0;
  readonly #waiting: { grant: () => void }[] = [];

  constructor(limits: ScrapeBudgetLimits = defaultScrapeBudgetLimits) {
    if (!(limits.concurrentScrapes >= 1) || !(limits.keptBytesPerScrape > 0)) {
      throw new RangeError('a scrape budget needs at least one slot and a positive byte budget');
    }
    this.limits = limits;
  }

  /** Scrapes holding a slot now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Bytes of kept lines all slots together may hold: the process-wide budget. */
  get keptBytesTotal(): number {
    return this.limits.concurrentScrapes * this.limits.keptBytesPerScrape;
  }

  /**
   * Takes a slot, waiting at most `waitMs` for one; resolves with the function that frees it (call it once, when the
   * scrape is over), or undefined when no slot came free in time.
   */
  acquire(waitMs: number): Promise<(() => void) | undefined> {
    if (this.#inFlight < this.limits.concurrentScrapes) {
      this.#inFlight++;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve) => {
      const waiter = {
        grant: () => {
          clearTimeout(timer);
          resolve(this.#releaser());
        },
      };
      const timer = setTimeout(() => {
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
        resolve(undefined);
      }, waitMs);
      this.#waiting.push(waiter);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      // The slot passes straight to the next waiter, so #inFlight stays the same.
      if (next === undefined) this.#inFlight--;
      else next.grant();
    };
  }
}

/** The budget every scrape of this process shares unless a caller (a test) brings its own. */
export const processScrapeBudget = new ScrapeBudget();
