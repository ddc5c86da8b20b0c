// A VMUser's read routes (spec.targetRefs) as zones: which zones it sends reads to, removing one zone's vmselect
// with a record of exactly what was removed, and putting exactly that back. Pure functions over the JSON shape.
//
// A zone's vmselect appears as `crd: {kind: VMCluster/vmselect, name, namespace}` (`VMSingle`, `VLCluster/vlselect`
// for the other zone kinds), as an entry of `crd.objects`, or as a `static.url` / `static.urls` entry whose host is
// the zone's read Service.

import { z } from 'zod';
import { redactText } from '../kube/redact.ts';
import { ReadRoutingError, urlBelongsTo, type ZoneReadBackend } from './read-backends.ts';
import { zoneKindOrDefault, zoneKinds } from './zone-kinds.ts';

export type TargetRef = Record<string, unknown>;

const neighbourKeys = { next: z.string().optional(), previous: z.string().optional() };

/** One removal, with what is needed to undo it. `fingerprint` identifies the targetRef by everything but its backends. */
export const vmuserRemovalSchema = z.discriminatedUnion('op', [
  z.object({
    op: z.literal('targetRef'),
    index: z.number().int(),
    targetRef: z.record(z.string(), z.unknown()),
  }),
  z.object({
    op: z.literal('object'),
    refIndex: z.number().int(),
    fingerprint: z.string(),
    index: z.number().int(),
    object: z.record(z.string(), z.unknown()),
    /** The entries next to it that stayed, so that it goes back to the same place if others moved meanwhile. */
    ...neighbourKeys,
  }),
  z.object({
    op: z.literal('name'),
    refIndex: z.number().int(),
    fingerprint: z.string(),
    name: z.string(),
    namespace: z.string(),
  }),
  z.object({
    op: z.literal('url'),
    refIndex: z.number().int(),
    fingerprint: z.string(),
    field: z.enum(['url', 'urls']),
    index: z.number().int(),
    url: z.string(),
    ...neighbourKeys,
  }),
]);

export type VMUserRemoval = z.infer<typeof vmuserRemovalSchema>;

/** Identity of a list entry for placing it back: an object's name/namespace, or the URL. */
function entryKey(entry: unknown): string {
  const obj = record(entry);
  return obj ? `${text(obj.namespace)}/${text(obj.name)}` : text(entry);
}

/** The entries around `index` that are not removed, as keys. */
function neighbours(
  list: unknown[],
  index: number,
  removed: ReadonlySet<number>,
): { next?: string; previous?: string } {
  const find = (step: number): string | undefined => {
    for (let i = index + step; i >= 0 && i < list.length; i += step) {
      if (!removed.has(i)) return entryKey(list[i]);
    }
    return undefined;
  };
  const next = find(1);
  const previous = find(-1);
  return { ...(next === undefined ? {} : { next }), ...(previous === undefined ? {} : { previous }) };
}

