// Parse benchmark: a generated ~50 MB vmagent /metrics page, parsed by our streaming parser (keeping the
// queue-drain series) and by the npm package parse-prometheus-text-format (which parses everything from one
// string). Each run is its own child process, so its peak RSS is its own. Run with
//   ./node_modules/.bin/node test/bench/parse-metrics.bench.ts [--mb 50] [--runs 3]
// The last output line is `BENCH_JSON {...}` with the figures, for a bench runner to collect.

import { spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseMetricsText } from '../../plugin/vm/metrics-text.ts';
import { queueMetricNameList } from '../../plugin/vm/remote-write.ts';
import { streamGeneratedPage } from '../unit/vm/vmagent-page.ts';

type ParserName = 'vmzones' | 'parse-prometheus-text-format';

interface ChildReport {
  readonly parser: ParserName;
  readonly bytes: number;
  readonly seconds: number;
  readonly keptSamples: number;
  readonly rssBeforeBytes: number;
  readonly peakRssBytes: number;
}

const megabyte = 1024 * 1024;

async function runChild(parser: ParserName, file: string): Promise<ChildReport> {
  const rssBeforeBytes = process.memoryUsage.rss();
  const bytes = statSync(file).size;
  const keep = new Set(queueMetricNameList);
  const started = process.hrtime.bigint();
  let keptSamples: number;
  if (parser === 'vmzones') {
    const result = await parseMetricsText(createReadStream(file, { highWaterMark: 64 * 1024 }), { keep });
    keptSamples = result.samples.length;
  } else {
    // The package has no streaming mode: it takes the whole page as one string, as its users must.
    const { readFile } = await import('node:fs/promises');
    const parsePrometheusTextFormat = createRequire(import.meta.url)('parse-prometheus-text-format') as (
      text: string,
    ) => { name: string; metrics: unknown[] }[];
    const families = parsePrometheusTextFormat(await readFile(file, 'utf8'));
    keptSamples = families
      .filter((family) => keep.has(family.name))
      .reduce((sum, family) => sum + family.metrics.length, 0);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  // maxRSS is in KiB: the peak resident set of this process, parse included.
  const peakRssBytes = process.resourceUsage().maxRSS * 1024;
  return { parser, bytes, seconds, keptSamples, rssBeforeBytes, peakRssBytes };
}

async function writePage(file: string, megabytes: number): Promise<void> {
  const page = streamGeneratedPage({
    targetBytes: megabytes * megabyte,
    remoteWriteUrls: 3,
    compactLabels: true,
  });
  const out = createWriteStream(file);
  for await (const chunk of page.chunks()) {
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) =>
    out.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
}

function spawnRun(parser: ParserName, file: string): ChildReport {
  const child = spawnSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', parser, '--file', file],
    {
      encoding: 'utf8',
      maxBuffer: 16 * megabyte,
    },
  );
  if (child.status !== 0) throw new Error(`${parser} run failed (${child.status}): ${child.stderr}`);
  const line = child.stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(line) as ChildReport;
}

function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      child: { type: 'string' },
      file: { type: 'string' },
      mb: { type: 'string', default: '50' },
      runs: { type: 'string', default: '3' },
    },
  });
  if (values.child !== undefined) {
    const report = await runChild(values.child as ParserName, values.file as string);
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return;
  }
  const megabytes = Number(values.mb);
  const runs = Number(values.runs);
  const directory = mkdtempSync(join(tmpdir(), 'vmzones-parse-bench-'));
  const file = join(directory, 'metrics.txt');
  try {
    await writePage(file, megabytes);
    const summary: Record<
      string,
      { mbPerSecond: number; peakRssMb: number; rssBeforeMb: number; keptSamples: number }
    > = {};
    for (const parser of ['vmzones', 'parse-prometheus-text-format'] as const) {
      const reports = Array.from({ length: runs }, () => spawnRun(parser, file));
      summary[parser] = {
        mbPerSecond: median(reports.map((report) => report.bytes / megabyte / report.seconds)),
        peakRssMb: median(reports.map((report) => report.peakRssBytes / megabyte)),
        rssBeforeMb: median(reports.map((report) => report.rssBeforeBytes / megabyte)),
        keptSamples: reports[0]?.keptSamples ?? 0,
      };
    }
    const ours = summary.vmzones;
    const theirs = summary['parse-prometheus-text-format'];
    if (ours === undefined || theirs === undefined) throw new Error('missing results');
    if (ours.keptSamples !== theirs.keptSamples) {
      throw new Error(`parsers disagree on the kept samples: ${ours.keptSamples} vs ${theirs.keptSamples}`);
    }
    const size = statSync(file).size / megabyte;
    const row = (name: string, figures: typeof ours) =>
      `  ${name.padEnd(30)} ${figures.mbPerSecond.toFixed(0).padStart(6)} MB/s   peak RSS ${figures.peakRssMb.toFixed(0).padStart(5)} MB` +
      ` (+${(figures.peakRssMb - figures.rssBeforeMb).toFixed(0)} MB over the ${figures.rssBeforeMb.toFixed(0)} MB process before parsing)`;
    const speedRatio = ours.mbPerSecond / theirs.mbPerSecond;
    const memoryRatio = theirs.peakRssMb / ours.peakRssMb;
    const growthRatio =
      (theirs.peakRssMb - theirs.rssBeforeMb) / Math.max(1, ours.peakRssMb - ours.rssBeforeMb);
    console.log(
      `parse-metrics: a ${size.toFixed(1)} MB vmagent /metrics page, ${ours.keptSamples} queue samples kept, median of ${runs} runs`,
    );
    console.log(row('vmzones streaming parser', ours));
    console.log(row('parse-prometheus-text-format', theirs));
    console.log(
      `  ratio: ${speedRatio.toFixed(1)}x the throughput, ${memoryRatio.toFixed(1)}x less peak RSS, ` +
        `${growthRatio.toFixed(1)}x less RSS growth while parsing`,
    );
    console.log(
      `BENCH_JSON ${JSON.stringify({ bench: 'parse-metrics', pageMb: size, ...summary, speedRatio, memoryRatio, growthRatio })}`,
    );
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

await main();
