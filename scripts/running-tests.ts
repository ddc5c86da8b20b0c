// Which tests of a phase were running when it ended: read from the lines scripts/running-tests-reporter.ts wrote.
// npm test's closing table names them beside a phase that was stopped or failed, so "STOPPED" says in which test.

/** A test still running when the phase ended, with how long it had run (to `now`). */
export interface RunningTest {
  name: string;
  seconds: number;
}

const record = (
  line: string,
): { started?: string; ended?: string; nesting: number; at: number } | undefined => {
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const { started, ended, nesting, at } = parsed as Record<string, unknown>;
    if (typeof nesting !== 'number' || typeof at !== 'number') return undefined;
    return {
      ...(typeof started === 'string' ? { started } : {}),
      ...(typeof ended === 'string' ? { ended } : {}),
      nesting,
      at,
    };
  } catch {
    return undefined; // a line cut off by the stop
  }
};

/**
 * The tests started and not ended, innermost last, without the file itself (node's runner reports each file as
 * a test of its own, named by its path).
 */
export function runningTests(text: string, now: number): RunningTest[] {
  const open = new Map<string, { name: string; at: number }>();
  for (const line of text.split('\n')) {
    const r = line.trim() === '' ? undefined : record(line);
    if (r === undefined) continue;
    if (r.started !== undefined) open.set(`${r.nesting}\u0000${r.started}`, { name: r.started, at: r.at });
    if (r.ended !== undefined) open.delete(`${r.nesting}\u0000${r.ended}`);
  }
  return [...open.values()]
    .filter((t) => !/\.test\.ts$/.test(t.name))
    .map((t) => ({ name: t.name, seconds: Math.max(0, (now - t.at) / 1000) }));
}

/** "while running 'name' (for 12 s)", or undefined when no test was running. */
export function describeRunning(tests: readonly RunningTest[]): string | undefined {
  const innermost = tests.at(-1);
  if (innermost === undefined) return undefined;
  const name = innermost.name.length > 100 ? `${innermost.name.slice(0, 100)}…` : innermost.name;
  return `while running '${name}' (for ${innermost.seconds.toFixed(0)} s)`;
}
