// `npm run package`: dist/runtime/, a folder that runs vmzones in a root with nothing else in it (the
// distroless/static Argo Rollouts image): the Node 24 binary of node_modules' `node` package, the shared
// libraries `ldd` names for it with their dynamic loader, the bundle, the init container's copy script and
// the license notices. The controller copies only the loader (the `location`, ~200 KB) into plugin-bin/ per
// plugin and runs the node binary through it from the runtime folder: docs/deploy.md, "The runtime".

import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
export const runtimeDir = join(repoRoot, 'dist', 'runtime');
/** The pinned Node 24 (the `node` devDependency `npm ci` installs), which every npm script runs on. */
export const pinnedNode = join(repoRoot, 'node_modules', 'node', 'bin', 'node');
/** Where the runtime lives in the controller's container (the init container fills this volume). */
export const installedAt = '/opt/vmzones';
export const loaderName = 'ld-linux-x86-64.so.2';

/**
 * The Node flags of the plugin processes, measured under the RPC benchmark (docs/testing.md, "Plugin process"):
 * a 1 MiB young generation keeps the heap near its idle size; no TurboFan (Maglev is the top tier) and no
 * compiler threads spare the binary's TurboFan pages and the compile zones, ~10 MiB of peak RSS together.
 * `--liftoff-only`: WebAssembly stays at V8's baseline compiler; undici's HTTP/1 parser (llhttp) is WebAssembly, and
 * its tier-up to TurboFan cost ~15 MiB of peak RSS on the side-by-side walk for no speed we could measure
 * (docs/deploy.md, "Memory").
 */
export const pluginNodeFlags = [
  '--max-semi-space-size=1',
  '--max-opt=2',
  '--no-concurrent-recompilation',
  '--liftoff-only',
];

/** The argo-rollouts-config entry for a runtime folder at `root` (manifests use installedAt). */
export function pluginEntry(root: string): { location: string; args: string[] } {
  return {
    location: `file://${root}/lib/${loaderName}`,
    args: ['--library-path', `${root}/lib`, `${root}/bin/node`, ...pluginNodeFlags, `${root}/vmzones.mjs`],
  };
}

class PackageError extends Error {}

