// Coverage-guided fuzzing of the gob decoder, the yamux framer and the vmagent metrics-text parser, for a
// bounded time per target. Jazzer.js cannot run here (docs/testing.md, "Fuzzing"), so this is a small
// libFuzzer-style loop: the targets (targets.ts) are bundled with istanbul's statement/branch/function
// counters, an input that reaches a counter no earlier input reached joins the corpus, and inputs are
// mutated from the corpus (byte flips, interesting values, inserts, deletes, splices). The corpus starts
// from the Go vectors the unit tests use (test/vectors/gob, the yamux frames of test/unit/goplugin, vmagent
// pages of test/unit/vm). A finding (a throw) is written to test/fuzz/findings/<target>-<hash> and fails
// the run.
// Usage: node test/fuzz/coverage-fuzz.ts [--seconds N (per target, default 60)] [--seed S] [gob yamux metrics]

import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build, transform } from 'esbuild';
import { encodeFrameHeader, Flag, FrameType } from '../../plugin/goplugin/yamux.ts';
import { corpus as gobCorpusDir } from '../unit/gob/go-vectors.ts';
import { streamGeneratedPage } from '../unit/vm/vmagent-page.ts';

type Target = (data: Uint8Array) => void;
interface FileCounters {
  s: Record<string, number>;
  b: Record<string, number[]>;
  f: Record<string, number>;
}
interface Instrumenter {
  instrumentSync(code: string, filename: string): string;
}

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');
const coverageVariable = '__vmzonesFuzzCoverage';

const { values, positionals } = parseArgs({
  options: { seconds: { type: 'string', default: '60' }, seed: { type: 'string', default: '1' } },
  allowPositionals: true,
});
const seconds = Number(values.seconds);
const names = positionals.length > 0 ? positionals : ['gob', 'yamux', 'metrics'];

