// What the install tests build: the runtime (npm run package), the init-container image (npm run image) unpacked
// into a folder, and the kustomize overlay rendered over the upstream install.yaml of the argo-rollouts module.

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { buildImage, type ImageBuild } from '../../../scripts/image.ts';
import { packageRuntime, type RuntimeManifest, repoRoot } from '../../../scripts/package.ts';
import { ensureBuilt, moduleDir } from '../../env/build.ts';
import { versions } from '../../env/versions.ts';

export const upstreamInstallUrl = `https://github.com/argoproj/argo-rollouts/releases/download/${versions.argoRollouts}/install.yaml`;

const imageConfigSchema = z.object({
  Entrypoint: z.array(z.string()),
  Cmd: z.array(z.string()),
  User: z.string(),
  Labels: z.record(z.string(), z.string()).optional(),
});
export type ImageConfig = z.infer<typeof imageConfigSchema>;

export interface Payload {
  runtime: RuntimeManifest;
  image: ImageBuild;
  /** The unpacked filesystem of the linux/amd64 image. */
  imageRoot: string;
  config: ImageConfig;
}

function timed<T>(what: string, run: () => T): T {
  const started = Date.now();
  const result = run();
  process.stderr.write(`[install test] ${what} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return result;
}

/** npm run package, then the image into dir/image, unpacked into dir/image-root. */
export function buildPayload(dir: string): Payload {
  const runtime = timed('npm run package (dist/runtime)', () => packageRuntime());
  const image = timed('image build', () => buildImage(join(dir, 'image')));
  const imageRoot = join(dir, 'image-root');
  mkdirSync(imageRoot, { recursive: true });
  const out = timed('image unpack', () =>
    execFileSync(
      ensureBuilt('ociimage'),
      ['unpack', '--layout', image.layout, '--platform', 'linux/amd64', '--out', imageRoot],
      { encoding: 'utf8' },
    ),
  );
  return { runtime, image, imageRoot, config: imageConfigSchema.parse(JSON.parse(out)) };
}

/**
 * manifests/kustomize built by kustomize (returns the rendered file): the default (namespace-scoped RBAC) or a named
 * overlay such as `cluster-wide`. The upstream install.yaml that controller/kustomization.yaml names by URL is read
 * from the argo-rollouts module (the same file as the release asset but for the image tag, which the overlay sets).
 */
export function renderOverlay(dir: string, variant?: 'cluster-wide'): string {
  const overlay = join(dir, 'kustomize');
  cpSync(join(repoRoot, 'manifests', 'kustomize'), overlay, { recursive: true });
  const kustomization = join(overlay, 'controller', 'kustomization.yaml');
  const text = readFileSync(kustomization, 'utf8');
  const uses = text.split(upstreamInstallUrl).length - 1;
  if (uses !== 1) throw new Error(`${kustomization} names ${upstreamInstallUrl} ${uses} times, want once`);
  writeFileSync(kustomization, text.replace(upstreamInstallUrl, 'upstream-install.yaml'));
  const module = moduleDir('github.com/argoproj/argo-rollouts', versions.argoRollouts, 'kube');
  cpSync(join(module, 'manifests', 'install.yaml'), join(overlay, 'controller', 'upstream-install.yaml'));
  const kustomize = timed('kustomize ready (cached build)', () => ensureBuilt('kustomize'));
  const rendered = join(dir, `rendered${variant === undefined ? '' : `-${variant}`}.yaml`);
  timed('kustomize build', () =>
    execFileSync(
      kustomize,
      ['build', variant === undefined ? overlay : join(overlay, variant), '-o', rendered],
      {
        encoding: 'utf8',
      },
    ),
  );
  return rendered;
}

/** The controller Deployment's pod spec as read back from the API server (only what the tests use). */
const containerSchema = z.object({
  name: z.string(),
  image: z.string(),
  args: z.array(z.string()).optional(),
  securityContext: z.object({ runAsUser: z.number().optional() }).optional(),
  volumeMounts: z
    .array(z.object({ name: z.string(), mountPath: z.string(), readOnly: z.boolean().optional() }))
    .default([]),
});
export const deploymentSchema = z.object({
  spec: z.object({
    template: z.object({
      spec: z.object({
        serviceAccountName: z.string(),
        initContainers: z.array(containerSchema).default([]),
        containers: z.array(containerSchema),
        volumes: z.array(z.object({ name: z.string(), emptyDir: z.looseObject({}).optional() })),
      }),
    }),
  }),
});
export type PodSpec = z.infer<typeof deploymentSchema>['spec']['template']['spec'];
export type Container = z.infer<typeof containerSchema>;
