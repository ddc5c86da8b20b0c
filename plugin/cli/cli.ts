// `vmzones <command>`: the tools users run by hand or in CI, next to the plugin role the controller starts.
//   vmzones lint   --spec FILE                 validate a spec document (or a Rollout manifest carrying it)
//   vmzones render --spec FILE [--order a,b] [--pause 1m|manual|none] [--template NAME]
//                                              print the canary steps that walk the zones

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { renderSteps } from '../zones/render.ts';
import { parseSpecDocument, SpecError, specAnnotation, type ZoneSpecDocument } from '../zones/spec.ts';

export const usage = `usage:
  vmzones lint   --spec FILE
  vmzones render --spec FILE [--order zone-a,zone-b] [--pause 1m|manual|none] [--template vmzones-zone-healthy]
FILE is a spec document, or a Rollout manifest whose pod template carries the ${specAnnotation} annotation; - reads stdin.`;

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  readFile(path: string): string;
}

export const processIo: CliIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  readFile: (path) => readFileSync(path === '-' ? 0 : path, 'utf8'),
};

/** Finds the spec document: the file itself, or the annotation of the first Rollout in a manifest. */
function loadSpec(text: string): ZoneSpecDocument {
  for (const doc of parseAllDocuments(text)) {
    if (!('toJS' in doc)) continue;
    const value: unknown = doc.toJS();
    if (typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'Rollout') {
      const annotations = (
        value as { spec?: { template?: { metadata?: { annotations?: Record<string, string> } } } }
      ).spec?.template?.metadata?.annotations;
      const embedded = annotations?.[specAnnotation];
      if (embedded === undefined)
        throw new SpecError([`the Rollout has no ${specAnnotation} annotation on its pod template`]);
      return parseSpecDocument(embedded);
    }
  }
  return parseSpecDocument(text);
}

/** Runs a command; returns the process exit code. */
export function runCli(argv: readonly string[], io: CliIo = processIo): number {
  const [command, ...rest] = argv;
  let values: { spec?: string; order?: string; pause?: string; template?: string };
  try {
    ({ values } = parseArgs({
      args: [...rest],
      options: {
        spec: { type: 'string' },
        order: { type: 'string' },
        pause: { type: 'string' },
        template: { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    io.err(`vmzones: ${(err as Error).message}\n${usage}\n`);
    return 2;
  }
  if ((command !== 'lint' && command !== 'render') || values.spec === undefined) {
    io.err(
      `${command === undefined ? '' : `vmzones: unknown command or missing --spec: ${command}\n`}${usage}\n`,
    );
    return 2;
  }
  try {
    const spec = loadSpec(io.readFile(values.spec));
    if (command === 'lint') {
      io.out(
        `${values.spec}: ok (${Object.keys(spec.zones).length} zones: ${Object.keys(spec.zones).join(', ')})\n`,
      );
      return 0;
    }
    const steps = renderSteps(spec, {
      order: values.order?.split(',').map((z) => z.trim()),
      pauseBetweenZones: values.pause,
      healthTemplate: values.template,
    });
    io.out(stringify({ steps }));
    return 0;
  } catch (err) {
    const problems = err instanceof SpecError ? err.problems : [(err as Error).message];
    io.err(`${values.spec}: ${problems.length} problem(s)\n${problems.map((p) => `  - ${p}\n`).join('')}`);
    return 1;
  }
}