function step<T>(what: string, run: () => T): T {
  const started = Date.now();
  const result = run();
  process.stderr.write(`[package] ${what} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return result;
}

/** The shared objects a binary loads, resolved by the host's loader: soname -> file, plus the loader. */
function sharedObjects(binary: string): { libs: Map<string, string>; loader: string } {
  const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  const libs = new Map<string, string>();
  let loader: string | undefined;
  for (const line of out.split('\n')) {
    const linked = /^\s*(\S+) => (\/\S+) \(0x/.exec(line);
    const direct = /^\s*(\/\S+) \(0x/.exec(line);
    if (linked?.[1] && linked[2]) libs.set(linked[1], linked[2]);
    else if (direct?.[1]) loader = direct[1];
    else if (/not found/.test(line)) throw new PackageError(`${binary}: ldd: ${line.trim()}`);
  }
  if (!loader || basename(loader) !== loaderName) {
    throw new PackageError(
      `${binary}: ldd names no ${loaderName} (an x86-64 glibc binary is expected):\n${out}`,
    );
  }
  return { libs, loader };
}

/** The Debian package that ships a file, for its copyright notice (dpkg knows one of the merged-/usr paths). */
function debianPackageOf(file: string): string {
  const real = realpathSync(file);
  for (const candidate of new Set([file, real, real.replace(/^\/usr\//, '/')])) {
    const result = spawnSync('dpkg', ['-S', candidate], { encoding: 'utf8' });
    const name = result.status === 0 ? result.stdout.split(':')[0] : undefined;
    if (name) return name;
  }
  throw new PackageError(`no Debian package owns ${file}: its license notice cannot be found`);
}

interface LockPackage {
  dev?: boolean;
  license?: string;
  version?: string;
}

/** License files of the production dependency closure (what esbuild can put in the bundle). */
function bundledLicenses(): { name: string; version: string; license: string; file: string }[] {
  const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockPackage>;
  };
  const found: { name: string; version: string; license: string; file: string }[] = [];
  for (const [path, pkg] of Object.entries(lock.packages)) {
    if (path === '' || pkg.dev) continue;
    const dir = join(repoRoot, path);
    const file = readdirSync(dir).find((f) => /^(un)?(licen[cs]e|copying)(\.|$)/i.test(f));
    if (!file) throw new PackageError(`${path} has no LICENSE file`);
    const name = path.replace(/^.*node_modules\//, '');
    found.push({ name, version: pkg.version ?? '', license: pkg.license ?? '', file: join(dir, file) });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

export interface RuntimeManifest {
  version: string;
  node: string;
  loader: string;
  files: { path: string; bytes: number; sha256: string }[];
  bytes: number;
}

export function packageRuntime(): RuntimeManifest {
  const bundle = join(repoRoot, 'dist', 'vmzones.mjs');
  if (!existsSync(bundle)) throw new PackageError(`${bundle} is missing: run "npm run build" first`);
  const node = realpathSync(pinnedNode);
  // node_modules/node/bin/node is a hard link into its platform package, which holds Node's LICENSE.
  const nodePackageDir = join(repoRoot, 'node_modules', 'node', 'node_modules', `node-linux-${process.arch}`);
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    version: string;
    license: string;
  };
  const nodeVersion = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();

  rmSync(runtimeDir, { recursive: true, force: true });
  for (const sub of ['bin', 'lib', 'licenses']) mkdirSync(join(runtimeDir, sub), { recursive: true });

  const { libs, loader } = step('resolved shared libraries (ldd)', () => {
    const found = sharedObjects(node);
    // A library's own dependencies must be in the folder too; ldd of each one proves the closure.
    for (const path of [...found.libs.values()]) {
      for (const [soname, dep] of sharedObjects(path).libs)
        if (!found.libs.has(soname)) found.libs.set(soname, dep);
    }
    return found;
  });
  step('copied node, libraries, bundle', () => {
    copyFileSync(node, join(runtimeDir, 'bin', 'node'));
    copyFileSync(loader, join(runtimeDir, 'lib', loaderName));
    for (const [soname, path] of libs) copyFileSync(path, join(runtimeDir, 'lib', soname));
    copyFileSync(bundle, join(runtimeDir, 'vmzones.mjs'));
    copyFileSync(join(repoRoot, 'scripts', 'runtime-install.mjs'), join(runtimeDir, 'install.mjs'));
    chmodSync(join(runtimeDir, 'bin', 'node'), 0o755);
    chmodSync(join(runtimeDir, 'lib', loaderName), 0o755);
  });

  step('collected license notices', () => {
    const licenses = join(runtimeDir, 'licenses');
    copyFileSync(join(nodePackageDir, 'LICENSE'), join(licenses, `node-${nodeVersion}.LICENSE`));
    const debian = new Set([loader, ...libs.values()].map(debianPackageOf));
    for (const name of [...debian].sort()) {
      copyFileSync(
        realpathSync(`/usr/share/doc/${name}/copyright`),
        join(licenses, `debian-${name}.copyright`),
      );
    }
    const bundled = bundledLicenses();
    const notices = bundled.map(
      (b) => `## ${b.name} ${b.version} (${b.license})\n\n${readFileSync(b.file, 'utf8').trim()}\n`,
    );
    writeFileSync(
      join(licenses, 'bundled-npm-packages.md'),
      `# npm packages that dist/vmzones.mjs may contain (the production dependency closure)\n\n${notices.join('\n')}`,
    );
    writeFileSync(
      join(licenses, 'README.md'),
      [
        `vmzones ${pkg.version} runtime folder; vmzones is licensed ${pkg.license} (package.json).`,
        `bin/node: Node.js ${nodeVersion} (node-${nodeVersion}.LICENSE, which includes the notices of the libraries built into it).`,
        `lib/: from the Debian packages ${[...debian].sort().join(', ')} (debian-*.copyright; glibc is LGPL-2.1+, its source is Debian's package of the same version).`,
        `vmzones.mjs: vmzones and the npm packages in bundled-npm-packages.md.`,
        '',
      ].join('\n'),
    );
  });

  const files = filesUnder(runtimeDir).map((file) => ({
    path: relative(runtimeDir, file),
    bytes: statSync(file).size,
    sha256: sha256(file),
  }));
  const manifest: RuntimeManifest = {
    version: pkg.version,
    node: nodeVersion,
    loader: `lib/${loaderName}`,
    files,
    bytes: files.reduce((sum, f) => sum + f.bytes, 0),
  };
  writeFileSync(join(runtimeDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** Starts the packaged node through its loader with an empty environment (no host library path). */
function smokeTest(): number {
  const entry = pluginEntry(runtimeDir);
  const started = process.hrtime.bigint();
  const result = spawnSync(
    fileURLToPath(entry.location),
    [...entry.args.slice(0, 3), '-e', 'process.stdout.write(process.version)'],
    { env: {}, encoding: 'utf8' },
  );
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0 || !result.stdout.startsWith('v24.')) {
    throw new PackageError(`the packaged node does not start: ${result.stderr || result.error}`);
  }
  return ms;
}

if (import.meta.main) {
  try {
    const manifest = packageRuntime();
    const ms = smokeTest();
    const loaderBytes = manifest.files.find((f) => f.path === manifest.loader)?.bytes ?? 0;
    const nodeBytes = manifest.files.find((f) => f.path === 'bin/node')?.bytes ?? 0;
    process.stdout.write(
      `${relative(repoRoot, runtimeDir)}: vmzones ${manifest.version}, node ${manifest.node}, ${manifest.files.length} files, ${manifest.bytes} bytes\n` +
        `copied per plugin into plugin-bin/: ${loaderBytes} bytes (the loader; node itself would be ${nodeBytes})\n` +
        `node --version through the loader: ${ms.toFixed(0)} ms\n`,
    );
  } catch (error) {
    if (!(error instanceof PackageError)) throw error;
    process.stderr.write(`package: ${error.message}\n`);
    process.exit(1);
  }
}
