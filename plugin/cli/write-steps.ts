// `vmzones render --write FILE`: replaces the walk in a Rollout's spec.strategy.canary.steps and leaves every
// other byte of FILE as it was, so that the Git change is the spec change plus the steps it implies. The steps
// list is spliced in the source text (the yaml Document API gives each step's range): steps that stay are copied
// with their comments and formatting, new ones are written in block style at the list's indentation. The
// result is parsed back and compared before anything is written.

import { isDeepStrictEqual } from 'node:util';
import { isMap, isNode, isScalar, isSeq, type Node, stringify } from 'yaml';
import type { CanaryStep } from '../zones/render.ts';
import { InputError } from './io.ts';
import { type Manifests, type RolloutInFile, readManifests } from './manifests.ts';
import { classifyStep, stepRef, type WalkStep } from './walk-steps.ts';

type Entry = { reuse: number } | { create: CanaryStep };

const isWalk = (c: WalkStep) => c.kind === 'action' || c.kind === 'gate' || c.kind === 'invalid';

function describe(step: unknown): string {
  return typeof step === 'object' && step !== null ? Object.keys(step).join(', ') : JSON.stringify(step);
}

/**
 * The new list: the user's steps before and after the walk stay where they are; a user's step inside the old
 * walk (other than a pause) stays after the same zone action it followed. Pauses between zones come from the
 * rendered walk. Unchanged walk steps are reused (their comments kept).
 */
function plan(oldValues: readonly unknown[], rendered: readonly CanaryStep[]): Entry[] {
  const kinds = oldValues.map(classifyStep);
  const walk = kinds.flatMap((c, i) => (isWalk(c) ? [i] : []));
  const first = walk[0];
  const last = walk[walk.length - 1];
  if (first === undefined || last === undefined) {
    return [...oldValues.map((_, i) => ({ reuse: i })), ...rendered.map((s) => ({ create: s }))];
  }
  const anchored = new Map<string, number[]>();
  let anchor = '';
  for (let i = first; i <= last; i++) {
    const c = kinds[i];
    if (c?.kind === 'action') anchor = `${c.zone}/${c.action}`;
    else if (c !== undefined && !isWalk(c) && c.kind !== 'pause')
      anchored.set(anchor, [...(anchored.get(anchor) ?? []), i]);
  }
  const used = new Set<number>();
  const entries: Entry[] = oldValues.slice(0, first).map((_, i) => ({ reuse: i }));
  entries.push(...(anchored.get('') ?? []).map((i) => ({ reuse: i })));
  anchored.delete('');
  for (const step of rendered) {
    let match = -1;
    for (let i = first; i <= last && match < 0; i++) {
      const c = kinds[i];
      if (
        !used.has(i) &&
        c !== undefined &&
        (isWalk(c) || c.kind === 'pause') &&
        isDeepStrictEqual(oldValues[i], step)
      )
        match = i;
    }
    if (match >= 0) used.add(match);
    entries.push(match >= 0 ? { reuse: match } : { create: step });
    if ('plugin' in step) {
      const key = `${step.plugin.config.zone}/${step.plugin.config.action}`;
      entries.push(...(anchored.get(key) ?? []).map((i) => ({ reuse: i })));
      anchored.delete(key);
    }
  }
  for (const [key, indices] of anchored) {
    const i = indices[0] ?? 0;
    throw new InputError(
      `${stepRef(i)} (${describe(oldValues[i])}) follows ${key.replace('/', "'s ")}, which the new walk leaves out: ` +
        'move it before or after the walk and run again',
    );
  }
  entries.push(...oldValues.slice(last + 1).map((_, i) => ({ reuse: last + 1 + i })));
  return entries;
}

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
}

function indentLines(block: string, indent: string): string {
  return block.replace(/^(?=.)/gm, indent);
}

/** The `-` that starts a block-sequence item whose value begins at `offset`, or -1. */
function dashBefore(text: string, offset: number): number {
  let i = offset - 1;
  while (i >= 0 && (text[i] === ' ' || text[i] === '\t')) i--;
  return text[i] === '-' ? i : -1;
}

