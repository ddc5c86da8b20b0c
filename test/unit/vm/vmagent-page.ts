// Generates a large, deterministic /metrics page shaped like a busy vmagent's: process and Go runtime
// families, `flag` lines, Prometheus (`le`) and VictoriaMetrics (`vmrange`) histograms, many per-target
// families, and the remote-write / persistent-queue families for a few -remoteWrite.url queues — half of
// them in the middle of the page, half at its very end, so a parser must read it all. The page is produced
// chunk by chunk, never whole, and records what it emitted so tests can check a parser against it.

import type { MetricSample } from '../../../plugin/vm/metrics-text.ts';

export interface PageOptions {
  /** Approximate size of the page; the generated page is at least this large. */
  readonly targetBytes: number;
  readonly remoteWriteUrls: number;
  /** Emit `# HELP` / `# TYPE` lines, as vmagent does with -metrics.exposeMetadata. Default true. */
  readonly metadata?: boolean;
  readonly chunkBytes?: number;
  readonly queueDir?: string;
  /**
   * Separate labels with `,` only. vmagent writes `, ` in many families, which some parsers (e.g. the npm
   * package parse-prometheus-text-format) reject; benchmarks against them need the compact form.
   */
  readonly compactLabels?: boolean;
}

export interface GeneratedPage {
  chunks(): AsyncGenerator<Uint8Array>;
  /** After `chunks()` was consumed: number of lines emitted. */
  lineCount(): number;
  /** After `chunks()` was consumed: the emitted samples with one of these names, in page order. */
  keptSamples(names: readonly string[]): MetricSample[];
}

const vmranges = [
  '1.000e-03...1.136e-03',
  '4.642e-03...5.275e-03',
  '1.000e-02...1.136e-02',
  '2.154e-02...2.448e-02',
];
const vmrangesWide = [...vmranges, '1.000e-01...1.136e-01', '4.642e-01...5.275e-01', '1.000e+00...1.136e+00'];
const leBuckets = ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf'];

// Families repeated for every scrape target; `vmrange` histograms as VictoriaMetrics' metrics package writes.
const perTargetFamilies: { name: string; type: string; ranges?: readonly string[]; le?: boolean }[] = [
  { name: 'vm_promscrape_scrape_duration_seconds_bucket', type: 'histogram', ranges: vmrangesWide },
  { name: 'vm_promscrape_scrape_duration_seconds_sum', type: 'histogram' },
  { name: 'vm_promscrape_scrape_duration_seconds_count', type: 'histogram' },
  { name: 'vm_promscrape_scrape_response_size_bytes', type: 'gauge' },
  { name: 'vm_promscrape_scraped_samples', type: 'gauge' },
  { name: 'vm_promscrape_series_added_total', type: 'counter' },
  { name: 'vm_promscrape_target_relabel_duration_seconds_bucket', type: 'histogram', le: true },
  { name: 'up', type: 'gauge' },
];

class Random {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    // xorshift32: deterministic and fast, good enough for plausible metric values.
    let x = this.state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.state = x >>> 0;
    return this.state / 0x1_0000_0000;
  }
  value(): string {
    const r = this.next();
    if (r < 0.3) return String(Math.floor(r * 1e6));
    if (r < 0.6) return (r * 1234.5).toFixed(3);
    if (r < 0.98) return (r * 1e-4).toExponential(6);
    return r < 0.99 ? 'NaN' : '+Inf';
  }
}

function labelText(labels: Record<string, string>, separator: string): string {
  const parts = Object.entries(labels).map(
    ([key, value]) =>
      `${key}="${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`,
  );
  return parts.length === 0 ? '' : `{${parts.join(separator)}}`;
}

