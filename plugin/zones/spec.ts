// The vmzones spec document: the YAML in the Rollout pod template's `vmzones.io/spec` annotation. It says which
// zones exist (zone → VMCluster), where reads are balanced, which vmagents write to the zones, and what to change
// (a global overrideSpec, and per-zone ones merged over it). It is validated as a whole before anything is
// touched; every problem names its field path.

import { parseDocument } from 'yaml';
import { z } from 'zod';
import { CodedError } from '../goplugin/failure-codes.ts';
import { GoDurationError, parseGoDurationMs } from '../kube/go-duration.ts';
import { dns1123Label, hostNameSchema, namespaceNameSchema, objectNameSchema } from '../kube/names.ts';
import type { DisruptionBudget } from '../vm/read-safety.ts';
import { type WriterKind, type WriterKindName, writerKinds } from '../vm/writer-kinds.ts';
import { type ZoneKind, type ZoneKindField, zoneKindFields, zoneKinds } from '../vm/zone-kinds.ts';
import { composeMergePatches, isJsonObject, type JsonObject } from './state/merge-patch.ts';

export const specAnnotation = 'vmzones.io/spec';
export const specVersions = ['v1'] as const;

const objectName = objectNameSchema;

const duration = z.string().superRefine((value, ctx) => {
  try {
    if (parseGoDurationMs(value) < 0) ctx.addIssue({ code: 'custom', message: 'must not be negative' });
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof GoDurationError ? err.message : String(err) });
  }
});

const jsonObject = z.custom<JsonObject>(
  (v) => isJsonObject(v),
  'must be a mapping (an object of VMCluster spec fields)',
);

/** A cluster registered by the admin (plugin/kube/cluster-registry.ts); absent = the controller's own cluster. */
export const clusterNameSchema = z
  .string()
  .min(1)
  .max(253)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/,
    'must be the name of a registered cluster (docs/multicluster.md)',
  );

const secretKeyRef = z.strictObject({ name: objectName, key: z.string().min(1) });

const vmauthPods = z.strictObject({
  /** Label selector of the vmauth pods in the spec document's namespace, e.g. `app.kubernetes.io/name=vmauth`. */
  labelSelector: z.string().trim().min(1, 'must not be empty (it would match every pod)'),
  /** vmauth's HTTP port: a number or a container port name. */
  port: z.union([z.number().int().min(1).max(65535), z.string().min(1)]).default('http'),
  scheme: z.enum(['http', 'https']).optional(),
});

/** The grace period for queries in flight when a spec document names none (and the one the reconciler uses for a
 *  zone no spec document names: a record never sets it). */
export const defaultDrainGracePeriod = '30s';

/** At most this many read balancers per spec document, and per record the reconciler acts on. */
export const maxReadBalancers = 16;

const vmauthSource = z
  .strictObject({
    /** The cluster the vmauth and its VMUser / Secret / ConfigMap run in; absent = the controller's own. */
    cluster: clusterNameSchema.optional(),
    /** An operator-managed VMUser whose targetRefs route reads to the zones' vmselects. */
    vmuser: objectName.optional(),
    /** A helm-managed vmauth whose raw config file lives in a Secret or a ConfigMap. */
    secret: secretKeyRef.optional(),
    configMap: secretKeyRef.optional(),
    /** The VMAuths that serve the VMUser; default: those in its namespace that select it. */
    vmauths: z.array(objectName).min(1).optional(),
    /** Where the vmauth replicas run (required for a helm-managed vmauth; derived from the VMAuths otherwise). */
    pods: z.array(vmauthPods).min(1).optional(),
    /** `bestEffort` lets vmauth versions without reload metrics (< v1.94) pass on the grace period alone. */
    reloadEvidence: z.enum(['required', 'bestEffort']).default('required'),
    /** Wait after vmauth serves the config without the zone, for queries already in flight: the upper bound. */
    drainGracePeriod: duration.default(defaultDrainGracePeriod),
    /** `inFlight`: the drain ends as soon as the zone's query pods show no query executing (docs/step-plugin.md);
     *  `grace`: it always waits the whole drainGracePeriod (e.g. where clients query the zone directly). */
    drainQueryCheck: z.enum(['inFlight', 'grace']).default('inFlight'),
  })
  .superRefine((v, ctx) => {
    const set = (['vmuser', 'secret', 'configMap'] as const).filter((k) => v[k] !== undefined);
    if (set.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `exactly one of vmuser, secret, configMap must be set (found ${set.length === 0 ? 'none' : set.join(', ')})`,
      });
    }
    if (v.vmuser === undefined && v.pods === undefined && set.length === 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['pods'],
        message:
          'a helm-managed vmauth (secret or configMap) needs pods: [{labelSelector, port}] for reload evidence',
      });
    }
    if (v.vmuser === undefined && v.vmauths !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['vmauths'], message: 'vmauths only applies with vmuser' });
    }
  });

