// What a FILE argument may hold wherever a spec is read: a spec document, a Rollout manifest, a multi-document
// file or `kustomize build` output (a `kind: List` counts too). Kubernetes objects other than Rollouts are
// skipped; a document without `kind` is a spec document.

import { type Document, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { parseSpecDocument, SpecError, specAnnotation, type ZoneSpecDocument } from '../zones/spec.ts';
import { isJsonObject } from '../zones/state/merge-patch.ts';
import { UsageError } from './args.ts';
import { InputError } from './io.ts';
import { classifyStep } from './walk-steps.ts';

const annotations = z.record(z.string(), z.unknown()).optional();
const rolloutSchema = z.looseObject({
  kind: z.literal('Rollout'),
  metadata: z.looseObject({ name: z.string().optional(), annotations }).optional(),
  spec: z
    .looseObject({
      template: z.looseObject({ metadata: z.looseObject({ annotations }).optional() }).optional(),
      strategy: z
        .looseObject({
          canary: z.looseObject({ steps: z.array(z.unknown()).optional() }).optional(),
          blueGreen: z.unknown().optional(),
        })
        .optional(),
    })
    .optional(),
});

export interface RolloutInFile {
  /** metadata.name, or `#N` (its position among the file's Rollouts) when unnamed. */
  name: string;
  /** The YAML document that holds it, and the path to it there ([] or ['items', i] in a List). */
  document: Document;
  path: (string | number)[];
  /** The annotation on the pod template, where the plugin reads it. */
  templateSpec: string | undefined;
  /** The annotation on the Rollout's own metadata, where the plugin does not look. */
  metadataSpec: string | undefined;
  steps: unknown[] | undefined;
  blueGreen: boolean;
}

export interface Manifests {
  documents: Document[];
  /** Documents that are not Kubernetes objects: spec documents (the text, for parseSpecDocument). */
  specTexts: string[];
  rollouts: RolloutInFile[];
}

function annotationText(map: Record<string, unknown> | undefined): string | undefined {
  const v = map?.[specAnnotation];
  return v === undefined ? undefined : typeof v === 'string' ? v : JSON.stringify(v);
}

export function readManifests(text: string, file: string): Manifests {
  const documents = parseAllDocuments(text, { uniqueKeys: true });
  if (!Array.isArray(documents)) return { documents: [], specTexts: [], rollouts: [] }; // empty stream
  const specTexts: string[] = [];
  const rollouts: RolloutInFile[] = [];
  const nonEmpty = documents.filter((d) => d.contents !== null);
  nonEmpty.forEach((document, d) => {
    const where = nonEmpty.length > 1 ? ` (document ${d + 1})` : '';
    if (document.errors.length > 0) {
      // A lone document may be a spec: parseSpecDocument reports its YAML errors with line numbers.
      if (nonEmpty.length === 1) {
        specTexts.push(text);
        return;
      }
      const e = document.errors[0];
      throw new InputError(`${file}${where}: YAML ${e?.code}: ${e?.message.split('\n')[0]}`);
    }
    const value: unknown = document.toJS({ maxAliasCount: 100 });
    if (!isJsonObject(value) || typeof value.kind !== 'string') {
      specTexts.push(nonEmpty.length === 1 ? text : document.toString());
      return;
    }
    const objects: [unknown, (string | number)[]][] =
      value.kind === 'List' && Array.isArray(value.items)
        ? value.items.map((item, i) => [item, ['items', i]])
        : [[value, []]];
    for (const [object, path] of objects) {
      if (!isJsonObject(object) || object.kind !== 'Rollout') continue;
      const parsed = rolloutSchema.safeParse(object);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new InputError(`${file}${where}: a Rollout's ${issue?.path.join('.')}: ${issue?.message}`);
      }
      const r = parsed.data;
      rollouts.push({
        name: r.metadata?.name ?? `#${rollouts.length + 1}`,
        document,
        path,
        templateSpec: annotationText(r.spec?.template?.metadata?.annotations),
        metadataSpec: annotationText(r.metadata?.annotations),
        steps: r.spec?.strategy?.canary?.steps,
        blueGreen: r.spec?.strategy?.blueGreen !== undefined,
      });
    }
  });
  return { documents, specTexts, rollouts };
}

