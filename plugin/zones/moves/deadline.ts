// Every wait ends (issue 21 item 3): a wait knows since when it waits and, where a timeout applies, its deadline;
// past it the wait fails with a message naming what never came. The one check of a deadline, for the moves and
// the step actions alike.

/** The end of a wait of `timeoutMs` that began at `since`. */
export function deadlineOf(since: Date, timeoutMs: number): Date {
  return new Date(since.getTime() + timeoutMs);
}

export function pastDeadline(since: Date, timeoutMs: number, now: Date): boolean {
  return now.getTime() > deadlineOf(since, timeoutMs).getTime();
}
