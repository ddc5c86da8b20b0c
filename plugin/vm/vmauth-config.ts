// A raw vmauth config (the `-auth.config` YAML a helm-managed vmauth reads from a Secret or ConfigMap) as read
// routes: which zones its `url_prefix` lists reach, removing a zone's URLs and putting exactly them back.
//
// The text is edited in place, line by line, at the positions the `yaml` document parser reports: everything we
// do not remove stays byte for byte (comments, quoting, indentation, flow or block style), and restoring what was
// removed gives back the original text.

import { isMap, isPair, isScalar, isSeq, type Node, parseDocument } from 'yaml';
import { z } from 'zod';
import { redactText, redactUrl } from '../kube/redact.ts';
import { ReadRoutingError, urlBelongsTo, type ZoneReadBackend } from './read-backends.ts';

export type ConfigPath = (string | number)[];

/** One removed `url_prefix` entry and the exact text to put back. */
export const vmauthConfigRemovalSchema = z.object({
  /** Path of the `url_prefix` list, e.g. ["users", 0, "url_map", 1, "url_prefix"]. */
  path: z.array(z.union([z.string(), z.number().int()])),
  index: z.number().int(),
  url: z.string(),
  style: z.enum(['block', 'flow']),
  /** Block: the whole line with its newline. Flow: the item as written. */
  text: z.string(),
  /** Flow only: what separated the item from its neighbour (", "). */
  separator: z.string().optional(),
  /** The URLs next to it that stayed, so that it goes back to the same place even if others moved meanwhile. */
  next: z.string().optional(),
  previous: z.string().optional(),
});

export type VmauthConfigRemoval = z.infer<typeof vmauthConfigRemovalSchema>;

interface UrlList {
  path: ConfigPath;
  node: Node;
}

function parse(source: string, where: string) {
  const doc = parseDocument(source, { uniqueKeys: false });
  if (doc.errors.length > 0) {
    throw new ReadRoutingError(
      `${where} is not valid YAML: ${redactText(doc.errors[0]?.message.split('\n')[0] ?? '')}`,
    );
  }
  return doc;
}

/** Every `url_prefix` value in the document, wherever it is (users, url_map entries, unauthorized_user). */
function urlPrefixes(node: unknown, path: ConfigPath, out: UrlList[]): UrlList[] {
  if (isMap(node)) {
    for (const pair of node.items) {
      if (!isPair(pair)) continue;
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      if (key === 'url_prefix' && pair.value) out.push({ path: [...path, key], node: pair.value as Node });
      else urlPrefixes(pair.value, [...path, key], out);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => {
      urlPrefixes(item, [...path, i], out);
    });
  }
  return out;
}

function scalarText(node: unknown): string | undefined {
  return isScalar(node) && typeof node.value === 'string' ? node.value : undefined;
}

function describePath(path: ConfigPath): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/** The zones whose vmselect any `url_prefix` of the config reaches, in the order of `zones`. */
export function zonesRoutedByConfig(
  source: string,
  zones: readonly ZoneReadBackend[],
  where: string,
): string[] {
  const doc = parse(source, where);
  const urls: string[] = [];
  for (const list of urlPrefixes(doc.contents, [], [])) {
    const single = scalarText(list.node);
    if (single !== undefined) urls.push(single);
    if (isSeq(list.node)) {
      for (const item of list.node.items) {
        const url = scalarText(item);
        if (url !== undefined) urls.push(url);
      }
    }
  }
  return zones.filter((zone) => urls.some((u) => urlBelongsTo(u, zone))).map((z) => z.zone);
}

interface Edit {
  start: number;
  end: number;
  removal: VmauthConfigRemoval;
}

function lineStart(source: string, offset: number): number {
  return source.lastIndexOf('\n', offset - 1) + 1;
}

function lineEnd(source: string, offset: number): number {
  const end = source.indexOf('\n', offset);
  return end < 0 ? source.length : end + 1;
}

