// What a writer object (a VMAgent, or a VLAgent for VictoriaLogs zones: writer-kinds.ts) says about its
// remote-write queues: which `spec.remoteWrite` entry (1-based, in list order, as the operator emits the
// -remoteWrite.url flags) feeds a zone. Both kinds list `spec.remoteWrite[].url` the same way.

import { CodedError } from '../goplugin/failure-codes.ts';
import { type KubeObject, namespacedName } from '../kube/objects.ts';
import { redactUrl } from '../kube/redact.ts';
import type { Container, Pod } from './pods.ts';
import { defaultZoneKind, type ZoneKind } from './zone-kinds.ts';

export class VmagentSpecError extends CodedError {
  constructor(agent: KubeObject, problem: string) {
    super('VmagentSpecInvalid', `${agent.kind ?? 'VMAgent'} ${namespacedName(agent.metadata)}: ${problem}`);
    this.name = 'VmagentSpecError';
  }
}

/** `spec.remoteWrite[].url` in order. */
export function remoteWriteUrls(vmagent: KubeObject): string[] {
  const list = vmagent.spec?.remoteWrite;
  if (!Array.isArray(list) || list.length === 0) {
    throw new VmagentSpecError(vmagent, 'spec.remoteWrite is empty: it writes to no zone');
  }
  return list.map((entry, position) => {
    const url = (entry as { url?: unknown } | null)?.url;
    if (typeof url !== 'string' || url === '') {
      throw new VmagentSpecError(vmagent, `spec.remoteWrite[${position}].url is not set`);
    }
    return url;
  });
}

/** The host name a URL points at, lower-case, or undefined if it does not parse. */
function hostName(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

export interface ZoneQueue {
  /** 1-based position in spec.remoteWrite. */
  readonly index: number;
  readonly url: string;
}

/**
 * The remote-write entry that writes to zone object `vmcluster` in `namespace`: the one whose host is the
 * operator's write Service of its kind (`vminsert-<vmcluster>` for a VMCluster, `vmsingle-<name>` for a VMSingle;
 * alone or followed by `.<namespace>` and any domain), or, when `hosts` is given (the zone's `vminsertHosts`,
 * e.g. the address another cluster publishes its vminsert on), the one whose host is one of those. Exactly one
 * entry must match.
 */
export function zoneQueueOf(
  vmagent: KubeObject,
  vmcluster: string,
  namespace: string,
  kind: ZoneKind = defaultZoneKind,
  hosts?: readonly string[],
): ZoneQueue {
  const urls = remoteWriteUrls(vmagent);
  const service = `${kind.writeServicePrefix}${vmcluster}`;
  const wanted = hosts?.map((h) => h.toLowerCase());
  const matches: ZoneQueue[] = [];
  urls.forEach((url, position) => {
    const host = hostName(url);
    if (wanted !== undefined) {
      if (host !== undefined && wanted.includes(host)) matches.push({ index: position + 1, url });
      return;
    }
    const labels = host?.split('.') ?? [];
    if (labels[0] !== service) return;
    if (labels.length > 1 && labels[1] !== namespace) return;
    matches.push({ index: position + 1, url });
  });
  if (matches.length === 1) return matches[0] as ZoneQueue;
  const listed = urls.map((url, position) => `${position + 1}: ${redactUrl(url)}`).join(', ');
  const target =
    wanted === undefined
      ? `${service}.${namespace} (the write Service of ${kind.kind} ${namespacedName({ namespace, name: vmcluster })})`
      : `${wanted.join(' or ')} (the vminsertHosts of ${kind.kind} ${namespacedName({ namespace, name: vmcluster })})`;
  if (matches.length === 0) {
    throw new VmagentSpecError(
      vmagent,
      `no spec.remoteWrite URL points at ${target}; ` +
        `its URLs are ${listed}. Name the zone's URL with remoteWriteUrl or remoteWriteIndex in the gate config`,
    );
  }
  throw new VmagentSpecError(
    vmagent,
    `${matches.length} spec.remoteWrite URLs point at ${target} (positions ${matches.map((m) => m.index).join(', ')}); ` +
      'name the zone\u2019s URL with remoteWriteUrl or remoteWriteIndex in the gate config',
  );
}

/** The entry with exactly this URL, or the entry at `index`; an index beyond the list is an error. */
export function explicitZoneQueue(
  vmagent: KubeObject,
  choice: { remoteWriteUrl?: string; remoteWriteIndex?: number },
): ZoneQueue {
  const urls = remoteWriteUrls(vmagent);
  if (choice.remoteWriteIndex !== undefined) {
    const url = urls[choice.remoteWriteIndex - 1];
    if (url === undefined) {
      throw new VmagentSpecError(
        vmagent,
        `remoteWriteIndex ${choice.remoteWriteIndex} is beyond its ${urls.length} spec.remoteWrite entries`,
      );
    }
    if (choice.remoteWriteUrl !== undefined && url !== choice.remoteWriteUrl) {
      throw new VmagentSpecError(
        vmagent,
        `spec.remoteWrite[${choice.remoteWriteIndex - 1}] is ${redactUrl(url)}, not the configured remoteWriteUrl`,
      );
    }
    return { index: choice.remoteWriteIndex, url };
  }
  const position = urls.indexOf(choice.remoteWriteUrl ?? '');
  if (position < 0) {
    throw new VmagentSpecError(
      vmagent,
      `no spec.remoteWrite entry has the URL ${redactUrl(choice.remoteWriteUrl ?? '')}`,
    );
  }
  return { index: position + 1, url: urls[position] as string };
}

/**
 * The -remoteWrite.url values a vmagent pod's containers were started with, in order: what the process
 * hashes to name its queues. The operator passes one comma-joined flag, others repeat the flag. Undefined
 * when no container has the flag, or when a value uses the quoting vmagent's array flags allow (not modelled).
 */
export function remoteWriteUrlsFromPod(pod: Pod): string[] | undefined {
  const containers = (pod.spec?.containers ?? []).filter((container) =>
    [...(container.command ?? []), ...(container.args ?? [])].some(isRemoteWriteUrlFlag),
  );
  if (containers.length !== 1) return undefined;
  const container = containers[0] as Container;
  const words = [...(container.command ?? []), ...(container.args ?? [])];
  const urls: string[] = [];
  for (let position = 0; position < words.length; position++) {
    const word = words[position] as string;
    if (!isRemoteWriteUrlFlag(word)) continue;
    const equals = word.indexOf('=');
    const value = equals >= 0 ? word.slice(equals + 1) : words[++position];
    if (value === undefined || /["'[\]{}()]/.test(value)) return undefined;
    urls.push(...value.split(','));
  }
  return urls;
}

function isRemoteWriteUrlFlag(word: string): boolean {
  return /^--?remoteWrite\.url(=|$)/.test(word);
}