/** Where an entry goes back: before the entry that followed it, after the one that preceded it, else its index. */
function placeBack(list: unknown[], removal: { index: number; next?: string; previous?: string }): number {
  const at = (key: string | undefined) =>
    key === undefined ? -1 : list.findIndex((e) => entryKey(e) === key);
  const next = at(removal.next);
  if (next >= 0) return next;
  const previous = at(removal.previous);
  if (previous >= 0) return previous + 1;
  return Math.min(removal.index, list.length);
}

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** JSON with object keys sorted, so that equal values give equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = record(value);
  if (obj) {
    return `{${Object.keys(obj)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The targetRef without its backends: what stays the same when zones come and go. */
function targetRefFingerprint(ref: TargetRef): string {
  const copy = structuredClone(ref);
  const crd = record(copy.crd);
  if (crd) {
    delete crd.name;
    delete crd.namespace;
    delete crd.objects;
  }
  const stat = record(copy.static);
  if (stat) {
    delete stat.url;
    delete stat.urls;
  }
  return canonicalJson(copy);
}

interface Backend {
  kind: 'name' | 'object' | 'url' | 'urls';
  index: number;
  matches(zone: ZoneReadBackend): boolean;
}

function refBackends(ref: TargetRef, defaultNamespace: string): Backend[] {
  const backends: Backend[] = [];
  const crd = record(ref.crd);
  const refKind = text(crd?.kind);
  // A crd ref names a zone's object only with the targetRef kind of that zone kind (VMCluster/vmselect...).
  if (crd && Object.values(zoneKinds).some((k) => k.vmuserTargetKind === refKind)) {
    const is = (name: string, namespace: string) => (zone: ZoneReadBackend) =>
      refKind === zoneKindOrDefault(zone.kind).vmuserTargetKind &&
      name === zone.vmcluster &&
      (namespace || defaultNamespace) === zone.namespace;
    if (text(crd.name) !== '') {
      backends.push({ kind: 'name', index: 0, matches: is(text(crd.name), text(crd.namespace)) });
    }
    const objects = Array.isArray(crd.objects) ? crd.objects : [];
    objects.forEach((o, index) => {
      const obj = record(o) ?? {};
      backends.push({ kind: 'object', index, matches: is(text(obj.name), text(obj.namespace)) });
    });
  }
  const stat = record(ref.static);
  if (stat) {
    if (text(stat.url) !== '') {
      const url = text(stat.url);
      backends.push({ kind: 'url', index: 0, matches: (zone) => urlBelongsTo(url, zone) });
    }
    const urls = Array.isArray(stat.urls) ? stat.urls : [];
    urls.forEach((u, index) => {
      backends.push({ kind: 'urls', index, matches: (zone) => urlBelongsTo(text(u), zone) });
    });
  }
  return backends;
}

function asRefs(targetRefs: unknown): TargetRef[] {
  if (targetRefs === undefined) return [];
  if (!Array.isArray(targetRefs)) throw new ReadRoutingError('spec.targetRefs is not a list');
  return targetRefs.map((r, i) => {
    const ref = record(r);
    if (!ref) throw new ReadRoutingError(`spec.targetRefs[${i}] is not an object`);
    return ref;
  });
}

/** The zones (by name) whose vmselect the targetRefs route to, in the order of `zones`. */
export function zonesRoutedByVMUser(
  targetRefs: unknown,
  vmuserNamespace: string,
  zones: readonly ZoneReadBackend[],
): string[] {
  const refs = asRefs(targetRefs);
  const backends = refs.flatMap((ref) => refBackends(ref, vmuserNamespace));
  return zones.filter((zone) => backends.some((b) => b.matches(zone))).map((z) => z.zone);
}

/**
 * Removes every backend of `zone` from the targetRefs. A targetRef left without backends is removed as a whole.
 * Returns the new list and the removals, newest last (undo them in reverse).
 */
export function removeZoneFromTargetRefs(
  targetRefs: unknown,
  vmuserNamespace: string,
  zone: ZoneReadBackend,
): { targetRefs: TargetRef[]; removed: VMUserRemoval[] } {
  const refs = asRefs(targetRefs).map((r) => structuredClone(r));
  const removed: VMUserRemoval[] = [];
  // Back to front, so that the indices of refs not yet visited stay valid.
  for (let refIndex = refs.length - 1; refIndex >= 0; refIndex--) {
    const ref = refs[refIndex] as TargetRef;
    const backends = refBackends(ref, vmuserNamespace);
    const ours = backends.filter((b) => b.matches(zone));
    if (ours.length === 0) continue;
    const fingerprint = targetRefFingerprint(ref);
    if (ours.length === backends.length) {
      refs.splice(refIndex, 1);
      removed.push({ op: 'targetRef', index: refIndex, targetRef: ref });
      continue;
    }
    // Neighbours are taken before anything is spliced out of the lists.
    const crdObjects = (record(ref.crd)?.objects ?? []) as unknown[];
    const staticUrls = (record(ref.static)?.urls ?? []) as unknown[];
    const removedObjects = new Set(ours.filter((b) => b.kind === 'object').map((b) => b.index));
    const removedUrls = new Set(ours.filter((b) => b.kind === 'urls').map((b) => b.index));
    const aroundOf = new Map(
      ours.map((b) => [
        b,
        b.kind === 'object'
          ? neighbours(crdObjects, b.index, removedObjects)
          : b.kind === 'urls'
            ? neighbours(staticUrls, b.index, removedUrls)
            : {},
      ]),
    );
    // Within a ref, back to front as well.
    for (const backend of [...ours].reverse()) {
      const crd = record(ref.crd) ?? {};
      const stat = record(ref.static) ?? {};
      if (backend.kind === 'name') {
        removed.push({
          op: 'name',
          refIndex,
          fingerprint,
          name: text(crd.name),
          namespace: text(crd.namespace),
        });
        // The CRD requires both fields; empty strings make the operator use crd.objects only.
        crd.name = '';
        crd.namespace = '';
      } else if (backend.kind === 'object') {
        const objects = crd.objects as unknown[];
        const around = aroundOf.get(backend) ?? {};
        const [object] = objects.splice(backend.index, 1);
        removed.push({
          op: 'object',
          refIndex,
          fingerprint,
          index: backend.index,
          object: record(object) ?? {},
          ...around,
        });
      } else if (backend.kind === 'url') {
        removed.push({ op: 'url', refIndex, fingerprint, field: 'url', index: 0, url: text(stat.url) });
        delete stat.url;
      } else {
        const urls = stat.urls as unknown[];
        const around = aroundOf.get(backend) ?? {};
        const [url] = urls.splice(backend.index, 1);
        removed.push({
          op: 'url',
          refIndex,
          fingerprint,
          field: 'urls',
          index: backend.index,
          url: text(url),
          ...around,
        });
      }
    }
  }
  // Per route, not per zone: a targetRef that only this zone serves takes its paths (a tenant, an API) with it.
  for (const removal of removed) {
    if (removal.op !== 'targetRef') continue;
    const key = routeKey(removal.targetRef);
    if (!refs.some((ref) => routeKey(ref) === key)) {
      throw new ReadRoutingError(
        `refusing to take zone ${zone.zone} out of reads: it alone serves the route ${redactText(key)} (spec.targetRefs[${removal.index}]); add another zone's vmselect to that targetRef first`,
      );
    }
  }
  return { targetRefs: refs, removed };
}