/** Exactly one of the one-name field and the list field of an agents entry. */
function oneNameOrList(one: string, list: string) {
  return (v: Record<string, unknown>, ctx: z.core.$RefinementCtx) => {
    if ((v[one] === undefined) === (v[list] === undefined)) {
      ctx.addIssue({
        code: 'custom',
        message: `exactly one of ${one} (one name) or ${list} (a list) must be set`,
      });
    }
  };
}

/** The VMAgents that write to metrics zones (VMCluster, VMSingle). */
const vmagentSource = z
  .strictObject({
    /** The cluster the agents run in; absent = the controller's own. */
    cluster: clusterNameSchema.optional(),
    vmagent: objectName.optional(),
    vmagents: z.array(objectName).min(1).optional(),
  })
  .superRefine(oneNameOrList('vmagent', 'vmagents'));

/** The VLAgents that write to VictoriaLogs zones (VLCluster): docs/zone-kinds.md. */
const vlagentSource = z
  .strictObject({
    cluster: clusterNameSchema.optional(),
    vlagent: objectName.optional(),
    vlagents: z.array(objectName).min(1).optional(),
  })
  .superRefine(oneNameOrList('vlagent', 'vlagents'));

const zone = z
  .strictObject({
    /** The registered cluster the zone's object lives in; absent = the controller's own. */
    cluster: clusterNameSchema.optional(),
    /** The zone's object, exactly one of these (docs/zone-kinds.md). */
    vmcluster: objectName.optional(),
    vmsingle: objectName.optional(),
    vlcluster: objectName.optional(),
    overrideSpec: jsonObject.optional(),
    /** Host names by which read URLs reach this zone's read Service; default e.g. vmselect-<vmcluster>.<namespace>.svc[.cluster.local]. */
    vmselectHosts: z.array(hostNameSchema).min(1).optional(),
    /** Host names by which the vmagents' remote-write URLs reach this zone (e.g. the address another cluster
     *  publishes its vminsert on); default: the host is the zone's write Service, vminsert-<vmcluster>[.<namespace>...]. */
    vminsertHosts: z.array(hostNameSchema).min(1).optional(),
  })
  .superRefine((v, ctx) => {
    const set = zoneKindFields.filter((k) => v[k] !== undefined);
    if (set.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `exactly one of ${zoneKindFields.join(', ')} must be set (found ${set.length === 0 ? 'none' : set.join(', ')})`,
      });
    }
  });

export type SpecZoneEntry = z.infer<typeof zone>;

/** The zone's kind and object name; the schema guarantees exactly one kind field is set. */
export function zoneWorkload(entry: SpecZoneEntry): { kind: ZoneKind; name: string } {
  for (const field of zoneKindFields) {
    const name = entry[field];
    if (name !== undefined) return { kind: zoneKinds[field], name };
  }
  throw new SpecError([`exactly one of ${zoneKindFields.join(', ')} must be set`]);
}

const zoneName = z
  .string()
  .max(63)
  .regex(dns1123Label, 'zone names must be DNS labels (lowercase letters, digits, "-")');