function range(node: unknown): [number, number, number] {
  if (!isNode(node) || node.range === undefined || node.range === null)
    throw new InputError('a step has no source position (an alias?): edit the steps by hand');
  return node.range;
}

function splice(
  text: string,
  rollout: RolloutInFile,
  seq: Node & { items: unknown[]; flow?: boolean },
  entries: Entry[],
): string {
  const created = (step: CanaryStep, indent: string) =>
    indentLines(stringify([step], { lineWidth: 0 }), indent);
  const items = seq.items;
  const dashes = items.map((item) => dashBefore(text, range(item)[0]));
  const [seqStart, seqEnd] = range(seq);
  if (seq.flow !== true && items.length > 0 && dashes.every((d) => d >= 0)) {
    const start = lineStart(text, dashes[0] ?? 0);
    const indent = text.slice(start, dashes[0]);
    if (indent.trim() !== '')
      throw new InputError('the steps list does not start on its own line: edit it by hand');
    const chunk = (i: number) => {
      const next = dashes[i + 1];
      const piece = text.slice(
        lineStart(text, dashes[i] ?? 0),
        next === undefined ? seqEnd : lineStart(text, next),
      );
      return piece.endsWith('\n') ? piece : `${piece}\n`;
    };
    let region = entries.map((e) => ('reuse' in e ? chunk(e.reuse) : created(e.create, indent))).join('');
    if (!text.slice(start, seqEnd).endsWith('\n')) region = region.replace(/\n$/, '');
    return text.slice(0, start) + region + text.slice(seqEnd);
  }
  // `steps: []` or a flow list: write a block list under the key, indented two more than it.
  const canary = rollout.document.getIn([...rollout.path, 'spec', 'strategy', 'canary'], true);
  const key = isMap(canary)
    ? canary.items.find((p) => isScalar(p.key) && p.key.value === 'steps')?.key
    : undefined;
  const keyStart = range(key)[0];
  const indent = ' '.repeat(keyStart - lineStart(text, keyStart) + 2);
  const region = entries
    .map((e) =>
      'reuse' in e
        ? `${indent}- ${text.slice(...range(items[e.reuse]).slice(0, 2))}\n`
        : created(e.create, indent),
    )
    .join('');
  return `${text.slice(0, seqStart)}\n${region.replace(/\n$/, '')}${text.slice(seqEnd)}`;
}

/** FILE's text with the Rollout's walk replaced by `rendered`; throws InputError when it cannot. */
export function writeSteps(
  text: string,
  m: Manifests,
  rollout: RolloutInFile,
  rendered: readonly CanaryStep[],
): string {
  const where = `Rollout ${rollout.name}`;
  if (rollout.blueGreen)
    throw new InputError(`${where} uses the blueGreen strategy: vmzones walks canary steps`);
  const seq = rollout.document.getIn([...rollout.path, 'spec', 'strategy', 'canary', 'steps'], true);
  if (!isSeq(seq))
    throw new InputError(
      `${where} has no spec.strategy.canary.steps list: add \`steps: []\` under spec.strategy.canary and run again`,
    );
  const oldValues = seq.items.map((item) => (isNode(item) ? item.toJS(rollout.document) : item));
  const entries = plan(oldValues, rendered);
  const result = splice(text, rollout, seq, entries);

  // Read it back: the file must parse, and the Rollout must hold exactly the planned steps.
  const want = entries.map((e) => ('reuse' in e ? oldValues[e.reuse] : e.create));
  const back = readManifests(result, 'the result');
  const again = back.rollouts[m.rollouts.indexOf(rollout)];
  if (back.documents.some((d) => d.errors.length > 0) || !isDeepStrictEqual(again?.steps, want))
    throw new InputError(
      `could not splice the steps into ${where} without reformatting it: edit the file by hand`,
    );
  return result;
}
