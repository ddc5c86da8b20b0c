// A node:test reporter that `npm test` adds beside spec for each end-to-end phase (scripts/test.ts): one JSON line
// when a test starts (`test:dequeue`, emitted right before it runs) and one when it ends (`test:complete`), appended
// at once to the file named by VMZONES_TEST_PROGRESS_FILE. The spec reporter prints a test only when it ends, so
// without this a phase stopped at its limit could not say which test it was in (scripts/running-tests.ts reads the
// file). Written synchronously, not through the reporter's destination stream: a stop's SIGTERM (or the SIGKILL a
// minute later) ends the process before a stream would flush. The phases run with --test-isolation=none, so this
// reporter lives in the test process itself and sees each event as it happens. Its destination is stdout, where it
// writes nothing: node fsyncs a file destination at exit, and /dev/null refuses fsync (EINVAL fails the run).

import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const progressFileVariable = 'VMZONES_TEST_PROGRESS_FILE';

const reporterPath = fileURLToPath(import.meta.url);

/**
 * node's arguments for one end-to-end phase (npm test, scripts/test.ts; the unit test of this reporter runs the
 * same). --test-force-exit: a file whose tests have all ended exits even if a handle (a socket, a timer, a child's
 * pipe) would keep its event loop alive — without it such a file waits forever after its last test.
 * --test-isolation=none (one file per phase, so nothing to isolate) runs this reporter in the test process itself.
 */
export function nodeTestArgs(o: { timeoutMs: number; select: readonly string[]; file: string }): string[] {
  return [
    '--test',
    '--test-isolation=none',
    '--test-concurrency=1',
    `--test-timeout=${o.timeoutMs}`,
    '--test-force-exit',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${reporterPath}`,
    '--test-reporter-destination=stdout',
    ...o.select,
    o.file,
  ];
}

interface TestEvent {
  type: string;
  data: { name?: string; nesting?: number };
}

export default async function* runningTestsReporter(
  source: AsyncIterable<TestEvent>,
): AsyncGenerator<string> {
  const path = process.env[progressFileVariable];
  for await (const event of source) {
    const what =
      event.type === 'test:dequeue' ? 'started' : event.type === 'test:complete' ? 'ended' : undefined;
    if (path === undefined || what === undefined || event.data.name === undefined) continue;
    appendFileSync(
      path,
      `${JSON.stringify({ [what]: event.data.name, nesting: event.data.nesting ?? 0, at: Date.now() })}\n`,
    );
  }
  yield '';
}
