// Identifies one vmagent remote-write queue (the one that feeds a zone) in a scrape of vmagent's /metrics.
//
// What vmagent does (app/vmagent/remotewrite/remotewrite.go, checked at v1.151.0 and against running vmagent
// 1.79.5 and 1.151.0 binaries):
// - The N-th `-remoteWrite.url` flag (1-based, in flag order; the operator emits VMAgent
//   `spec.remoteWrite[]` in list order) labels its series `url="N:secret-url"`, or `url="N:<url as given>"`
//   with -remoteWrite.showURL.
// - Its queue directory is `<tmpDataPath>/persistent-queue/N_<XXH64 %016X>`, where the hash (xxhash64, seed
//   0, cespare/xxhash Sum64) is of the URL without query and fragment, as Go's url.URL.String() prints it
//   (see go-url.ts). The `path` label of the queue's series is that directory.
// So the index picks the zone's series, and the directory name cross-checks that the URL at that index is
// still the zone's URL: a reordered or edited -remoteWrite.url list changes the name.

import xxhash from 'xxhash-wasm';
import { vmagentQueueUrlString } from './go-url.ts';
import type { MetricSample } from './metrics-text.ts';
import type { WriterKind } from './writer-kinds.ts';

export { RemoteWriteUrlError, vmagentQueueUrlString } from './go-url.ts';

/** Metric names a queue-drain check reads from a vmagent; pass them as the parser's `keep` list. */
export const queueMetricNames = {
  pendingDataBytes: 'vmagent_remotewrite_pending_data_bytes',
  onDiskPendingBytes: 'vm_persistentqueue_bytes_pending',
  requests: 'vmagent_remotewrite_requests_total',
  // The same series, every status code but 2xx: answers after which the block is retried or dropped.
  failedRequests: 'vmagent_remotewrite_requests_total',
  bytesSent: 'vmagent_remotewrite_bytes_sent_total',
  retries: 'vmagent_remotewrite_retries_count_total',
  errors: 'vmagent_remotewrite_errors_total',
  packetsDropped: 'vmagent_remotewrite_packets_dropped_total',
  onDiskBytesDropped: 'vm_persistentqueue_bytes_dropped_total',
  onDiskBlocksDropped: 'vm_persistentqueue_blocks_dropped_total',
  // Since v1.102 (samples dropped when the on-disk queue is disabled); absent on older vmagent.
  samplesDropped: 'vmagent_remotewrite_samples_dropped_total',
} as const;

export type QueueFigureName = keyof typeof queueMetricNames;

export type QueueMetricNames = Readonly<Record<QueueFigureName, string>>;

/**
 * The names for a writer: vlagent's write path is vmagent's with its own prefix on the per-URL series and the
 * same `vm_persistentqueue_` ones (docs/zone-kinds.md, "vlagent's remote-write queues"); vlagent has no
 * samples-dropped counter, which is optional for vmagent too.
 */
export function queueMetricNamesOf(writer: WriterKind): QueueMetricNames {
  return Object.fromEntries(
    Object.entries(queueMetricNames).map(([figure, name]) => [
      figure,
      name.replace(/^vmagent_remotewrite_/, writer.seriesPrefix),
    ]),
  ) as QueueMetricNames;
}

export const queueMetricNameList: readonly string[] = [...new Set(Object.values(queueMetricNames))];

/** The series a figure is read from, for messages (`requests` counts only 2xx, `failedRequests` the others). */
export function queueSeriesName(figure: QueueFigureName, names: QueueMetricNames = queueMetricNames): string {
  if (figure === 'requests') return `${names.requests}{status_code="2XX"}`;
  if (figure === 'failedRequests') return `${names.requests}{status_code!="2XX"}`;
  return names[figure];
}

/**
 * How many sends of the queue wait out a backoff, holding a block taken off the queue (which pending bytes no longer
 * count): vmagent and vlagent count a failed send in errors_total (no answer) or requests_total{status_code} (an
 * answer other than 2xx), then wait, then count the retry in retries_count_total — or count a drop instead of the
 * retry (409, and 400/415 it cannot re-pack): app/vmagent/remotewrite/client.go `sendBlockHTTP`, v1.151.0, and
 * vlagent's, v1.52.1 (docs/victoriametrics.md, "vmagent's remote-write queues"). Undefined without the counters;
 * a negative balance (a writer that counts otherwise) proves nothing either way and reads as undefined.
 */
export function sendsAwaitingRetry(figures: Partial<Record<QueueFigureName, number>>): number | undefined {
  const { errors, retries } = figures;
  if (errors === undefined || retries === undefined) return undefined;
  const waiting = errors + (figures.failedRequests ?? 0) - retries - (figures.packetsDropped ?? 0);
  return waiting < 0 ? undefined : waiting;
}

/**
 * Figures that may be absent without meaning anything is wrong: samplesDropped appeared in a later vmagent version;
 * failedRequests' series appear at the first answer with their status code.
 */
const optionalQueueFigures: ReadonlySet<QueueFigureName> = new Set(['samplesDropped', 'failedRequests']);

let hasher: ReturnType<typeof xxhash> | undefined;

function formatHash(hash: bigint): string {
  return hash.toString(16).toUpperCase().padStart(16, '0');
}

/** `N_<hash>`: the queue directory name vmagent uses for `remoteWriteUrl` at 1-based position `index`. */
export async function remoteWriteQueueDirName(index: number, remoteWriteUrl: string): Promise<string> {
  if (!Number.isInteger(index) || index < 1)
    throw new RangeError(`remote-write index must be 1 or more, got ${index}`);
  const hashed = vmagentQueueUrlString(remoteWriteUrl);
  hasher ??= xxhash();
  const { h64 } = await hasher;
  return `${index}_${formatHash(h64(hashed, 0n))}`;
}

