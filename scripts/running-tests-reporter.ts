// A node:test reporter that `npm test` adds beside spec for each end-to-end phase (scripts/test.ts): one JSON line
// when a test starts (`test:dequeue`, emitted right before it runs) and one when it ends (`test:complete`), appended
// at once to the file named by VMZONES_TEST_PROGRESS_FILE. The spec reporter prints a test only when it ends, so
// without this a phase stopped at its limit could not say which test it was in (scripts/running-tests.ts reads the
// file). Written synchronously, not through the reporter's destination stream: a stop's SIGTERM (or the SIGKILL a
// minute later) ends the process before a stream would flush. The phases run with --test-isolation=none, so this
// reporter lives in the test process itself and sees each event as it happens.

import { appendFileSync } from 'node:fs';

export const progressFileVariable = 'VMZONES_TEST_PROGRESS_FILE';

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
