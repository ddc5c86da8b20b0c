// Runs the Go vector program (test/vectors/gob, built once per source and Go version: test/go-binary.ts),
// generates the corpus into a temporary directory once per test process, and asks Go to decode bytes produced by
// the TypeScript encoder. Go is a hard requirement: without it these helpers throw, and the tests that use them
// fail.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { goBinary } from '../../go-binary.ts';
import type { Tagged } from './tagged.ts';

let workDir: string | undefined;
let binary: string | undefined;
let corpusDir: string | undefined;

function work(): string {
  if (workDir === undefined) {
    workDir = mkdtempSync(join(tmpdir(), 'gob-vectors-'));
    process.on('exit', () => rmSync(workDir!, { recursive: true, force: true }));
  }
  return workDir;
}

function tool(): string {
  binary ??= goBinary('test/vectors/gob');
  return binary;
}

/** Generates the corpus (once per process) and returns its directory. */
export function corpus(): string {
  if (corpusDir === undefined) {
    const dir = join(work(), 'corpus');
    execFileSync(tool(), ['gen', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    corpusDir = dir;
  }
  return corpusDir;
}

export function readCase(name: string): { stream: Uint8Array; expected: Tagged[] } {
  const dir = corpus();
  return {
    stream: new Uint8Array(readFileSync(join(dir, `${name}.gob`))),
    expected: JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as Tagged[],
  };
}

export interface GoTimeReading {
  readonly hex?: string;
  readonly unix: string;
  readonly nanos: number;
  readonly offset: number;
  readonly utc: boolean;
  readonly rfc3339: string;
  readonly error?: string;
}

export function timeVectors(): GoTimeReading[] {
  return JSON.parse(readFileSync(join(corpus(), 'time-layouts.json'), 'utf8')) as GoTimeReading[];
}

export interface DecodeCheck {
  readonly values: Tagged[];
  readonly eof?: boolean;
  readonly error?: string;
}

/** Decodes `stream` with Go's encoding/gob into the named Go types (see checkTypes in main.go), in order. */
export function goDecode(types: readonly string[], stream: Uint8Array): DecodeCheck {
  const out = execFileSync(tool(), ['decode-check', types.join(',')], { input: stream });
  return JSON.parse(out.toString('utf8')) as DecodeCheck;
}

/** How Go's time.UnmarshalBinary reads each of the given binaries. */
export function goReadTimes(binaries: readonly Uint8Array[]): GoTimeReading[] {
  const input = binaries.map((b) => Buffer.from(b).toString('hex')).join('\n');
  const out = execFileSync(tool(), ['time-check'], { input });
  return JSON.parse(out.toString('utf8')) as GoTimeReading[];
}