/**
 * Why a list of zones cannot be a walk of the spec's zones, or undefined: a zone unknown or named twice, none at
 * all, or (unless `subset`) a zone left out. One check for `--order`, `--only`, `waves` and `order`.
 */
export function zoneListProblem(
  known: readonly string[],
  list: readonly string[],
  { what, subset = false }: { what: string; subset?: boolean },
): string | undefined {
  const unknown = list.filter((z) => !known.includes(z));
  if (unknown.length > 0) return `unknown zone(s) ${unknown.join(', ')} (known: ${known.join(', ')})`;
  const duplicates = list.filter((z, i) => list.indexOf(z) !== i);
  if (duplicates.length > 0) return `zone(s) listed twice: ${duplicates.join(', ')}`;
  if (list.length === 0) return 'no zone to walk';
  const leftOut = known.filter((z) => !list.includes(z));
  if (!subset && leftOut.length > 0)
    return `${what} leaves out ${leftOut.join(', ')}: list every zone, or walk a subset explicitly`;
  return undefined;
}

/**
 * Why a wave of `width` of the spec's `zoneCount` zones could never be out of reads under `budget`, or undefined:
 * it takes out more zones than maxZonesOut allows, or it leaves fewer serving than minZonesServing — a balancer
 * routes only the spec's zones (plugin/vm/read-routing.ts), so while the wave is out at most zoneCount − width
 * serve, and the drain of its last zone would wait for a budget no walk can free. One check for `vmzones lint`,
 * `render` and the step (the spec's widest wave, and the zones of a step). Only a minZonesServing the author wrote
 * is checked: the default (1) is the rule a walk without a budget has always had, enforced at the drain itself
 * (a spec read only by the gates, or a one-zone spec, stays valid).
 */
export function waveBudgetProblem(
  budget: { maxZonesOut?: number | undefined; minZonesServing?: number | undefined },
  zoneCount: number,
  width: number,
): { field: 'maxZonesOut' | 'minZonesServing'; message: string } | undefined {
  const { maxZonesOut, minZonesServing } = budget;
  if (maxZonesOut !== undefined && maxZonesOut < width) {
    return {
      field: 'maxZonesOut',
      message: `is ${maxZonesOut}, but a wave takes ${width} zones out of reads at once: raise it or make the waves smaller`,
    };
  }
  const servingAtMost = zoneCount - width;
  if (minZonesServing !== undefined && minZonesServing > servingAtMost) {
    const out = width === 1 ? 'one zone is' : `a wave of ${width} zones is`;
    return {
      field: 'minZonesServing',
      message: `is ${minZonesServing}, but the spec has ${zoneCount} zone${zoneCount === 1 ? '' : 's'}: while ${out} out of reads at most ${servingAtMost} serve, so ${width === 1 ? 'no zone could ever drain' : 'that wave could never drain'}; keep it at most ${servingAtMost}${width === 1 ? ' (or add zones)' : ', or make the waves smaller'}`,
    };
  }
  return undefined;
}

/** The zone disruption budget, checked before every drain against the real routing of every balancer. */
const disruptionBudget = z.strictObject({
  /** At most this many zones out of reads at once through a balancer, across Rollouts; default: the largest wave. */
  maxZonesOut: z.number().int().min(1).optional(),
  /** At least this many zones serving reads through each balancer at all times; default 1 (never the last one). */
  minZonesServing: z.number().int().min(1).optional(),
});