/** What a targetRef matches requests by (its route), apart from where it sends them. */
function routeKey(ref: TargetRef): string {
  return canonicalJson({
    paths: ref.paths ?? null,
    hosts: ref.hosts ?? null,
    headers: ref.src_headers ?? ref.headers ?? null,
    query: ref.src_query_args ?? null,
  });
}

function findRef(refs: TargetRef[], refIndex: number, fingerprint: string): TargetRef {
  const preferred = refs[refIndex];
  if (preferred && targetRefFingerprint(preferred) === fingerprint) return preferred;
  const found = refs.find((r) => targetRefFingerprint(r) === fingerprint);
  if (!found) {
    throw new ReadRoutingError(
      `cannot put the zone back: the targetRef it was removed from (${redactText(fingerprint)}) is no longer in spec.targetRefs`,
    );
  }
  return found;
}

function sameObject(a: unknown, b: Record<string, unknown>): boolean {
  const o = record(a);
  return o !== undefined && text(o.name) === text(b.name) && text(o.namespace) === text(b.namespace);
}

/** Undoes `removed` (in reverse order); what is already back is left alone, so restoring twice is harmless. */
export function restoreZoneToTargetRefs(targetRefs: unknown, removed: readonly VMUserRemoval[]): TargetRef[] {
  const refs = asRefs(targetRefs).map((r) => structuredClone(r));
  for (const removal of [...removed].reverse()) {
    if (removal.op === 'targetRef') {
      const wanted = canonicalJson(removal.targetRef);
      if (!refs.some((r) => canonicalJson(r) === wanted)) {
        refs.splice(Math.min(removal.index, refs.length), 0, structuredClone(removal.targetRef));
      }
      continue;
    }
    const ref = findRef(refs, removal.refIndex, removal.fingerprint);
    if (removal.op === 'name') {
      const crd = (record(ref.crd) ?? {}) as Record<string, unknown>;
      if (text(crd.name) === '') {
        crd.name = removal.name;
        crd.namespace = removal.namespace;
      }
    } else if (removal.op === 'object') {
      const crd = record(ref.crd) as Record<string, unknown>;
      const objects = Array.isArray(crd.objects) ? (crd.objects as unknown[]) : [];
      if (!objects.some((o) => sameObject(o, removal.object))) {
        objects.splice(placeBack(objects, removal), 0, structuredClone(removal.object));
      }
      crd.objects = objects;
    } else {
      const stat = (record(ref.static) ?? {}) as Record<string, unknown>;
      ref.static = stat;
      if (removal.field === 'url') {
        if (text(stat.url) === '') stat.url = removal.url;
      } else {
        const urls = Array.isArray(stat.urls) ? (stat.urls as unknown[]) : [];
        if (!urls.includes(removal.url)) urls.splice(placeBack(urls, removal), 0, removal.url);
        stat.urls = urls;
      }
    }
  }
  return refs;
}

// ---- Whether the operator has taken a VMUser change ----

/**
 * The operator has rendered the VMUser's current spec: `status.updateStatus` is operational and the status was
 * written for the current generation (the operator writes observedGeneration with every status update).
 */
export function vmuserTakenUp(vmuser: {
  metadata: { generation?: number };
  status?: Record<string, unknown>;
}): { ready: boolean; message: string } {
  const status = vmuser.status ?? {};
  const generation = vmuser.metadata.generation ?? 0;
  const observed = typeof status.observedGeneration === 'number' ? status.observedGeneration : undefined;
  const updateStatus = typeof status.updateStatus === 'string' ? status.updateStatus : undefined;
  if (updateStatus === 'operational' && observed !== undefined && observed >= generation) {
    return { ready: true, message: `operational at generation ${observed}` };
  }
  return {
    ready: false,
    message: `updateStatus ${updateStatus ?? 'not set'} at observed generation ${observed ?? 'none'} (want operational at ${generation})`,
  };
}
