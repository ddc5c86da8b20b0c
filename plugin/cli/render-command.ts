// `vmzones render`: the canary steps that walk the zones, printed (-o yaml|json) or written into the Rollout of
// a manifest (--write, plugin/cli/write-steps.ts). A walk that leaves zones out needs --only and says so.

import { stringify } from 'yaml';
import { GoDurationError, parseGoDurationMs } from '../kube/go-duration.ts';
import { renderSteps, walkInWaves, ZoneOrderError } from '../zones/render.ts';
import type { ZoneSpecDocument } from '../zones/spec.ts';
import { type Flags, UsageError } from './args.ts';
import type { CommandContext } from './command-context.ts';
import { type CliIo, InputError, readInput, stdinPath } from './io.ts';
import {
  fileLabel,
  type Manifests,
  noSpec,
  oneSpec,
  type RolloutInFile,
  readManifests,
  severalRollouts,
  vmzonesRollouts,
} from './manifests.ts';
import { pausesInWalk, writeSteps } from './write-steps.ts';

interface WriteTarget {
  path: string;
  text: string;
  manifests: Manifests;
  rollout: RolloutInFile;
}

/** The Rollout whose steps --write replaces: the file's one vmzones Rollout (any Rollout when --spec is given). */
function writeTarget(
  io: CliIo,
  path: string,
  rolloutName: string | undefined,
  specGiven: boolean,
): WriteTarget {
  const text = readInput(io, path);
  const file = fileLabel(path);
  const manifests = readManifests(text, file);
  let rollouts = vmzonesRollouts(manifests, rolloutName);
  if (rollouts.length === 0 && specGiven)
    rollouts = manifests.rollouts.filter((r) => rolloutName === undefined || r.name === rolloutName);
  const rollout = rollouts[0];
  if (rollouts.length > 1) throw new UsageError(severalRollouts(file, rollouts));
  if (rollout === undefined) {
    throw new InputError(
      specGiven
        ? `${file} holds no Rollout${rolloutName === undefined ? '' : ` named ${rolloutName}`}`
        : noSpec(file, rolloutName),
    );
  }
  return { path, text, manifests, rollout };
}

/** `pause` when it is manual, none or a Go duration; otherwise a UsageError saying `refusal` of the problem. */
function checkedPause(pause: string, refusal: (problem: string) => string): string {
  if (pause === 'manual' || pause === 'none') return pause;
  try {
    parseGoDurationMs(pause);
    return pause;
  } catch (err) {
    if (err instanceof GoDurationError) throw new UsageError(refusal(err.message));
    throw err;
  }
}

function pauseOption(flags: Flags): string | undefined {
  const pause = flags.string('pause');
  return pause === undefined
    ? undefined
    : checkedPause(pause, (problem) => `--pause: ${problem} (a Go duration, manual or none)`);
}

/**
 * Without --pause, --write keeps the walk's pause between zones. Pauses that differ, or one that is not a Go
 * duration, are not replaced by the default (which would drop them): the user says which with --pause.
 */
function keptPause(steps: readonly unknown[] | undefined): string | undefined {
  const pauses = pausesInWalk(steps);
  const [pause] = pauses;
  if (pauses.length > 1) {
    throw new UsageError(
      `--write: the walk has different pauses between zones (${pauses.join(', ')}); say which one every zone gets with --pause`,
    );
  }
  return pause === undefined
    ? undefined
    : checkedPause(
        pause,
        (problem) =>
          `--write: the walk's pause between zones ${JSON.stringify(pause)} is not a Go duration (${problem}); say which pause to keep with --pause`,
      );
}

export function run(flags: Flags, { io, program }: CommandContext): number {
  const specPath = flags.string('spec');
  const writePath = flags.string('write');
  const rolloutName = flags.string('rollout');
  if (specPath === undefined && writePath === undefined)
    throw new UsageError('--spec FILE or --write FILE is required');
  if (writePath !== undefined && flags.has('output'))
    throw new UsageError("-o applies to printed steps; --write keeps FILE's own format");
  if (specPath === stdinPath && writePath === stdinPath)
    throw new UsageError('stdin (-) can be read only once: give --spec or --write a file');
  const order = flags.list('order');
  const only = flags.list('only');
  if (order !== undefined && only !== undefined)
    throw new UsageError('--order (every zone) and --only (a subset) exclude each other');
  const target =
    writePath === undefined ? undefined : writeTarget(io, writePath, rolloutName, specPath !== undefined);
  // Without --pause, --write keeps the pause the Rollout's walk already has between zones.
  const pauseBetweenZones = pauseOption(flags) ?? keptPause(target?.rollout.steps);
  let spec: ZoneSpecDocument;
  if (specPath !== undefined) {
    const text = specPath === writePath && target !== undefined ? target.text : readInput(io, specPath);
    spec = oneSpec(readManifests(text, fileLabel(specPath)), fileLabel(specPath), rolloutName);
  } else if (target !== undefined) {
    spec = oneSpec(target.manifests, fileLabel(target.path), target.rollout.name);
  } else {
    throw new UsageError('--spec FILE or --write FILE is required');
  }

  let walk: ReturnType<typeof walkInWaves>;
  try {
    walk = walkInWaves(spec, { ...(order && { order }), ...(only && { only }) });
  } catch (err) {
    if (!(err instanceof ZoneOrderError)) throw err;
    const flag = only !== undefined ? '--only' : '--order';
    throw new UsageError(
      `${flag}: ${err.message}${only === undefined && err.message.includes('leaves out') ? ' with --only' : ''}`,
    );
  }
  const steps = renderSteps(spec, {
    ...(order && { order }),
    ...(only && { only }),
    ...(pauseBetweenZones !== undefined && { pauseBetweenZones }),
    ...(flags.has('template') && { healthTemplate: flags.string('template') }),
  });
  const note =
    walk.leftOut.length === 0
      ? undefined
      : `walks ${walk.zones.join(', ')} only (--only); left out: ${walk.leftOut.join(', ')}`;
  if (note !== undefined) io.err(`${program} render: ${note}\n`);

  if (target === undefined) {
    if (flags.output() === 'json') io.out(`${JSON.stringify({ steps }, null, 2)}\n`);
    else
      io.out(
        `${note === undefined ? '' : `# vmzones render ${note}\n`}${stringify({ steps }, { lineWidth: 0 })}`,
      );
    return 0;
  }
  const result = writeSteps(target.text, target.manifests, target.rollout, steps);
  const where = `${fileLabel(target.path)}: Rollout ${target.rollout.name}`;
  if (result === target.text) io.err(`${where}: steps already up to date\n`);
  else
    io.err(
      `${where}: wrote ${steps.length} steps walking ${walk.waves.map((w) => w.join('+')).join(', ')}\n`,
    );
  if (result !== target.text || target.path === stdinPath) io.writeFile(target.path, result);
  return 0;
}
