// The package as users install it (docs/cli.md, "Installing"): `npm pack` of a copy of this checkout (its
// `prepack` builds dist/ there, so the repository's own dist/, which running tests use, is not rewritten), then
// `npm install -g --prefix <empty folder> <tarball>` (dependencies from npm's cache, the registry only for what
// the cache lacks), then the installed `vmzones` and `kubectl-vmzones` run through their shebang, with `node` on
// PATH the pinned Node 24 and then the machine's Node 20: `version`, `lint` and `render` of the GitOps example.
// Run: `node scripts/pack-check.ts` (test/e2e/install/pack.test.ts runs it in npm test). Prints what it checked;
// exits 1 naming the first thing that is wrong.

import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const pinnedNode = join(repoRoot, 'node_modules', 'node', 'bin', 'node');
/** The oldest Node the offline commands support (docs/cli.md, "Node versions"); this machine's system Node. */
export const node20 = process.env.VMZONES_NODE20 ?? '/usr/bin/node';
const example = join(repoRoot, 'examples', 'gitops', 'deploy', 'rollout.yaml');

export class PackCheckError extends Error {
  override name = 'PackCheckError';
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Run {
  const r = spawnSync(command, args, { encoding: 'utf8', timeout: 180_000, ...options });
  return {
    status: r.status,
    stdout: r.stdout ?? '',
    stderr: `${r.stderr ?? ''}${r.error ? String(r.error) : ''}`,
  };
}

function must(what: string, r: Run): Run {
  if (r.status !== 0)
    throw new PackCheckError(`${what} exited ${r.status}:\n${(r.stderr || r.stdout).slice(-2000)}`);
  return r;
}

interface PackageJson {
  version: string;
  bin: Record<string, string>;
  files?: string[];
  dependencies: Record<string, string>;
}

/** What `npm pack` needs to run the prepack build: the sources the bundles are made of, and node_modules. */
function copyForPack(into: string): void {
  for (const path of [
    'package.json',
    'package-lock.json',
    'README.md',
    'tsconfig.json',
    'plugin',
    'examples',
  ])
    cpSync(join(repoRoot, path), join(into, path), { recursive: true });
  cpSync(join(repoRoot, 'scripts', 'build.ts'), join(into, 'scripts', 'build.ts'));
  cpSync(join(repoRoot, 'scripts', 'bundle'), join(into, 'scripts', 'bundle'), { recursive: true });
  cpSync(join(repoRoot, 'test', 'fixtures'), join(into, 'test', 'fixtures'), { recursive: true });
  symlinkSync(join(repoRoot, 'node_modules'), join(into, 'node_modules'));
}

/** Packages the lockfile marks development-only (a devDependency or needed by one alone, e.g. esbuild, typescript). */
function developmentOnly(): Set<string> {
  const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  return new Set(
    Object.entries(lock.packages)
      .filter(([path, entry]) => entry.dev === true && path.startsWith('node_modules/'))
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)),
  );
}

/** The installed package's dependency folders (one level, scoped names joined). */
function installedDependencies(packageDir: string): string[] {
  const modules = join(packageDir, 'node_modules');
  if (!existsSync(modules)) return [];
  return readdirSync(modules).flatMap((name) =>
    name.startsWith('@') ? readdirSync(join(modules, name)).map((sub) => `${name}/${sub}`) : [name],
  );
}

export function packCheck(log: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): void {
  const started = Date.now();
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as PackageJson;
  if (!existsSync(node20)) throw new PackCheckError(`no Node 20 at ${node20} (set VMZONES_NODE20)`);
  const work = mkdtempSync(join(tmpdir(), 'vmzones-pack-'));
  try {
    const source = join(work, 'source');
    copyForPack(source);
    const packed = must(
      'npm pack',
      run('npm', ['pack', '--json', '--pack-destination', work], { cwd: source }),
    );
    const [tarball] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as {
      filename: string;
      files: { path: string }[];
    }[];
    if (tarball === undefined) throw new PackCheckError('npm pack wrote no tarball');
    const files = tarball.files.map((f) => f.path).sort();
    const expected = ['README.md', 'package.json', ...Object.values(pkg.bin)].sort();
    if (JSON.stringify(files) !== JSON.stringify(expected))
      throw new PackCheckError(`the tarball holds ${files.join(', ')}; expected ${expected.join(', ')}`);
    log(`packed ${tarball.filename}: ${files.join(', ')}`);

    const prefix = join(work, 'prefix');
    must(
      'npm install -g',
      run('npm', [
        'install',
        '-g',
        '--prefix',
        prefix,
        join(work, tarball.filename),
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
      ]),
    );
    const installed = join(prefix, 'lib', 'node_modules', 'vmzones');
    const deps = installedDependencies(installed);
    const dev = deps.filter((d) => developmentOnly().has(d));
    if (dev.length > 0)
      throw new PackCheckError(`the install brought development dependencies: ${dev.join(', ')}`);
    const missing = Object.keys(pkg.dependencies).filter((d) => !deps.includes(d));
    if (missing.length > 0)
      throw new PackCheckError(`the install lacks runtime dependencies: ${missing.join(', ')}`);
    log(`installed into ${prefix} with ${deps.length} runtime dependencies, no development ones`);

    for (const node of [pinnedNode, node20]) {
      const nodeVersion = must(`${node} --version`, run(node, ['--version'])).stdout.trim();
      // The bins run through their `#!/usr/bin/env node` line: `node` is whichever comes first on PATH.
      const env = { ...process.env, PATH: `${dirname(node)}:${join(prefix, 'bin')}:/usr/bin:/bin` };
      const bin = (name: string) => join(prefix, 'bin', name);
      for (const name of Object.keys(pkg.bin)) {
        const version = must(`${name} version (${nodeVersion})`, run(bin(name), ['version'], { env })).stdout;
        if (!version.includes(`vmzones ${pkg.version}`) || !version.includes(nodeVersion))
          throw new PackCheckError(`${name} version under ${nodeVersion} printed: ${version}`);
      }
      must(`vmzones lint (${nodeVersion})`, run(bin('vmzones'), ['lint', '--spec', example], { env }));
      const rendered = must(
        `vmzones render (${nodeVersion})`,
        run(bin('vmzones'), ['render', '--spec', example], { env }),
      ).stdout;
      if (!rendered.includes('vmzones/step'))
        throw new PackCheckError(
          `vmzones render under ${nodeVersion} wrote no vmzones/step steps:\n${rendered}`,
        );
      log(`${nodeVersion}: vmzones and kubectl-vmzones version, vmzones lint and render of ${example}: ok`);
    }
    log(`pack check passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    packCheck();
  } catch (error) {
    process.stderr.write(`pack check failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