const specSchema = z
  .strictObject({
    version: z.enum(specVersions).default('v1'),
    /** Namespace of every object named here; defaults to the Rollout's. */
    namespace: namespaceNameSchema.optional(),
    overrideSpec: jsonObject.default({}),
    /** How long a zone's VMCluster may take to become operational after a change. */
    readyTimeout: duration.default('15m'),
    /** The read balancer, or several (e.g. a vmauth in each cluster): a zone is drained from each that routes to it. */
    vmauth: z.union([
      vmauthSource,
      z
        .array(vmauthSource)
        .min(1)
        .max(maxReadBalancers, `at most ${maxReadBalancers} read balancers (maxReadBalancers)`),
    ]),
    /** The writers of the zones: `vmagent` for VMCluster and VMSingle zones, `vlagent` for VLCluster zones. */
    vmagent: vmagentSource.optional(),
    vlagent: vlagentSource.optional(),
    zones: z
      .record(zoneName, zone)
      .refine((zones) => Object.keys(zones).length > 0, 'at least one zone is required'),
    /** The walk in waves: each wave's zones are drained, changed, gated and restored together (docs/step-plugin.md). */
    waves: z.array(z.array(zoneName).min(1, 'a wave needs at least one zone')).min(1).optional(),
    /** Waves of this many zones, in `order` (default: the order of zones). */
    maxParallelZones: z.number().int().min(1).optional(),
    /** Every zone, in walk order (with maxParallelZones). */
    order: z.array(zoneName).optional(),
    disruptionBudget: disruptionBudget.default({}),
  })
  .superRefine((v, ctx) => {
    const known = Object.keys(v.zones);
    if (v.waves !== undefined && (v.maxParallelZones !== undefined || v.order !== undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['waves'],
        message: 'give either waves (the zones of each wave) or maxParallelZones with an order, not both',
      });
    }
    const listed =
      v.waves === undefined
        ? v.order === undefined
          ? undefined
          : { path: 'order', list: v.order, what: 'the order' }
        : { path: 'waves', list: v.waves.flat(), what: 'the walk in waves' };
    const problem =
      listed === undefined ? undefined : zoneListProblem(known, listed.list, { what: listed.what });
    if (listed !== undefined && problem !== undefined)
      ctx.addIssue({ code: 'custom', path: [listed.path], message: problem });
    const widest = Math.max(
      1,
      ...(v.waves ?? []).map((w) => w.length),
      Math.min(v.maxParallelZones ?? 1, known.length),
    );
    const budget = waveBudgetProblem(v.disruptionBudget, known.length, widest);
    if (budget !== undefined)
      ctx.addIssue({ code: 'custom', path: ['disruptionBudget', budget.field], message: budget.message });
    if (Array.isArray(v.vmauth)) {
      const seen = new Map<string, number>();
      v.vmauth.forEach((source, index) => {
        const key = JSON.stringify([source.cluster ?? '', balancerKey(source)]);
        const first = seen.get(key);
        if (first !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['vmauth', index],
            message: `names the same balancer as vmauth[${first}]`,
          });
        }
        seen.set(key, first ?? index);
      });
    }
    // Each zone kind's writer must be named, and a writer no zone needs is a mistake worth naming.
    const writerOf = (entry: SpecZoneEntry) => {
      const fields = zoneKindFields.filter((k) => entry[k] !== undefined);
      return fields.length === 1 ? writerField(zoneKinds[fields[0] as ZoneKindField]) : undefined;
    };
    const writers = Object.values(v.zones).map(writerOf);
    // A zone of no valid kind has its own problem; which writers it needs is unknown, so none is called unused.
    const allKnown = writers.every((field) => field !== undefined);
    for (const field of writerFields) {
      const { writer: kind, zoneKinds: written } = writerEntries[field];
      if (writers.includes(field) && v[field] === undefined) {
        const zones = Object.entries(v.zones)
          .filter(([, entry]) => writerOf(entry) === field)
          .map(([name]) => name);
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `required: the ${kind}s that write to ${zones.join(', ')} (${written} zones are written by ${kind}s)`,
        });
      } else if (allKnown && !writers.includes(field) && v[field] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `no zone is written by ${kind}s: ${field} names the writers of ${written} zones`,
        });
      }
    }
  });

export type VmauthSource = z.infer<typeof vmauthSource>;

