// The `*.test.ts` files under a folder: what `npm test` runs one `node --test` per file (scripts/test.ts), and what
// scripts/phase-durations.json must name.

import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Paths as `dir` is given (relative to the working directory when it is), sorted. */
export function testFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...testFiles(path));
    else if (entry.name.endsWith('.test.ts')) found.push(path);
  }
  return found.sort();
}

/**
 * Files `npm test` runs as several phases, each its own `node --test` (and so its own sandbox), so that the longest
 * files don't decide when the lanes end. A part runs the tests whose names match its `tests` pattern
 * (`--test-name-pattern`); the part without one runs the tests no other part names (`--test-skip-pattern`), so a
 * test added to the file is never left out. The tests of these files are independent of each other (each starts
 * from a Healthy Rollout of its own and leaves every zone released and serving, or has a sandbox of its own).
 */
export const fileParts: Record<string, { part: string; tests?: string }[]> = {
  // One sandbox for four scenarios (1043 s on 2026-12-03): the plugin kills (469 s) beside the other three.
  'test/e2e/reliability/crashes.test.ts': [
    { part: 'plugin kills', tests: '^SIGKILL of the step plugin inside its actions' },
    { part: 'controller kills, vmauth restart, foreign edit' },
  ],
  // Two scenarios with a sandbox each (784 s).
  'test/e2e/reliability/reliability.test.ts': [
    { part: 'abort under faults', tests: '^API faults at 10% of the plugin’s requests for a whole abort' },
    { part: 'plugin kills' },
  ],
  // Five endings (840 s): the two new revisions (494 s) beside promote, revert and delete.
  'test/e2e/step/endings.test.ts': [
    { part: 'new revisions', tests: '^a new revision' },
    { part: 'promote, revert, delete' },
  ],
};

export interface FilePhase {
  /** The phase's name in npm test's table: the file, or `<file> [<part>]`. */
  name: string;
  file: string;
  /** node --test's arguments that pick the part's tests (none for a whole file). */
  select: string[];
}

/** The phases of the files under `dir`: one per file, or one per part of a file in fileParts. */
export function filePhases(dir: string): FilePhase[] {
  return testFiles(dir).flatMap((file) => {
    const parts = fileParts[file];
    if (parts === undefined) return [{ name: file, file, select: [] }];
    const named = parts.flatMap((p) => (p.tests === undefined ? [] : [p.tests]));
    return parts.map((p) => ({
      name: `${file} [${p.part}]`,
      file,
      select:
        p.tests === undefined
          ? named.map((pattern) => `--test-skip-pattern=${pattern}`)
          : [`--test-name-pattern=${p.tests}`],
    }));
  });
}
