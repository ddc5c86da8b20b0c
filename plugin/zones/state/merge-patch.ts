// RFC 7396 JSON Merge Patch, plus the record of what a patch changed so that it can be undone field by field.
// Hand-written: the npm packages for it are unmaintained, and we need the change record, which none offers.

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Applies `patch` to `target` per RFC 7396 and returns a new value; neither input is modified. */
export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return structuredClone(patch);
  const result: JsonObject = isJsonObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/**
 * The single merge patch equivalent to applying `first` then `second`: nulls are kept (they delete in the
 * target), so a zone's `null` removes a field even when the global overrideSpec sets it.
 */
export function composeMergePatches(first: JsonObject, second: JsonObject): JsonObject {
  const result: JsonObject = structuredClone(first);
  for (const [key, value] of Object.entries(second)) {
    const earlier = result[key];
    result[key] =
      isJsonObject(value) && isJsonObject(earlier)
        ? composeMergePatches(earlier, value)
        : structuredClone(value);
  }
  return result;
}

/** One field a patch changed: its path (object keys from the root) and its value before, absent = undefined. */
export interface FieldChange {
  path: string[];
  before: JsonValue | undefined;
  after: JsonValue | undefined;
}

/**
 * The leaf fields that applying `patch` to `target` changes, with their values before and after. A field whose
 * value is equal before and after is not a change. Arrays and scalars are leaves (merge patch replaces them).
 */
export function diffMergePatch(
  target: JsonValue | undefined,
  patch: JsonValue,
  path: string[] = [],
): FieldChange[] {
  if (!isJsonObject(patch)) {
    return deepEqual(target, patch) ? [] : [{ path, before: clone(target), after: structuredClone(patch) }];
  }
  if (!isJsonObject(target) && path.length > 0) {
    // An object patch over a scalar, an array or nothing creates the object as a whole.
    return [{ path, before: clone(target), after: mergePatch(undefined, patch) }];
  }
  const changes: FieldChange[] = [];
  for (const [key, value] of Object.entries(patch)) {
    const current = isJsonObject(target) ? target[key] : undefined;
    if (value === null) {
      if (current !== undefined)
        changes.push({ path: [...path, key], before: clone(current), after: undefined });
    } else {
      changes.push(...diffMergePatch(current, value, [...path, key]));
    }
  }
  return changes;
}

/** The merge patch that puts every recorded field back to its value before (absent fields become null = delete). */
export function revertPatch(changes: readonly FieldChange[]): JsonObject {
  const patch: JsonObject = {};
  for (const change of changes) {
    if (change.path.length === 0) throw new Error('cannot revert a change of the whole document');
    let node = patch;
    for (const key of change.path.slice(0, -1)) {
      const next = node[key];
      if (isJsonObject(next)) node = next;
      else node = node[key] = {};
    }
    const last = change.path[change.path.length - 1] as string;
    node[last] = change.before === undefined ? null : structuredClone(change.before);
  }
  return patch;
}

function clone(v: JsonValue | undefined): JsonValue | undefined {
  return v === undefined ? undefined : structuredClone(v);
}

export function deepEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

/** The value at `path` inside a JSON document, undefined where the path does not lead. */
export function valueAt(root: unknown, path: readonly string[]): JsonValue | undefined {
  let node: unknown = root;
  for (const key of path) {
    if (!isJsonObject(node)) return undefined;
    node = node[key];
  }
  return node as JsonValue | undefined;
}