/** The object that holds a balancer's routing. */
function balancerKey(source: VmauthSource): string {
  if (source.vmuser !== undefined) return `VMUser/${source.vmuser}`;
  if (source.secret !== undefined) return `Secret/${source.secret.name}/${source.secret.key}`;
  return `ConfigMap/${source.configMap?.name ?? ''}/${source.configMap?.key ?? ''}`;
}

/** The document's read balancers, as a list (one or several). */
export function vmauthSources(spec: Pick<ZoneSpecDocument, 'vmauth'>): VmauthSource[] {
  return Array.isArray(spec.vmauth) ? spec.vmauth : [spec.vmauth];
}

/** The drain grace of the zone's reads: the longest of the balancers' (queries in flight in any of them). */
export function drainGracePeriodOf(spec: Pick<ZoneSpecDocument, 'vmauth'>): string {
  const periods = vmauthSources(spec).map((s) => s.drainGracePeriod);
  return periods.reduce((a, b) => (parseGoDurationMs(b) > parseGoDurationMs(a) ? b : a));
}

/** Whether the drain may end early on the zone's own reading: only when every balancer allows it. */
export function drainQueryCheckOf(spec: Pick<ZoneSpecDocument, 'vmauth'>): 'inFlight' | 'grace' {
  return vmauthSources(spec).every((s) => s.drainQueryCheck === 'inFlight') ? 'inFlight' : 'grace';
}

/** The document's writer fields: which agent kind each names, and the zone kinds it writes to (for messages). */
const writerEntries = {
  vmagent: { writer: 'VMAgent', zoneKinds: 'VMCluster and VMSingle' },
  vlagent: { writer: 'VLAgent', zoneKinds: 'VLCluster' },
} as const satisfies Record<string, { writer: WriterKindName; zoneKinds: string }>;
type WriterField = keyof typeof writerEntries;
const writerFields = Object.keys(writerEntries) as WriterField[];

function writerField(kind: ZoneKind): WriterField {
  return writerFields.find((field) => writerEntries[field].writer === kind.writer) ?? 'vmagent';
}

/** The agents that write to zones of `kind`, and the cluster they run in; the schema guarantees they are named. */
export function zoneWriters(
  spec: ZoneSpecDocument,
  kind: ZoneKind,
): { writer: WriterKind; names: string[]; cluster: string | undefined } {
  const writer = writerKinds[kind.writer];
  if (writerField(kind) === 'vlagent') {
    const source = spec.vlagent;
    return {
      writer,
      names: source?.vlagents ?? (source?.vlagent === undefined ? [] : [source.vlagent]),
      cluster: source?.cluster,
    };
  }
  const source = spec.vmagent;
  return {
    writer,
    names: source?.vmagents ?? (source?.vmagent === undefined ? [] : [source.vmagent]),
    cluster: source?.cluster,
  };
}

export type ZoneSpecDocument = z.infer<typeof specSchema>;

/** The spec's walk in waves: `waves`, or `order` (default: the zones' order) cut into waves of maxParallelZones;
 *  without either, one zone per wave, as a walk without waves has always been. */
export function specWaves(
  spec: Pick<ZoneSpecDocument, 'zones' | 'waves' | 'maxParallelZones' | 'order'>,
): string[][] {
  if (spec.waves !== undefined) return spec.waves.map((w) => [...w]);
  return chunkWaves(spec.order ?? Object.keys(spec.zones), spec.maxParallelZones ?? 1);
}

/** `order` cut into consecutive waves of `size` zones (the last one may be smaller). */
export function chunkWaves(order: readonly string[], size: number): string[][] {
  const waves: string[][] = [];
  for (let i = 0; i < order.length; i += size) waves.push(order.slice(i, i + size));
  return waves;
}

/** The spec's budget; maxZonesOut defaults to its widest wave (1 without waves). */
export function specDisruptionBudget(spec: ZoneSpecDocument): DisruptionBudget {
  return {
    maxZonesOut: spec.disruptionBudget.maxZonesOut ?? Math.max(...specWaves(spec).map((wave) => wave.length)),
    minZonesServing: spec.disruptionBudget.minZonesServing ?? 1,
  };
}

