// `vmzones lint` on a Rollout: do its canary steps walk the spec's zones as `vmzones render` would? Every zone
// (or the --only subset) exactly once, each as drainReads, apply, a gate, restoreReads in that order, one zone
// (or one wave of zones, whose steps they share) after another. Zone order, pauses and the user's own steps (anywhere) are free; docs/cli.md lists the rules.

import type { ZoneSpecDocument } from '../zones/spec.ts';
import { classifyStep, stepRef } from './walk-steps.ts';

export interface WalkCheckOptions {
  /** The zones the walk must visit; default: every zone of the spec. */
  only?: readonly string[];
  /** The gate's template; '' accepts zones without a gate; default: any analysis step with arg `zone`. */
  template?: string;
}

type Token = 'drainReads' | 'apply' | 'gate' | 'restoreReads';
interface Event {
  index: number;
  token: Token;
}

const withGate: readonly Token[] = ['drainReads', 'apply', 'gate', 'restoreReads'];
const withoutGate: readonly Token[] = ['drainReads', 'apply', 'restoreReads'];

function same(a: readonly Token[], b: readonly Token[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i]);
}

function listed(events: readonly Event[]): string {
  return events.map((e) => `${e.token} (${stepRef(e.index)})`).join(', ');
}

export function checkWalk(
  spec: ZoneSpecDocument,
  steps: readonly unknown[],
  options: WalkCheckOptions = {},
): string[] {
  const known = Object.keys(spec.zones);
  const expected = options.only ?? known;
  const problems: string[] = [];
  const events = new Map<string, Event[]>();
  const add = (zone: string, event: Event) => events.set(zone, [...(events.get(zone) ?? []), event]);

  steps.forEach((step, index) => {
    const c = classifyStep(step);
    if (c.kind === 'invalid') problems.push(`${stepRef(index)}: ${c.problem}`);
    else if (c.kind === 'action') {
      for (const zone of c.zones) {
        if (known.includes(zone)) add(zone, { index, token: c.action });
        else
          problems.push(
            `${stepRef(index)}: zone ${JSON.stringify(zone)} is not in the spec (known: ${known.join(', ')})`,
          );
      }
    } else if (c.kind === 'gate' && c.zones.some((zone) => known.includes(zone))) {
      const t = options.template;
      if (t !== undefined && t !== '' && !c.templates.includes(t))
        problems.push(
          `${stepRef(index)}: the gate of ${c.zone} runs ${c.templates.join(', ') || 'no template'}, not ${t}`,
        );
      for (const zone of c.zones.filter((z) => known.includes(z))) add(zone, { index, token: 'gate' });
    }
  });

  if (![...events.values()].some((e) => e.some((x) => x.token !== 'gate'))) {
    problems.push(
      'spec.strategy.canary.steps has no vmzones/step steps: `vmzones render --write FILE` writes them',
    );
    return problems;
  }
  for (const zone of expected) {
    if (!events.has(zone))
      problems.push(
        `zone ${zone} is never walked (no vmzones/step steps for it): it would never get the change; ` +
          '`vmzones render --write FILE` writes the steps for every zone',
      );
  }
  for (const zone of events.keys()) {
    if (!expected.includes(zone)) problems.push(`zone ${zone} is walked, but --only leaves it out`);
  }
  for (const [zone, zoneEvents] of events) {
    const tokens = zoneEvents.map((e) => e.token);
    if (same(tokens, withGate) || (options.template === '' && same(tokens, withoutGate))) continue;
    if (same(tokens, withoutGate)) {
      problems.push(
        `zone ${zone}: no gate between apply (${stepRef(zoneEvents[1]?.index ?? 0)}) and restoreReads ` +
          `(${stepRef(zoneEvents[2]?.index ?? 0)}): add the analysis step with arg zone=${zone} ` +
          "(`vmzones render` writes it), or lint with --template '' for a walk without gates",
      );
    } else {
      problems.push(
        `zone ${zone}: its steps run ${listed(zoneEvents)}; expected ${(options.template === '' ? withoutGate : withGate).join(', ')}, once each, in that order`,
      );
    }
  }
  const spans = [...events]
    .map(([zone, e]) => ({ zone, first: e[0], last: e[e.length - 1] }))
    .sort((a, b) => (a.first?.index ?? 0) - (b.first?.index ?? 0));
  for (let i = 1; i < spans.length; i++) {
    const before = spans[i - 1];
    const next = spans[i];
    if (before?.last === undefined || next?.first === undefined) continue;
    // Zones of one wave share their steps; only zones of different waves must not overlap.
    const sameWave = next.first.index === before.first?.index && next.last?.index === before.last.index;
    if (!sameWave && next.first.index < before.last.index)
      problems.push(
        `zones ${before.zone} and ${next.zone} overlap: ${next.zone}'s ${next.first.token} (${stepRef(next.first.index)}) ` +
          `runs before ${before.zone}'s ${before.last.token} (${stepRef(before.last.index)}); one zone's walk must end before the next one's starts`,
      );
  }
  return problems;
}
