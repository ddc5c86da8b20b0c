// `npm run image`: the vmzones init-container image from dist/runtime (npm run package), written without a
// container engine by test/env/image/cmd/ociimage (go-containerregistry): an OCI layout with a one-platform
// image index (linux/amd64; arm64 is the next entry, docs/deploy.md), a docker-loadable archive, both
// validated. The same dist/runtime and SOURCE_DATE_EPOCH give the same digest.

import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ensureBuilt } from '../test/env/build.ts';
import { versions } from '../test/env/versions.ts';
import { loaderName, repoRoot, runtimeDir } from './package.ts';

export const imageName = 'vmzones-runtime';
/** The runtime's folder inside the image; the init container copies it to its argument. */
export const imagePrefix = '/vmzones';

export interface ImageBuild {
  digest: string;
  tag: string;
  layout: string;
  dockerArchive: string;
  layoutBytes: number;
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

function bytesUnder(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => {
    const path = join(dir, e.name);
    return sum + (e.isDirectory() ? bytesUnder(path) : statSync(path).size);
  }, 0);
}

function timed<T>(what: string, run: () => T): T {
  const started = Date.now();
  const result = run();
  process.stderr.write(`[image] ${what} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return result;
}

/** The entrypoint: the runtime's own loader runs its node on the copy script (there is no shell). */
export function entrypoint(): string[] {
  return [
    `${imagePrefix}/lib/${loaderName}`,
    '--library-path',
    `${imagePrefix}/lib`,
    `${imagePrefix}/bin/node`,
    `${imagePrefix}/install.mjs`,
  ];
}

/** Builds the image from dist/runtime into outDir (default dist/image). */
export function buildImage(outDir = join(repoRoot, 'dist', 'image')): ImageBuild {
  const ociimage = timed('ociimage ready (cached build)', () => ensureBuilt('ociimage'));
  const version = packageVersion();
  const tag = `${imageName}:${version}`;
  // Reproducible builds take their time from SOURCE_DATE_EPOCH; without it, the epoch.
  const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? '0');
  if (!Number.isInteger(epoch) || epoch < 0)
    throw new Error(`SOURCE_DATE_EPOCH is not a Unix time: ${epoch}`);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const spec = {
    platforms: [{ os: 'linux', architecture: 'amd64', root: runtimeDir }],
    prefix: imagePrefix.slice(1),
    entrypoint: entrypoint(),
    cmd: ['/opt/vmzones'],
    user: '999',
    labels: {
      'org.opencontainers.image.title': 'vmzones runtime (init container)',
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.licenses': 'Apache-2.0',
      'org.opencontainers.image.description': `Copies the vmzones runtime into a folder for the Argo Rollouts ${versions.argoRollouts} controller (docs/deploy.md)`,
    },
    created: new Date(epoch * 1000).toISOString().replace(/\.000Z$/, 'Z'),
    refName: version,
    layout: join(outDir, 'oci'),
    dockerArchive: join(outDir, `${imageName}-${version}-linux-amd64.docker.tar`),
    dockerTag: tag,
  };
  const specFile = join(outDir, 'spec.json');
  writeFileSync(specFile, `${JSON.stringify(spec, null, 2)}\n`);
  const digest = timed('image written', () =>
    execFileSync(ociimage, ['build', '--spec', specFile], { encoding: 'utf8' }).trim(),
  );
  return {
    digest,
    tag,
    layout: spec.layout,
    dockerArchive: spec.dockerArchive,
    layoutBytes: bytesUnder(spec.layout),
  };
}

/** ociimage re-reads the layout (every digest, size, diff ID); crane validates the docker archive. */
export function validateImage(image: ImageBuild): string {
  const ociimage = ensureBuilt('ociimage');
  const crane = timed('crane ready (cached build)', () => ensureBuilt('crane'));
  return timed('image validated', () =>
    [
      execFileSync(ociimage, ['validate', '--layout', image.layout], { encoding: 'utf8' }).trim(),
      execFileSync(crane, ['validate', '--tarball', image.dockerArchive], { encoding: 'utf8' }).trim(),
    ].join('\n'),
  );
}

if (import.meta.main) {
  const image = buildImage();
  const validation = validateImage(image);
  process.stdout.write(
    `${image.tag} (linux/amd64) index ${image.digest}\n` +
      `OCI layout ${relative(repoRoot, image.layout)}: ${image.layoutBytes} bytes; docker archive ${relative(repoRoot, image.dockerArchive)}: ${statSync(image.dockerArchive).size} bytes\n` +
      `${validation}\n`,
  );
}