/** Rollouts vmzones is concerned with: they carry the annotation (anywhere) or a vmzones/step step. */
export function vmzonesRollouts(m: Manifests, name?: string): RolloutInFile[] {
  return m.rollouts.filter(
    (r) =>
      (name === undefined || r.name === name) &&
      (r.templateSpec !== undefined ||
        r.metadataSpec !== undefined ||
        (r.steps ?? []).some((s) => classifyStep(s).kind === 'action')),
  );
}

/** The annotation's placement problems (the plugin reads only the pod template's). */
export function annotationProblems(r: RolloutInFile): string[] {
  const problems: string[] = [];
  if (r.metadataSpec !== undefined) {
    problems.push(
      r.templateSpec === undefined
        ? `metadata.annotations carries ${specAnnotation}, but the plugin reads it from spec.template.metadata.annotations: move it there`
        : `metadata.annotations carries a second ${specAnnotation} that the plugin ignores (it reads spec.template.metadata.annotations): remove it`,
    );
  } else if (r.templateSpec === undefined) {
    problems.push(
      `spec.template.metadata.annotations has no ${specAnnotation}, but its steps use vmzones/step`,
    );
  }
  return problems;
}

/** Serializes the documents back, byte for byte where nothing changed. */
export function stringifyManifests(m: Manifests): string {
  return m.documents.map((d) => d.toString({ lineWidth: 0 })).join('');
}

/** The problems of a spec text as lines, or the parsed spec. */
export function parseSpecText(text: string): { spec: ZoneSpecDocument } | { problems: readonly string[] } {
  try {
    return { spec: parseSpecDocument(text) };
  } catch (err) {
    if (err instanceof SpecError) return { problems: err.problems };
    throw err;
  }
}

export function problemList(where: string, problems: readonly string[]): string {
  return `${where}: ${problems.length} problem(s)\n${problems.map((p) => `  - ${p}\n`).join('')}`;
}

/** The one spec a command works on: a file's spec document, or the annotation of its one vmzones Rollout. */
export function oneSpec(m: Manifests, file: string, rolloutName: string | undefined): ZoneSpecDocument {
  const rollouts = vmzonesRollouts(m, rolloutName);
  if (rollouts.length > 1) throw new UsageError(severalRollouts(file, rollouts));
  const rollout = rollouts[0];
  let text: string | undefined;
  let where = file;
  if (rollout !== undefined) {
    if (rollout.templateSpec === undefined)
      throw new InputError(
        problemList(`${file}: Rollout ${rollout.name}`, annotationProblems(rollout)).trimEnd(),
      );
    text = rollout.templateSpec;
    where = `${file}: Rollout ${rollout.name}: spec.template.metadata.annotations[${specAnnotation}]`;
  } else {
    // No such Rollout: the file's spec document (--rollout then names the Rollout of another file, --write's).
    if (rolloutName !== undefined && m.rollouts.length > 0) throw new InputError(noSpec(file, rolloutName));
    if (m.specTexts.length > 1)
      throw new InputError(`${file} holds ${m.specTexts.length} spec documents: give one at a time`);
    text = m.specTexts[0];
  }
  if (text === undefined) throw new InputError(noSpec(file, undefined));
  const parsed = parseSpecText(text);
  if ('problems' in parsed) throw new InputError(problemList(where, parsed.problems).trimEnd());
  return parsed.spec;
}

export function noSpec(file: string, rolloutName: string | undefined): string {
  return rolloutName === undefined
    ? `${file} holds no vmzones spec: neither a spec document nor a Rollout with ${specAnnotation} on its pod template`
    : `${file} holds no Rollout named ${rolloutName} that carries ${specAnnotation} or vmzones/step steps`;
}

export function severalRollouts(file: string, rollouts: readonly RolloutInFile[]): string {
  return `${file} holds the Rollouts ${rollouts.map((r) => r.name).join(', ')}: pick one with --rollout NAME`;
}

/** `-` shows as stdin in messages. */
export function fileLabel(path: string): string {
  return path === '-' ? 'stdin' : path;
}