/** Which queue to pick: its 1-based index, and if the zone's URL is known, the directory name it must have. */
export interface QueueSelector {
  readonly index: number;
  readonly expectedDirName?: string;
  /** The writer's series names; default vmagent's. */
  readonly names?: QueueMetricNames;
}

export interface PickedQueue {
  /** Summed over the matching series (one per queue unless multitenant URLs split it); absent if none. */
  readonly figures: Partial<Record<QueueFigureName, number>>;
  /** Queue directories of the selected index (normally one). */
  readonly queuePaths: readonly string[];
  /** Required series that the page lacks, as selectors (e.g. `vmagent_remotewrite_retries_count_total{url=~"^2:"}`). */
  readonly missing: readonly string[];
  /** Identity problems: a directory name that does not match the zone's URL. */
  readonly problems: readonly string[];
  /** Every queue directory name on the page, sorted: evidence of the -remoteWrite.url list as it is now. */
  readonly allQueueDirNames: readonly string[];
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function urlIndex(urlLabel: string | undefined): number | undefined {
  const match = urlLabel === undefined ? null : /^(\d+):/.exec(urlLabel);
  return match === null ? undefined : Number(match[1]);
}

/** Picks the series of one queue from a parsed scrape and sums them into figures. */
export function pickQueueSamples(samples: readonly MetricSample[], selector: QueueSelector): PickedQueue {
  const { index, expectedDirName } = selector;
  const names = selector.names ?? queueMetricNames;
  const urlPrefix = `${index}:`;
  const figures: Partial<Record<QueueFigureName, number>> = {};
  const queuePaths = new Set<string>();
  const allDirNames = new Set<string>();
  const problems: string[] = [];

  const add = (figure: QueueFigureName, value: number) => {
    figures[figure] = (figures[figure] ?? 0) + value;
  };

  // The url-labelled pending-bytes series carries both labels, so it links index to directory.
  for (const sample of samples) {
    if (sample.name !== names.pendingDataBytes) continue;
    const path = sample.labels.path;
    if (path !== undefined) allDirNames.add(baseName(path));
    if (urlIndex(sample.labels.url) === index && path !== undefined) queuePaths.add(path);
  }
  if (queuePaths.size === 0 && expectedDirName !== undefined) {
    // Without the url-labelled series, fall back to the directory name on the on-disk series.
    for (const sample of samples) {
      const path = sample.labels.path;
      if (
        sample.name === names.onDiskPendingBytes &&
        path !== undefined &&
        baseName(path) === expectedDirName
      ) {
        queuePaths.add(path);
      }
    }
  }
  for (const path of queuePaths) {
    const dirName = baseName(path);
    if (expectedDirName !== undefined && dirName !== expectedDirName) {
      problems.push(
        `queue ${index} is stored in ${path}, not in a directory named ${expectedDirName}: ` +
          `the remote-write URL at position ${index} is not the zone's URL (was the -remoteWrite.url list reordered or edited?)`,
      );
    } else if (!dirName.startsWith(`${index}_`)) {
      problems.push(`queue ${index} is stored in ${path}, whose name does not start with ${index}_`);
    }
  }

  for (const sample of samples) {
    const { name, labels, value } = sample;
    if (name === names.onDiskPendingBytes) {
      if (labels.path !== undefined && queuePaths.has(labels.path)) add('onDiskPendingBytes', value);
      continue;
    }
    if (name === names.onDiskBytesDropped || name === names.onDiskBlocksDropped) {
      if (labels.path !== undefined && queuePaths.has(labels.path)) {
        add(name === names.onDiskBytesDropped ? 'onDiskBytesDropped' : 'onDiskBlocksDropped', value);
      }
      continue;
    }
    if (labels.url === undefined || !labels.url.startsWith(urlPrefix)) continue;
    switch (name) {
      case names.pendingDataBytes:
        add('pendingDataBytes', value);
        break;
      case names.requests:
        // vmagent counts every 2xx as "2XX" and other codes by their number.
        if (labels.status_code === '2XX' || /^2\d\d$/.test(labels.status_code ?? '')) add('requests', value);
        else add('failedRequests', value);
        break;
      case names.bytesSent:
        add('bytesSent', value);
        break;
      case names.retries:
        add('retries', value);
        break;
      case names.errors:
        add('errors', value);
        break;
      case names.packetsDropped:
        add('packetsDropped', value);
        break;
      case names.samplesDropped:
        add('samplesDropped', value);
        break;
    }
  }

  const missing: string[] = [];
  for (const [figure, metric] of Object.entries(names) as [QueueFigureName, string][]) {
    if (figures[figure] !== undefined || optionalQueueFigures.has(figure)) continue;
    const pathBased = metric.startsWith('vm_persistentqueue_');
    if (pathBased && queuePaths.size === 0) {
      missing.push(`${metric}{path=~".*/${expectedDirName ?? `${index}_.*`}"}`);
    } else if (pathBased) {
      missing.push(`${metric}{path="${[...queuePaths].join('|')}"}`);
    } else if (figure === 'requests') {
      missing.push(`${metric}{url=~"^${index}:",status_code="2XX"}`);
    } else {
      missing.push(`${metric}{url=~"^${index}:"}`);
    }
  }

  return {
    figures,
    queuePaths: [...queuePaths].sort(),
    missing,
    problems,
    allQueueDirNames: [...allDirNames].sort(),
  };
}
