// The random part of the soak: which Rollout walks, whether the other walks at the same time, where the walk is
// ended and by what. Drawn from the project's seeded PRNG (test/fixtures/seeded-random.ts) only, in a fixed order
// per walk, so the same seed draws the same plans (the timing of the sandbox still varies), and a history of what
// was done, printed with every violation.

import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { seededRandom } from '../fixtures/seeded-random.ts';
import { type SoakRollout, soakRolloutNames, soakRollouts } from './topology.ts';

export const endingKinds = [
  'finished',
  'abort',
  'promote-full',
  'new-commit',
  'revert-to-stable',
  'delete-recreate',
  'plugin-kill',
  'controller-kill',
  'vmauth-restart',
  'vmagent-restart',
  'foreign-edit',
  'api-faults',
] as const;
export type EndingKind = (typeof endingKinds)[number];

export interface WalkPlan {
  index: number;
  /** The Rollout whose walk is ended. */
  subject: SoakRollout;
  /** The other Rollout walks a new revision at the same time (contending for zone-c), or not. */
  contender: SoakRollout | undefined;
  ending: EndingKind;
  /** The ending comes once the subject's walk is at this step index or past it… */
  atStep: number;
  /** …and this much later. */
  delayMs: number;
  /** api-faults: the share of the plugin's API requests that fail. */
  faultRate: number;
  /** api-faults: the fault proxy's own seed. */
  faultSeed: number;
  /** foreign-edit: change the field vmzones walks (true) or one it never touches. */
  foreignOnWalkedField: boolean;
}

export class Planner {
  readonly #random: () => number;
  #walks = 0;

  constructor(seed: number) {
    this.#random = seededRandom(seed);
  }

  #int(below: number): number {
    return Math.floor(this.#random() * below);
  }

  #pick<T>(items: readonly T[]): T {
    return items[this.#int(items.length)] as T;
  }

  /** The next walk; the draws happen in the same order whatever was drawn. */
  next(): WalkPlan {
    const subject = this.#pick(soakRolloutNames);
    const withContender = this.#random() < 0.5;
    const ending = this.#pick(endingKinds);
    const steps = soakRollouts[subject].length * 3;
    const atStep = this.#int(steps);
    const delayMs = this.#int(8000);
    const faultRate = 0.02 + this.#random() * 0.13;
    const faultSeed = 1 + this.#int(1_000_000);
    const foreignOnWalkedField = this.#random() < 0.5;
    return {
      index: ++this.#walks,
      subject,
      contender: withContender ? soakRolloutNames.find((r) => r !== subject) : undefined,
      ending,
      atStep,
      delayMs,
      faultRate,
      faultSeed,
      foreignOnWalkedField,
    };
  }
}

export function describePlan(plan: WalkPlan): string {
  const detail =
    plan.ending === 'api-faults'
      ? ` at ${(plan.faultRate * 100).toFixed(0)}% (proxy seed ${plan.faultSeed})`
      : plan.ending === 'foreign-edit'
        ? ` of ${plan.foreignOnWalkedField ? 'the walked field' : 'a field vmzones never touches'}`
        : '';
  return `walk ${plan.index}: ${plan.subject}${plan.contender ? ` with ${plan.contender} walking too` : ''}; ending ${plan.ending}${detail} at step ${plan.atStep} + ${(plan.delayMs / 1000).toFixed(1)} s`;
}

/**
 * What happened, in order, with wall-clock times: each line printed as it happens and appended to a file (the whole
 * history), so a violation can be read against it and replayed with the seed.
 */
export class History {
  readonly #lines: string[] = [];
  readonly file: string;
  /** Index of the first line of the current walk. */
  #walkStart = 0;

  constructor(file: string) {
    this.file = file;
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, '');
  }

  add(line: string): void {
    const entry = `${new Date().toISOString()} ${line}`;
    this.#lines.push(entry);
    appendFileSync(this.file, `${entry}\n`);
    console.log(`[soak] ${entry}`);
  }

  startWalk(): void {
    this.#walkStart = this.#lines.length;
  }

  get lines(): readonly string[] {
    return this.#lines;
  }

  /** The lines since the current walk started (earlier ones are printed above and kept in the file). */
  get walkLines(): readonly string[] {
    return this.#lines.slice(this.#walkStart);
  }
}
