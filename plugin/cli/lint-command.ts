// `vmzones lint`: every spec document and every Rollout carrying one in the files; for a Rollout also where the
// annotation sits and whether its steps walk the zones (plugin/cli/walk-check.ts). Exit 1 when anything is wrong.

import { stringify } from 'yaml';
import { ZoneOrderError, zoneWalk } from '../zones/render.ts';
import { specAnnotation } from '../zones/spec.ts';
import { type Flags, UsageError } from './args.ts';
import type { CommandContext } from './command-context.ts';
import { insecureSettings } from './insecure-settings.ts';
import { InputError, readInput } from './io.ts';
import {
  annotationProblems,
  fileLabel,
  noSpec,
  parseSpecText,
  problemList,
  readManifests,
  vmzonesRollouts,
} from './manifests.ts';
import { checkWalk, type WalkCheckOptions } from './walk-check.ts';

export interface LintReport {
  file: string;
  /** `spec document` or `Rollout NAME`; the file itself when it could not be read. */
  target: string;
  zones: string[];
  problems: string[];
  /** Allowed but risky settings (TLS verification off); they do not fail the lint. */
  warnings?: string[];
}

interface LintOptions extends WalkCheckOptions {
  rollout?: string;
}

function lintText(text: string, file: string, options: LintOptions): LintReport[] {
  const m = readManifests(text, file);
  const reports: LintReport[] = [];
  if (options.rollout === undefined) {
    for (const specText of m.specTexts) {
      const parsed = parseSpecText(specText);
      reports.push({
        file,
        target: 'spec document',
        zones: 'spec' in parsed ? Object.keys(parsed.spec.zones) : [],
        problems: 'spec' in parsed ? onlyProblems(parsed.spec, options) : [...parsed.problems],
      });
    }
  }
  for (const rollout of vmzonesRollouts(m, options.rollout)) {
    const problems = annotationProblems(rollout);
    const specText = rollout.templateSpec ?? rollout.metadataSpec;
    let zones: string[] = [];
    if (specText !== undefined) {
      const parsed = parseSpecText(specText);
      if ('spec' in parsed) {
        zones = Object.keys(parsed.spec.zones);
        problems.push(
          ...onlyProblems(parsed.spec, options),
          ...checkWalk(parsed.spec, rollout.steps ?? [], options),
        );
      } else {
        problems.push(...parsed.problems.map((p) => `${specAnnotation}: ${p}`));
      }
    }
    reports.push({ file, target: `Rollout ${rollout.name}`, zones, problems });
  }
  if (reports.length === 0)
    reports.push({ file, target: file, zones: [], problems: [noSpec(file, options.rollout)] });
  const warnings = insecureSettings(m.documents);
  if (warnings.length > 0) (reports[0] as LintReport).warnings = warnings;
  return reports;
}

/** --only names zones of the spec (a usage error otherwise, as for render). */
function onlyProblems(spec: Parameters<typeof zoneWalk>[0], options: LintOptions): string[] {
  if (options.only === undefined) return [];
  try {
    zoneWalk(spec, { only: options.only });
  } catch (err) {
    if (err instanceof ZoneOrderError) throw new UsageError(`--only: ${err.message}`);
    throw err;
  }
  return [];
}

export function run(flags: Flags, { io }: CommandContext): number {
  const files = flags.strings('spec');
  if (files.length === 0) throw new UsageError('--spec FILE is required');
  if (files.filter((f) => f === '-').length > 1) throw new UsageError('stdin (-) can be read only once');
  const options: LintOptions = {};
  const only = flags.list('only');
  if (only !== undefined) options.only = only;
  const template = flags.string('template');
  if (template !== undefined) options.template = template;
  const rollout = flags.string('rollout');
  if (rollout !== undefined) options.rollout = rollout;

  const reports: LintReport[] = [];
  for (const path of files) {
    const file = fileLabel(path);
    try {
      reports.push(...lintText(readInput(io, path), file, options));
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      reports.push({ file, target: file, zones: [], problems: [err.message] });
    }
  }

  if (flags.has('output')) {
    const data = { ok: reports.every((r) => r.problems.length === 0), reports };
    io.out(flags.output() === 'json' ? `${JSON.stringify(data, null, 2)}\n` : stringify(data));
  } else {
    for (const r of reports) {
      const where =
        r.target === r.file ? r.file : r.target === 'spec document' ? r.file : `${r.file}: ${r.target}`;
      for (const warning of r.warnings ?? []) io.err(`${r.file}: warning: ${warning}\n`);
      if (r.problems.length > 0) io.err(problemList(where, r.problems));
      else
        io.out(
          `${where}: ok (${r.zones.length} zones: ${r.zones.join(', ')}${r.target.startsWith('Rollout') ? `; the steps walk ${only === undefined ? 'every zone' : `${only.join(', ')} (--only)`}` : ''})\n`,
        );
    }
  }
  return reports.some((r) => r.problems.length > 0) ? 1 : 0;
}