// ---- instrumented bundle of targets.ts (only the sources under test get counters) ----
const require = createRequire(import.meta.url);
const { createInstrumenter } = require('istanbul-lib-instrument') as {
  createInstrumenter(options: object): Instrumenter;
};
const instrumenter = createInstrumenter({ esModules: true, coverageVariable, compact: true });
const instrumented = /\/plugin\/(goplugin\/gob\/.*|goplugin\/yamux|vm\/metrics-text)\.ts$/;
const work = mkdtempSync(join(tmpdir(), 'vmzones-fuzz-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
await build({
  entryPoints: [join(here, 'targets.ts')],
  outfile: join(work, 'targets.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  logLevel: 'warning',
  plugins: [
    {
      name: 'istanbul',
      setup(b) {
        b.onLoad({ filter: instrumented }, async (args) => {
          const ts = readFileSync(args.path, 'utf8');
          const js = await transform(ts, { loader: 'ts', format: 'esm', target: 'node24' });
          return {
            contents: instrumenter.instrumentSync(js.code, relative(repoRoot, args.path)),
            loader: 'js',
          };
        });
      },
    },
  ],
});
const bundle = (await import(pathToFileURL(join(work, 'targets.mjs')).href)) as {
  targets: Record<string, Target>;
};
const counters = () =>
  (globalThis as Record<string, unknown>)[coverageVariable] as Record<string, FileCounters>;

/** Counts (statement, function, or one branch's arms) that ran since the last harvest: reset, new ones added. */
function harvestCounts(counts: Record<string, number> | number[], prefix: string, seen: Set<string>): number {
  let fresh = 0;
  for (const id in counts) {
    const k = id as keyof typeof counts;
    if (counts[k] === 0) continue;
    (counts as Record<string, number>)[id] = 0;
    const key = `${prefix}${id}`;
    if (!seen.has(key)) {
      seen.add(key);
      fresh++;
    }
  }
  return fresh;
}

/** New coverage features since the last call (counters reset), added to `seen`. */
function harvest(seen: Set<string>, files: (file: string) => boolean): number {
  let fresh = 0;
  for (const [file, c] of Object.entries(counters() ?? {})) {
    if (!files(file)) continue;
    fresh += harvestCounts(c.s, `${file}:s`, seen) + harvestCounts(c.f, `${file}:f`, seen);
    for (const id in c.b) fresh += harvestCounts(c.b[id]!, `${file}:b${id}.`, seen);
  }
  return fresh;
}

function totals(files: (file: string) => boolean): { s: number; b: number; f: number } {
  const t = { s: 0, b: 0, f: 0 };
  for (const [file, c] of Object.entries(counters() ?? {})) {
    if (!files(file)) continue;
    t.s += Object.keys(c.s).length;
    t.f += Object.keys(c.f).length;
    for (const arms of Object.values(c.b)) t.b += arms.length;
  }
  return t;
}

// ---- seeds ----
function frame(type: number, flags: number, id: number, payload: Uint8Array | number): Uint8Array {
  const length = typeof payload === 'number' ? payload : payload.length;
  const header = encodeFrameHeader(type, flags, id, length);
  return typeof payload === 'number' ? header : Buffer.concat([header, payload]);
}

function gobSeeds(): Uint8Array[] {
  const dir = gobCorpusDir();
  return readdirSync(dir)
    .filter((f) => f.endsWith('.gob'))
    .map((f) => new Uint8Array(readFileSync(join(dir, f))))
    .filter((b) => b.length <= 64 * 1024);
}

function yamuxSeeds(gob: readonly Uint8Array[]): Uint8Array[] {
  const small = gob.filter((g) => g.length < 4096).slice(0, 8);
  const seeds = [
    Buffer.concat([
      frame(FrameType.Data, Flag.SYN, 1, 0),
      frame(FrameType.Data, 0, 1, small[0] ?? new Uint8Array(3)),
    ]),
    Buffer.concat([
      frame(FrameType.WindowUpdate, Flag.SYN, 1, 0),
      frame(FrameType.Data, Flag.FIN, 1, new Uint8Array([1, 2, 3])),
    ]),
    frame(FrameType.Ping, Flag.SYN, 0, 7),
    frame(FrameType.GoAway, 0, 0, 0),
    Buffer.concat([frame(FrameType.Data, Flag.SYN, 3, 0), frame(FrameType.Data, Flag.RST, 3, 0)]),
    Buffer.concat([
      frame(FrameType.WindowUpdate, Flag.SYN, 5, 0),
      frame(FrameType.WindowUpdate, 0, 5, 65536),
    ]),
  ];
  for (const [i, g] of small.entries()) {
    seeds.push(
      Buffer.concat([
        frame(FrameType.Data, Flag.SYN, 2 * i + 1, g),
        frame(FrameType.Data, Flag.FIN, 2 * i + 1, 0),
      ]),
    );
  }
  return seeds.map((s) => new Uint8Array(s));
}

async function metricsSeeds(): Promise<Uint8Array[]> {
  const seeds: Uint8Array[] = [];
  for (const [i, metadata] of [true, false].entries()) {
    const page = streamGeneratedPage({ targetBytes: 3000 + i * 3000, remoteWriteUrls: 2, metadata });
    const parts: Uint8Array[] = [];
    for await (const c of page.chunks()) parts.push(c);
    seeds.push(new Uint8Array(Buffer.concat(parts)));
  }
  const text = [
    'up 1\n',
    'vmagent_remotewrite_pending_data_bytes{path="/q/1_ABC",url="1:secret-url"} 0 1700000000000\n',
    '# HELP a_bucket x\n# TYPE a_bucket histogram\na_bucket{le="+Inf"} 3\na_bucket{le="0.5",x="a\\"b\\\\c\\n"} NaN\n',
    'vm_persistentqueue_bytes_pending{path="q"} 1.5e3\r\nup{} -Inf',
  ];
  for (const t of text) seeds.push(new Uint8Array(Buffer.from(t)));
  return seeds;
}

// ---- mutation ----
let state = Number(values.seed) >>> 0 || 1;
function rand(n: number): number {
  state ^= state << 13;
  state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5;
  state >>>= 0;
  return state % n;
}
const interesting = [
  0, 1, 0x7f, 0x80, 0xff, 0xfe, 0xf8, 0x40, 0x41, 0x0a, 0x20, 0x22, 0x5c, 0x7b, 0x7d, 0x3d,
];
const tokens = [
  '{',
  '}',
  '=',
  '"',
  '\\',
  '\n',
  ' ',
  ',',
  '#',
  'NaN',
  '+Inf',
  '-Inf',
  'e+',
  '\r\n',
  'le=',
  'up',
].map((t) => Buffer.from(t));

function mutate(input: Uint8Array, corpus: readonly Uint8Array[], text: boolean): Uint8Array {
  let b = Buffer.from(input);
  for (let k = 1 + rand(4); k > 0; k--) {
    const at = b.length === 0 ? 0 : rand(b.length);
    switch (rand(text ? 8 : 7)) {
      case 0:
        if (b.length > 0) b[at] = b[at]! ^ (1 << rand(8));
        break;
      case 1:
        if (b.length > 0) b[at] = interesting[rand(interesting.length)]!;
        break;
      case 2:
        b = Buffer.concat([b.subarray(0, at), Buffer.from([rand(256)]), b.subarray(at)]);
        break;
      case 3:
        b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + rand(16)))]);
        break;
      case 4: {
        const from = rand(Math.max(1, b.length));
        b = Buffer.concat([b.subarray(0, at), b.subarray(from, from + 1 + rand(32)), b.subarray(at)]);
        break;
      }
      case 5: {
        const other = corpus[rand(corpus.length)]!;
        const from = rand(Math.max(1, other.length));
        b = Buffer.concat([b.subarray(0, at), other.subarray(from, from + 1 + rand(64)), b.subarray(at)]);
        break;
      }
      case 6:
        if (b.length > 0) b[at] = (b[at]! + 1 + rand(8) - 4) & 0xff;
        break;
      default:
        b = Buffer.concat([b.subarray(0, at), tokens[rand(tokens.length)]!, b.subarray(at)]);
    }
  }
  return new Uint8Array(b.subarray(0, 128 * 1024));
}

