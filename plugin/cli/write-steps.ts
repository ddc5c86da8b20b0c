// `vmzones render --write FILE`: replaces the walk in a Rollout's spec.strategy.canary.steps and leaves every
// other byte of FILE as it was, so that the Git change is the spec change plus the steps it implies. The steps
// list is spliced in the source text (the yaml Document API gives each step's range): steps that stay are copied
// with their comments and formatting, new ones are written in block style at the list's indentation. The
// result is parsed back and compared before anything is written.

import { isDeepStrictEqual } from 'node:util';
import { Document, isCollection, isMap, isNode, isScalar, isSeq, type YAMLSeq } from 'yaml';
import type { CanaryStep } from '../zones/render.ts';
import { configZones } from '../zones/step/actions.ts';
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
      const key = `${(configZones(step.plugin.config) ?? []).join(',')}/${step.plugin.config.action}`;
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

/** Where the line after `offset` starts (offset itself when it already starts a line). */
function afterLine(text: string, offset: number): number {
  if (offset > 0 && text[offset - 1] === '\n') return offset;
  const nl = text.indexOf('\n', offset);
  return nl < 0 ? text.length : nl + 1;
}

type StepStyle = 'block' | 'flow' | 'inner-flow';
interface Look {
  style: StepStyle;
  /** `{ a: b }` rather than `{a: b}`. */
  padding: boolean;
  /** Lists indented under their key (kustomize and kubectl write them at the key's column). */
  indentSeq: boolean;
}

/** How the existing vmzones steps are written (`- plugin: {name: …}` is inner-flow), for new ones to match. */
function styleOf(
  items: readonly unknown[],
  kinds: readonly WalkStep[],
  text: string,
  indentSeq: boolean,
): Look {
  const i = kinds.findIndex((c) => c.kind === 'action');
  const item = items[i];
  const block: Look = { style: 'block', padding: true, indentSeq };
  if (!isMap(item)) return block;
  const inner = item.items[0]?.value;
  const flowNode = item.flow === true ? item : isCollection(inner) && inner.flow === true ? inner : undefined;
  if (flowNode === undefined) return block;
  return {
    style: flowNode === item ? 'flow' : 'inner-flow',
    padding: text[range(flowNode)[0] + 1] === ' ',
    indentSeq,
  };
}

function createStep(step: CanaryStep, indent: string, look: Look): string {
  const doc = new Document([step]);
  const item = isSeq(doc.contents) ? doc.contents.items[0] : undefined;
  if (isMap(item) && look.style === 'flow') item.flow = true;
  if (isMap(item) && look.style === 'inner-flow')
    for (const pair of item.items) if (isCollection(pair.value)) pair.value.flow = true;
  return indentLines(
    doc.toString({ lineWidth: 0, flowCollectionPadding: look.padding, indentSeq: look.indentSeq }),
    indent,
  );
}

function splice(
  text: string,
  rollout: RolloutInFile,
  seq: YAMLSeq,
  entries: Entry[],
  kinds: readonly WalkStep[],
): string {
  const items = seq.items;
  const canary = rollout.document.getIn([...rollout.path, 'spec', 'strategy', 'canary'], true);
  const key = isMap(canary)
    ? canary.items.find((p) => isScalar(p.key) && p.key.value === 'steps')?.key
    : undefined;
  const keyStart = range(key)[0];
  const keyColumn = keyStart - lineStart(text, keyStart);
  const dashes = items.map((item) => dashBefore(text, range(item)[0]));
  const [seqStart, seqEnd] = range(seq);
  if (seq.flow !== true && items.length > 0 && dashes.every((d) => d >= 0)) {
    const start = lineStart(text, dashes[0] ?? 0);
    const indent = text.slice(start, dashes[0]);
    if (indent.trim() !== '')
      throw new InputError('the steps list does not start on its own line: edit it by hand');
    const look = styleOf(items, kinds, text, indent.length > keyColumn);
    // Item i owns the text from the end of item i-1's line (its comment lines included) to the end of its own.
    const bounds = items.map((_, i) => (i === 0 ? start : afterLine(text, range(items[i - 1])[1])));
    const chunk = (i: number) => {
      const piece = text.slice(bounds[i], bounds[i + 1] ?? seqEnd);
      return piece.endsWith('\n') ? piece : `${piece}\n`;
    };
    let region = entries
      .map((e) => ('reuse' in e ? chunk(e.reuse) : createStep(e.create, indent, look)))
      .join('');
    if (!text.slice(start, seqEnd).endsWith('\n')) region = region.replace(/\n$/, '');
    return text.slice(0, start) + region + text.slice(seqEnd);
  }
  // `steps: []` or a flow list: write a block list under the key, indented two more than it.
  const look = styleOf(items, kinds, text, true);
  const indent = ' '.repeat(keyColumn + 2);
  const region = entries
    .map((e) =>
      'reuse' in e
        ? `${indent}- ${text.slice(...range(items[e.reuse]).slice(0, 2))}\n`.replace(/\n\n$/, '\n')
        : createStep(e.create, indent, look),
    )
    .join('');
  let from = seqStart;
  while (from > 0 && (text[from - 1] === ' ' || text[from - 1] === '\t')) from--; // no blank after `steps:`
  const keepsNewline = text.slice(seqStart, seqEnd).endsWith('\n');
  return `${text.slice(0, from)}\n${keepsNewline ? region : region.replace(/\n$/, '')}${text.slice(seqEnd)}`;
}

/**
 * The pauses between zones the Rollout's walk already has, as --pause values: one value, 'none' for a walk of
 * several zones without a pause, several values when they differ, none for a walk of one zone.
 */
export function pausesInWalk(steps: readonly unknown[] | undefined): string[] {
  const kinds = (steps ?? []).map(classifyStep);
  const walk = kinds.flatMap((c, i) => (isWalk(c) ? [i] : []));
  const values = new Set<string>();
  let zones = 0;
  let lastZone = '';
  kinds.forEach((c, i) => {
    if (c.kind === 'action' && c.zone !== lastZone) {
      zones++;
      lastZone = c.zone;
    }
    if (c.kind !== 'pause' || i < (walk[0] ?? 0) || i > (walk[walk.length - 1] ?? 0)) return;
    const step = steps?.[i] as { pause?: { duration?: unknown } } | undefined;
    const d = step?.pause?.duration;
    values.add(d === undefined ? 'manual' : typeof d === 'number' ? `${d}s` : String(d));
  });
  if (values.size === 0) return zones > 1 ? ['none'] : [];
  return [...values];
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
  const result = splice(text, rollout, seq, entries, oldValues.map(classifyStep));

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