function blockItemSpan(source: string, item: Node, where: string): { start: number; end: number } {
  const [start, valueEnd] = item.range ?? [0, 0];
  const begin = lineStart(source, start);
  const end = lineEnd(source, valueEnd);
  const before = source.slice(begin, start);
  const after = source.slice(valueEnd, end);
  if (!/^[ \t]*-[ \t]+$/.test(before) || !/^[ \t]*(#[^\n]*)?\n?$/.test(after)) {
    throw new ReadRoutingError(
      `${where}: cannot edit the url_prefix entry at offset ${start} in place; write each URL of a block list on its own line`,
    );
  }
  return { start: begin, end };
}

/**
 * Removes every `url_prefix` entry that reaches `zone`. Refuses (ReadRoutingError, nothing changed) when an entry
 * is a single URL rather than a list, or when a list would be left empty.
 */
export function removeZoneFromConfig(
  source: string,
  zone: ZoneReadBackend,
  where: string,
): { text: string; removed: VmauthConfigRemoval[] } {
  const doc = parse(source, where);
  const edits: Edit[] = [];
  for (const list of urlPrefixes(doc.contents, [], [])) {
    const single = scalarText(list.node);
    if (single !== undefined) {
      if (urlBelongsTo(single, zone)) {
        throw new ReadRoutingError(
          `${where}: ${describePath(list.path)} is the single URL ${redactUrl(single)} of zone ${zone.zone}; make it a list of the zones' URLs so that one can be taken out`,
        );
      }
      continue;
    }
    if (!isSeq(list.node)) continue;
    const seq = list.node;
    const ours = seq.items
      .map((item, index) => ({ item: item as Node, index, url: scalarText(item) }))
      .filter((e) => e.url !== undefined && urlBelongsTo(e.url, zone));
    if (ours.length === 0) continue;
    if (seq.flow && ours.length > 1) {
      throw new ReadRoutingError(
        `${where}: ${describePath(list.path)} lists zone ${zone.zone} more than once; list each URL once`,
      );
    }
    if (ours.length === seq.items.length) {
      throw new ReadRoutingError(
        `${where}: removing zone ${zone.zone} would leave ${describePath(list.path)} without any URL`,
      );
    }
    const stays = (i: number) => !ours.some((o) => o.index === i);
    const neighbour = (from: number, step: number): string | undefined => {
      for (let i = from + step; i >= 0 && i < seq.items.length; i += step) {
        if (stays(i)) return scalarText(seq.items[i]);
      }
      return undefined;
    };
    for (const { item, index, url } of ours) {
      const next = neighbour(index, 1);
      const previous = neighbour(index, -1);
      const removal: VmauthConfigRemoval = {
        path: list.path,
        index,
        url: url as string,
        style: seq.flow ? 'flow' : 'block',
        text: '',
        ...(next === undefined ? {} : { next }),
        ...(previous === undefined ? {} : { previous }),
      };
      if (seq.flow) {
        const [start, end] = item.range ?? [0, 0];
        removal.text = source.slice(start, end);
        const next = seq.items[index + 1] as Node | undefined;
        const previous = seq.items[index - 1] as Node | undefined;
        if (next) {
          const nextStart = next.range?.[0] ?? end;
          removal.separator = source.slice(end, nextStart);
          edits.push({ start, end: nextStart, removal });
        } else {
          const previousEnd = previous?.range?.[1] ?? start;
          removal.separator = source.slice(previousEnd, start);
          edits.push({ start: previousEnd, end, removal });
        }
      } else {
        const span = blockItemSpan(source, item, where);
        removal.text = source.slice(span.start, span.end);
        edits.push({ ...span, removal });
      }
    }
  }
  // Back to front, so that earlier offsets stay valid; the removals are recorded in the same order.
  edits.sort((a, b) => b.start - a.start);
  let text = source;
  for (const edit of edits) text = text.slice(0, edit.start) + text.slice(edit.end);
  return { text, removed: edits.map((e) => e.removal) };
}

/** Puts removed entries back (in reverse order of removal); an URL already in its list is not added twice. */
export function restoreZoneToConfig(
  source: string,
  removed: readonly VmauthConfigRemoval[],
  where: string,
): string {
  let text = source;
  for (const removal of [...removed].reverse()) {
    const doc = parse(text, where);
    const seq = doc.getIn(removal.path, true);
    if (!isSeq(seq)) {
      throw new ReadRoutingError(
        `${where}: cannot put ${redactUrl(removal.url)} back: ${describePath(removal.path)} is no longer a list`,
      );
    }
    if (seq.items.some((item) => scalarText(item) === removal.url)) continue;
    const items = seq.items as Node[];
    // Back before the URL that followed it; else after the one that preceded it; else at its old index.
    const position = (url: string | undefined) =>
      url === undefined ? -1 : items.findIndex((item) => scalarText(item) === url);
    const nextAt = position(removal.next);
    const previousAt = position(removal.previous);
    const at =
      nextAt >= 0 ? nextAt : previousAt >= 0 ? previousAt + 1 : Math.min(removal.index, items.length);
    const anchor = items[at];
    const last = items[at - 1] ?? items[items.length - 1];
    if (removal.style === 'flow') {
      const separator = removal.separator ?? ', ';
      if (anchor) {
        const offset = anchor.range?.[0] ?? 0;
        text = text.slice(0, offset) + removal.text + separator + text.slice(offset);
      } else if (last) {
        const offset = last.range?.[1] ?? 0;
        text = text.slice(0, offset) + separator + removal.text + text.slice(offset);
      } else {
        throw new ReadRoutingError(
          `${where}: ${describePath(removal.path)} is empty; cannot put ${redactUrl(removal.url)} back`,
        );
      }
      continue;
    }
    if (anchor) {
      const offset = lineStart(text, anchor.range?.[0] ?? 0);
      text = text.slice(0, offset) + removal.text + text.slice(offset);
    } else if (last) {
      const offset = lineEnd(text, last.range?.[1] ?? 0);
      const needsNewline = offset === text.length && !text.endsWith('\n');
      const line = needsNewline ? `\n${removal.text.replace(/\n$/, '')}` : removal.text;
      text = text.slice(0, offset) + line + text.slice(offset);
    } else {
      throw new ReadRoutingError(
        `${where}: ${describePath(removal.path)} is empty; cannot put ${redactUrl(removal.url)} back`,
      );
    }
  }
  return text;
}
