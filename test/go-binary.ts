// The Go programs of the tests (test/vectors/gob, test/go-peer) built once per source and Go version and kept in
// ${VMZONES_CACHE:-~/.cache/vmzones}/go-binaries/ (beside the sandbox's binaries, so a fresh clone finds them), instead of a `go build` in every test process: even with Go's build cache warm, each build
// re-checks and re-links (1–4 s a program), and five unit files use the vector program. The key covers every file of
// the program's folder (go.mod and go.sum pin its modules), the build flags and `go env GOVERSION GOOS GOARCH`, so a
// changed source or toolchain builds anew. Go is a hard requirement: without it this throws, and the tests fail.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const binariesDir = join(process.env.VMZONES_CACHE ?? join(homedir(), '.cache', 'vmzones'), 'go-binaries');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

function goEnv(): string {
  try {
    return execFileSync('go', ['env', 'GOVERSION', 'GOOS', 'GOARCH'], { encoding: 'utf8' }).trim();
  } catch (err) {
    const e = err as { code?: string; stderr?: Buffer | string; message: string };
    if (e.code === 'ENOENT') throw new Error('Go is required for this test (go not found on PATH)');
    throw new Error(`"go env" failed: ${e.stderr?.toString() ?? e.message}`);
  }
}

/** The binary of the Go program in `sourceDir` (relative to the repository), built with `flags` if not yet. */
export function goBinary(sourceDir: string, flags: readonly string[] = []): string {
  const source = join(repo, sourceDir);
  const hash = createHash('sha256');
  hash.update(`${goEnv()}\n${flags.join(' ')}\n`);
  for (const file of filesUnder(source).sort()) {
    hash.update(`${relative(source, file)}\n`);
    hash.update(readFileSync(file));
  }
  const binary = join(binariesDir, `${sourceDir.replaceAll('/', '-')}-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(binary)) return binary;
  mkdirSync(binariesDir, { recursive: true });
  // Built beside and renamed into place, so that a test process running at the same time never runs a half binary.
  const partial = `${binary}.${process.pid}.partial`;
  try {
    execFileSync('go', ['build', ...flags, '-o', partial, '.'], {
      cwd: source,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    rmSync(partial, { force: true });
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(`building ${sourceDir} failed: ${e.stderr?.toString() ?? e.message}`);
  }
  renameSync(partial, binary);
  return binary;
}
