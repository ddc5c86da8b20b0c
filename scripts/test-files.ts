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