export function streamGeneratedPage(options: PageOptions): GeneratedPage {
  const chunkBytes = options.chunkBytes ?? 64 * 1024;
  const metadata = options.metadata ?? true;
  const separator = options.compactLabels === true ? ',' : ', ';
  const queueDir = options.queueDir ?? '/vmagent_pq/vmagent-remotewrite-data/persistent-queue';
  let lines = 0;
  const emitted: MetricSample[] = [];

  async function* chunks(): AsyncGenerator<Uint8Array> {
    const encoder = new TextEncoder();
    const random = new Random(20_260_101);
    let pending: string[] = [];
    let pendingLength = 0;
    let written = 0;
    lines = 0;
    emitted.length = 0;

    function* flush(force: boolean): Generator<Uint8Array> {
      if (pendingLength < chunkBytes && !(force && pendingLength > 0)) return;
      const bytes = encoder.encode(pending.join(''));
      pending = [];
      pendingLength = 0;
      written += bytes.length;
      yield bytes;
    }
    const line = (text: string) => {
      pending.push(text, '\n');
      pendingLength += text.length + 1;
      lines++;
    };
    const family = (name: string, type: string) => {
      if (!metadata) return;
      line(`# HELP ${name} ${name.replaceAll('_', ' ')}`);
      line(`# TYPE ${name} ${type}`);
    };
    const recorded = (name: string, labels: Record<string, string>, value: number, text = String(value)) => {
      emitted.push({ name, labels, value });
      line(`${name}${labelText(labels, separator)} ${text}`);
    };
    const queue = (index: number) => {
      const hash = (0x1c39d330f1670079n + BigInt(index) * 0x9e3779b97f4a7c15n) & 0xffff_ffff_ffff_ffffn;
      return {
        path: `${queueDir}/${index}_${hash.toString(16).toUpperCase().padStart(16, '0')}`,
        url: `${index}:secret-url`,
      };
    };

    // Header: flags, Go runtime and process families.
    for (let i = 0; i < 250; i++)
      line(`flag{name="flag.name.${i}"${separator}value="value-${i}"${separator}is_set="${i % 3 === 0}"} 1`);
    family('go_gc_duration_seconds', 'summary');
    for (const quantile of ['0', '0.25', '0.5', '0.75', '1'])
      line(`go_gc_duration_seconds{quantile="${quantile}"} ${random.value()}`);
    family('go_sched_latencies_seconds', 'histogram');
    for (const le of leBuckets)
      line(`go_sched_latencies_seconds_bucket{le="${le}"} ${Math.floor(random.next() * 1e5)}`);
    line('process_resident_memory_bytes 1.23456789e+08');
    yield* flush(false);

    const targetsPerPass = 2000;
    let pass = 0;
    let remoteWriteFirstHalfDone = false;
    while (written + pendingLength < options.targetBytes) {
      for (const spec of perTargetFamilies) {
        family(spec.name, spec.type);
        for (let target = 0; target < targetsPerPass; target++) {
          const job = `job-${(target % 37) + pass * 37}`;
          const instance = `10.${(target >> 8) & 255}.${target & 255}.${pass % 250}:9100`;
          if (spec.ranges !== undefined) {
            for (const vmrange of spec.ranges) {
              line(
                `${spec.name}{job="${job}"${separator}instance="${instance}"${separator}vmrange="${vmrange}"} ${Math.floor(random.next() * 1000)}`,
              );
            }
          } else if (spec.le === true) {
            for (const le of leBuckets)
              line(`${spec.name}{job="${job}",instance="${instance}",le="${le}"} ${random.value()}`);
          } else {
            line(`${spec.name}{job="${job}",instance="${instance}"} ${random.value()}`);
          }
          yield* flush(false);
        }
      }
      pass++;
      if (!remoteWriteFirstHalfDone && written >= options.targetBytes / 2) {
        remoteWriteFirstHalfDone = true;
        family('vmagent_remotewrite_pending_data_bytes', 'gauge');
        for (let index = 1; index <= options.remoteWriteUrls; index++) {
          recorded('vmagent_remotewrite_pending_data_bytes', queue(index), index * 1024);
        }
        family('vm_persistentqueue_bytes_pending', 'gauge');
        for (let index = 1; index <= options.remoteWriteUrls; index++) {
          recorded(
            'vm_persistentqueue_bytes_pending',
            { path: queue(index).path },
            index === 2 ? 1.5e9 : 0,
            index === 2 ? '1.5e+09' : '0',
          );
        }
        family('vmagent_remotewrite_requests_total', 'counter');
        for (let index = 1; index <= options.remoteWriteUrls; index++) {
          recorded(
            'vmagent_remotewrite_requests_total',
            { url: queue(index).url, status_code: '2XX' },
            1000 + index,
          );
          recorded(
            'vmagent_remotewrite_requests_total',
            { url: queue(index).url, status_code: '503' },
            index,
          );
        }
      }
    }

    family('vmagent_remotewrite_retries_count_total', 'counter');
    for (let index = 1; index <= options.remoteWriteUrls; index++) {
      recorded('vmagent_remotewrite_retries_count_total', { url: queue(index).url }, index * 3);
    }
    family('vmagent_remotewrite_duration_seconds', 'histogram');
    for (let index = 1; index <= options.remoteWriteUrls; index++) {
      for (const vmrange of vmranges) {
        line(
          `vmagent_remotewrite_duration_seconds_bucket{url="${queue(index).url}",vmrange="${vmrange}"} 12`,
        );
      }
    }
    yield* flush(true);
  }

  return {
    chunks,
    lineCount: () => lines,
    keptSamples: (names) => emitted.filter((sample) => names.includes(sample.name)),
  };
}
