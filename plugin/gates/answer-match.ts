// Whether two zones' answers to the same queries match (gate zoneAnswers): every series of either answer, by its
// label set, within a relative tolerance of the other's value. A series only one zone has counts as 0 in the other:
// an aggregate of no data is an empty vector in one zone and `{} = 0` nowhere, so "no data" on both sides matches.

import type { QueryAnswer } from '../vm/zone-query.ts';

export interface AnswerDifference {
  /** The query's name (`series`, `samples`, `entries`, or `query` for a user's query). */
  readonly query: string;
  /** The series' label set, `{}` for an aggregate. */
  readonly series: string;
  readonly zone: number | null;
  readonly serving: number | null;
  /** |zone − serving| / max(|zone|, |serving|). */
  readonly relative: number;
}

/** The series whose values differ by more than `tolerance` (a fraction), each query in turn. */
export function answerDifferences(
  zone: Readonly<Record<string, QueryAnswer>>,
  serving: Readonly<Record<string, QueryAnswer>>,
  tolerance: number,
): AnswerDifference[] {
  const differences: AnswerDifference[] = [];
  for (const query of [...new Set([...Object.keys(zone), ...Object.keys(serving)])].sort()) {
    const ours = zone[query] ?? {};
    const theirs = serving[query] ?? {};
    for (const series of [...new Set([...Object.keys(ours), ...Object.keys(theirs)])].sort()) {
      const a = ours[series];
      const b = theirs[series];
      const relative = relativeDifference(a ?? 0, b ?? 0);
      if (relative > tolerance) {
        differences.push({ query, series, zone: a ?? null, serving: b ?? null, relative });
      }
    }
  }
  return differences;
}

function relativeDifference(a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b) ? 0 : 1;
  const scale = Math.max(Math.abs(a), Math.abs(b));
  return scale === 0 ? 0 : Math.abs(a - b) / scale;
}

/** A percentage for messages: 0.1%, 12.5%, 100%. */
export function percent(fraction: number): string {
  return `${Number((fraction * 100).toPrecision(3))}%`;
}