// ---- loop ----
const fileOf: Record<string, (file: string) => boolean> = {
  // The decoding side only: the encoder and its byte writer are loaded but never run by this target.
  gob: (f) => f.startsWith('plugin/goplugin/gob/') && !/\/(encoder|byte-writer)\.ts$/.test(f),
  yamux: (f) => f === 'plugin/goplugin/yamux.ts',
  metrics: (f) => f === 'plugin/vm/metrics-text.ts',
};
const gobInputs = gobSeeds();
const seedsOf: Record<string, () => Promise<Uint8Array[]>> = {
  gob: async () => gobInputs,
  yamux: async () => yamuxSeeds(gobInputs),
  metrics: metricsSeeds,
};
let findings = 0;
for (const name of names) {
  const target = bundle.targets[name];
  if (target === undefined) throw new Error(`unknown target ${name} (gob, yamux, metrics)`);
  const files = fileOf[name]!;
  const seen = new Set<string>();
  harvest(new Set(), () => true); // drop counts from loading and other targets
  const corpus: Uint8Array[] = [];
  const found = new Set<string>();
  let execs = 0;
  const run = (input: Uint8Array): boolean => {
    execs++;
    try {
      target(input);
    } catch (err) {
      const hash = createHash('sha256').update(input).digest('hex').slice(0, 16);
      const message = err instanceof Error ? err.message : String(err);
      const key = message.split('\n')[0]!.slice(0, 120);
      if (!found.has(key)) {
        found.add(key);
        findings++;
        const dir = join(here, 'findings');
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, `${name}-${hash}`), input);
        console.log(`fuzz ${name}: FINDING test/fuzz/findings/${name}-${hash}: ${message.slice(0, 400)}`);
      }
    }
    return harvest(seen, files) > 0;
  };
  for (const seed of await seedsOf[name]!()) if (run(seed) || corpus.length === 0) corpus.push(seed);
  const seedCount = corpus.length;
  const afterSeeds = seen.size;
  const began = performance.now();
  while (performance.now() - began < seconds * 1000) {
    const parent = corpus[rand(corpus.length)]!;
    const child = mutate(parent, corpus, name === 'metrics');
    if (run(child)) corpus.push(child);
  }
  const t = totals(files);
  const covered = (kind: 's' | 'b' | 'f') => [...seen].filter((k) => k.includes(`:${kind}`)).length;
  const elapsed = (performance.now() - began) / 1000;
  console.log(
    `fuzz ${name}: ${execs} executions in ${elapsed.toFixed(0)} s (${(execs / elapsed).toFixed(0)}/s), corpus ${seedCount} seeds → ${corpus.length}, ` +
      `coverage after seeds ${afterSeeds} → ${seen.size} features; statements ${covered('s')}/${t.s}, branches ${covered('b')}/${t.b}, ` +
      `functions ${covered('f')}/${t.f}; findings ${found.size}`,
  );
}
console.log(`fuzz: ${findings} finding(s)`);
process.exit(findings > 0 ? 1 : 0);