export class SpecError extends CodedError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super('SpecInvalid', `invalid ${specAnnotation}: ${problems.join('; ')}`);
    this.name = 'SpecError';
    this.problems = problems;
  }
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.length === 0
    ? '(document)'
    : path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.');
}

/** A record key's own problem is nested inside zod's generic "Invalid key in record". */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_key') return issue.issues.map((i) => i.message).join('; ');
  return issue.message;
}

/** The problems to report for one issue. A one-or-list field (vmauth) fails as a union: report the branch the
 *  value was meant for (the one that got past the type check), else the first ("expected object"). */
function reportedIssues(issue: z.core.$ZodIssue): { path: PropertyKey[]; message: string }[] {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) {
    return [{ path: issue.path, message: issueMessage(issue) }];
  }
  const typeMismatch = (branch: z.core.$ZodIssue[]) =>
    branch.length === 1 && branch[0]?.code === 'invalid_type' && branch[0].path.length === 0;
  const branch = issue.errors.find((b) => !typeMismatch(b)) ?? issue.errors[0] ?? [];
  return branch.flatMap((nested) =>
    reportedIssues(nested).map((r) => ({ path: [...issue.path, ...r.path], message: r.message })),
  );
}

/** Parses and validates the annotation text. Throws SpecError listing every problem with its field path. */
export function parseSpecDocument(text: string): ZoneSpecDocument {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new SpecError(
      doc.errors.map(
        (e) => `YAML ${e.code} at line ${e.linePos?.[0].line ?? '?'}: ${e.message.split('\n')[0]}`,
      ),
    );
  }
  let value: unknown;
  try {
    // Aliases are expanded with a bound: a few hundred bytes of nested aliases can otherwise expand to gigabytes.
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new SpecError([
      `YAML: ${err instanceof Error ? err.message : String(err)} (aliases are limited to 100 expansions)`,
    ]);
  }
  const result = specSchema.safeParse(value);
  if (!result.success) {
    throw new SpecError(
      result.error.issues.flatMap(reportedIssues).map((i) => `${formatPath(i.path)}: ${i.message}`),
    );
  }
  return result.data;
}

/** The spec document of a Rollout, from its pod template annotations. */
export function specFromAnnotations(
  annotations: Readonly<Record<string, string>> | undefined,
): ZoneSpecDocument {
  const text = annotations?.[specAnnotation];
  if (text === undefined || text.trim() === '') {
    throw new SpecError([`the Rollout's spec.template.metadata.annotations has no ${specAnnotation}`]);
  }
  return parseSpecDocument(text);
}

export interface ResolvedZone {
  name: string;
  /** The registered cluster of the zone's object; undefined = the controller's own. */
  cluster?: string;
  namespace: string;
  kind: ZoneKind;
  /** The zone's object (of `kind`); named vmcluster because VMCluster was the first kind. */
  vmcluster: string;
  /** The global overrideSpec, then the zone's, as one RFC 7396 patch for the zone's VMCluster spec (null deletes). */
  patch: JsonObject;
}

/** Looks a zone up and computes its effective patch; an unknown zone is an error that lists the known ones. */
export function resolveZone(
  spec: ZoneSpecDocument,
  zoneName: string,
  defaultNamespace: string,
): ResolvedZone {
  const zone = spec.zones[zoneName];
  if (zone === undefined) {
    throw new SpecError([
      `zone ${JSON.stringify(zoneName)} is not in zones (known: ${Object.keys(spec.zones).join(', ')})`,
    ]);
  }
  const workload = zoneWorkload(zone);
  return {
    name: zoneName,
    ...(zone.cluster === undefined ? {} : { cluster: zone.cluster }),
    namespace: spec.namespace ?? defaultNamespace,
    kind: workload.kind,
    vmcluster: workload.name,
    patch: composeMergePatches(spec.overrideSpec, zone.overrideSpec ?? {}),
  };
}
