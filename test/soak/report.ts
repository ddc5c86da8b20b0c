// The soak's figures: walks, endings by kind, faults injected, invariant checks, violations, settle times (slowest
// overall and per ending kind), printed at the end as text and as the markdown table of docs/reliability.md
// ("Randomized soak").

import type { EndingKind, WalkPlan } from './history.ts';
import { type InvariantName, invariantNames, type Violation } from './invariants.ts';

export interface WalkFigures {
  plan: WalkPlan;
  /** From the ending to every zone settled (ms); undefined when it did not settle within the bound. */
  settleMs: number | undefined;
  /** What the ending did, in words ("aborted at step 4", "ending point never came: …"). */
  outcome: string;
}

export interface RunFigures {
  seed: number;
  startedAt: number;
  endedAt: number;
  walks: WalkFigures[];
  injected: Record<string, number>;
  checks: number;
  snapshotsFailed: number;
  reads: { sent: number; failed: number; apart: number };
  samples: { checked: number; lost: number; apart: number };
  violations: (Violation & { walk: number })[];
  settleBoundMs: number;
}

function seconds(ms: number | undefined): string {
  return ms === undefined ? 'not settled' : `${(ms / 1000).toFixed(0)} s`;
}

function perEnding(run: RunFigures): Map<EndingKind, WalkFigures[]> {
  const by = new Map<EndingKind, WalkFigures[]>();
  for (const w of run.walks) by.set(w.plan.ending, [...(by.get(w.plan.ending) ?? []), w]);
  return by;
}

function slowest(walks: readonly WalkFigures[]): number | undefined {
  if (walks.some((w) => w.settleMs === undefined)) return undefined;
  return Math.max(...walks.map((w) => w.settleMs ?? 0));
}

function violationsBy(run: RunFigures): Record<InvariantName, number> {
  const by = Object.fromEntries(invariantNames.map((n) => [n, 0])) as Record<InvariantName, number>;
  for (const v of run.violations) by[v.invariant]++;
  return by;
}

export function formatMarkdown(run: RunFigures): string {
  const minutes = (run.endedAt - run.startedAt) / 60_000;
  const injected = Object.entries(run.injected)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const byInvariant = Object.entries(violationsBy(run))
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const lines = [
    `Seed ${run.seed}, ${run.walks.length} walks in ${minutes.toFixed(0)} min (${new Date(run.startedAt).toISOString()}).`,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| walks run | ${run.walks.length} |`,
    `| faults injected | ${injected || 'none'} |`,
    `| invariant checks made | ${run.checks} (snapshots the API server did not answer: ${run.snapshotsFailed}) |`,
    `| reads through vmauth | ${run.reads.sent} sent, ${run.reads.failed} failed (+ ${run.reads.apart} during injected vmauth restarts, counted apart) |`,
    `| samples checked | ${run.samples.checked} sequence numbers × 4 zones, ${run.samples.lost} lost (+ ${run.samples.apart} sent while vmagent was restarted, counted apart) |`,
    `| violations (goal 0) | ${run.violations.length}${byInvariant ? ` (${byInvariant})` : ''} |`,
    `| slowest settle after an ending (bound ${run.settleBoundMs / 60_000} min) | ${seconds(slowest(run.walks))} |`,
    '',
    '| ending | walks | slowest settle | violations |',
    '| --- | --- | --- | --- |',
  ];
  for (const [kind, walks] of perEnding(run)) {
    const indexes = new Set(walks.map((w) => w.plan.index));
    const violations = run.violations.filter((v) => indexes.has(v.walk)).length;
    lines.push(`| ${kind} | ${walks.length} | ${seconds(slowest(walks))} | ${violations} |`);
  }
  return lines.join('\n');
}

export function formatText(run: RunFigures): string {
  const walkLines = run.walks.map(
    (w) =>
      `  walk ${w.plan.index} ${w.plan.subject}${w.plan.contender ? `+${w.plan.contender}` : ''} ${w.plan.ending}: ${w.outcome}; settled ${seconds(w.settleMs)}`,
  );
  const violationLines = run.violations.map(
    (v) => `  ${new Date(v.at).toISOString()} walk ${v.walk} ${v.invariant}: ${v.detail}`,
  );
  return [
    `---- vmzones soak: seed ${run.seed} ----`,
    ...walkLines,
    `violations: ${run.violations.length}`,
    ...violationLines,
    '',
    formatMarkdown(run),
  ].join('\n');
}
