// `vmzones lint`: every spec document and every Rollout carrying one in the files; for a Rollout also where the
// annotation sits and whether its steps walk the zones (plugin/cli/walk-check.ts). Exit 1 when anything is wrong.
// Offline unless --cluster: then each Rollout's zones in the cluster are judged for drift from the stable spec
// (plugin/cli/lint-live.ts, loaded only then).

import { stringify } from 'yaml';
import { ZoneOrderError, zoneWalk } from '../zones/render.ts';
import { specAnnotation } from '../zones/spec.ts';
import { type Flags, UsageError } from './args.ts';
import type { CommandContext } from './command-context.ts';
import { insecureSettings } from './insecure-settings.ts';
import { InputError, readInput } from './io.ts';
import type { LintDrift, LiveTarget } from './lint-live.ts';
import {
  annotationProblems,
  fileLabel,
  noSpec,
  parseSpecText,
  problemList,
  readManifests,
  vmzonesRollouts,
} from './manifests.ts';
import { runtimeProblem } from './runtime.ts';
import { checkWalk, type WalkCheckOptions } from './walk-check.ts';

export interface LintReport {
  file: string;
  /** `spec document` or `Rollout NAME`; the file itself when it could not be read. */
  target: string;
  zones: string[];
  problems: string[];
  /** Allowed but risky settings (TLS verification off); they do not fail the lint. */
  warnings?: string[];
  /** With --cluster, for a Rollout: its zones drifted from the stable spec in the cluster (they do not fail the
   *  lint: the files are not wrong, the zones are behind them). */
  drifted?: LintDrift[];
}

/** A report, and the Rollout of the file it is about (for --cluster). */
interface Linted {
  report: LintReport;
  rollout?: { name: string; namespace: string | undefined };
}

interface LintOptions extends WalkCheckOptions {
  rollout?: string;
}

function lintText(text: string, file: string, options: LintOptions): Linted[] {
  const m = readManifests(text, file);
  const reports: Linted[] = [];
  if (options.rollout === undefined) {
    for (const specText of m.specTexts) {
      const parsed = parseSpecText(specText);
      reports.push({
        report: {
          file,
          target: 'spec document',
          zones: 'spec' in parsed ? Object.keys(parsed.spec.zones) : [],
          problems: 'spec' in parsed ? onlyProblems(parsed.spec, options) : [...parsed.problems],
        },
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
    reports.push({
      report: { file, target: `Rollout ${rollout.name}`, zones, problems },
      rollout: { name: rollout.name, namespace: rollout.namespace },
    });
  }
  if (reports.length === 0)
    reports.push({ report: { file, target: file, zones: [], problems: [noSpec(file, options.rollout)] } });
  const warnings = insecureSettings(m.documents);
  if (warnings.length > 0) (reports[0] as Linted).report.warnings = warnings;
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

/** The kubectl flags lint takes, only with --cluster: without it lint reads files alone. */
const liveFlags = ['kubeconfig', 'context', 'namespace', 'clusters-namespace'] as const;

/** Runs lint; with --cluster it reads `cluster` (tests: an in-memory one), by default the user's kubeconfig's. */
export async function run(
  flags: Flags,
  { io, program }: CommandContext,
  cluster?: LiveTarget,
): Promise<number> {
  const files = flags.strings('spec');
  if (files.length === 0) throw new UsageError('--spec FILE is required');
  if (files.filter((f) => f === '-').length > 1) throw new UsageError('stdin (-) can be read only once');
  const live = flags.bool('cluster');
  const stray = liveFlags.find((name) => flags.has(name));
  if (!live && stray !== undefined)
    throw new UsageError(`--${stray} is for --cluster: without it lint reads the files only`);
  const options: LintOptions = {};
  const only = flags.list('only');
  if (only !== undefined) options.only = only;
  const template = flags.string('template');
  if (template !== undefined) options.template = template;
  const rollout = flags.string('rollout');
  if (rollout !== undefined) options.rollout = rollout;

  const linted: Linted[] = [];
  for (const path of files) {
    const file = fileLabel(path);
    try {
      linted.push(...lintText(readInput(io, path), file, options));
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      linted.push({ report: { file, target: file, zones: [], problems: [err.message] } });
    }
  }
  if (live) {
    // The Kubernetes client needs the plugin's Node (plugin/cli/runtime.ts); lint without --cluster does not.
    const problem = runtimeProblem(`${program} lint --cluster`, 'cli');
    if (problem !== undefined) {
      io.err(`${problem}\n`);
      return 1;
    }
    const { connect, liveDrift } = await import('./lint-live.ts');
    const target = cluster ?? connect(flags);
    for (const { report, rollout } of linted) {
      if (rollout === undefined) continue;
      const found = await liveDrift(target, rollout);
      report.drifted = found.drifted;
      report.problems.push(...found.problems);
      if (found.warnings.length > 0) report.warnings = [...(report.warnings ?? []), ...found.warnings];
    }
  }
  const reports = linted.map((l) => l.report);

  if (flags.has('output')) {
    const data = { ok: reports.every((r) => r.problems.length === 0), reports };
    io.out(flags.output() === 'json' ? `${JSON.stringify(data, null, 2)}\n` : stringify(data));
  } else {
    for (const r of reports) {
      const where =
        r.target === r.file ? r.file : r.target === 'spec document' ? r.file : `${r.file}: ${r.target}`;
      for (const warning of r.warnings ?? []) io.err(`${r.file}: warning: ${warning}\n`);
      for (const d of r.drifted ?? [])
        io.err(
          `${where}: warning: zone ${d.zone} (${d.cluster === undefined ? '' : `${d.cluster}:`}${d.kind} ${d.namespace}/${d.name}): ${d.message}\n`,
        );
      const inCluster =
        r.drifted === undefined
          ? ''
          : `; in the cluster: ${r.drifted.length === 0 ? 'no zone' : r.drifted.map((d) => d.zone).join(', ')} drifted from the stable spec`;
      if (r.problems.length > 0) io.err(problemList(where, r.problems));
      else
        io.out(
          `${where}: ok (${r.zones.length} zones: ${r.zones.join(', ')}${r.target.startsWith('Rollout') ? `; the steps walk ${only === undefined ? 'every zone' : `${only.join(', ')} (--only)`}` : ''}${inCluster})\n`,
        );
    }
  }
  return reports.some((r) => r.problems.length > 0) ? 1 : 0;
}
