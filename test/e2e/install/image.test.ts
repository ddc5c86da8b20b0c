// npm run package and npm run image from this checkout: the image is reproducible, validates with crane and
// go-containerregistry, its entrypoint copies a runtime that starts in an empty read-only root as uid 999, and
// the Dockerfile, the helm values and the kustomize overlay describe the same image, volume and plugins.

import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { buildImage, entrypoint, validateImage } from '../../../scripts/image.ts';
import { installedAt, pluginEntry, repoRoot } from '../../../scripts/package.ts';
import { ensureBuilt } from '../../env/build.ts';
import { versions } from '../../env/versions.ts';
import { eventually } from '../../sandbox/eventually.ts';
import { freePort } from '../../sandbox/ports.ts';
import { buildPayload, type Payload, renderOverlay } from './payload.ts';
import { rootCommand } from './root.ts';

let dir: string;
let payload: Payload;
const report: string[] = [];

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'vmzones-image-'));
  chmodSync(dir, 0o755); // uid 999 walks into the roots below
  payload = buildPayload(dir);
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
  if (report.length) process.stdout.write(`\n${report.join('\n')}\n`);
});

test('the image is reproducible: a second build of the same runtime has the same digest', () => {
  const again = buildImage(join(dir, 'image-again'));
  assert.match(payload.image.digest, /^sha256:[0-9a-f]{64}$/);
  assert.equal(again.digest, payload.image.digest);
  report.push(`image ${payload.image.tag} index digest ${payload.image.digest} (built twice, same digest)`);
  report.push(
    `image size: OCI layout ${payload.image.layoutBytes} bytes, docker archive ${statSync(payload.image.dockerArchive).size} bytes; runtime ${payload.runtime.bytes} bytes in ${payload.runtime.files.length} files`,
  );
});

test('the OCI layout and the docker archive validate (ociimage re-read, crane validate)', () => {
  const out = validateImage(payload.image);
  assert.match(out, new RegExp(`valid ${payload.image.digest}`));
  assert.match(out, /^PASS: /m);
});

test('crane pushes the layout to a registry (crane registry serve on loopback) and reads back the same digest', async (t) => {
  const crane = ensureBuilt('crane');
  const port = await freePort();
  const registry = spawn(crane, ['registry', 'serve', '--address', `127.0.0.1:${port}`], { stdio: 'ignore' });
  t.after(() => registry.kill());
  const ref = `127.0.0.1:${port}/${payload.image.tag}`;
  await eventually('the registry to answer', async () =>
    (await fetch(`http://127.0.0.1:${port}/v2/`)).ok ? true : undefined,
  );
  execFileSync(crane, ['push', '--insecure', payload.image.layout, ref], { encoding: 'utf8', stdio: 'pipe' });
  assert.equal(
    execFileSync(crane, ['digest', '--insecure', ref], { encoding: 'utf8' }).trim(),
    payload.image.digest,
  );
  const platforms = execFileSync(crane, ['manifest', '--insecure', ref], { encoding: 'utf8' });
  assert.match(platforms, /"architecture":\s*"amd64"/);
  execFileSync(crane, ['validate', '--insecure', '--remote', ref], { encoding: 'utf8' });
});

test('the image holds the runtime under /vmzones, runs it as uid 999, with the loader as entrypoint', () => {
  assert.deepEqual(payload.config.Entrypoint, entrypoint());
  assert.deepEqual(payload.config.Cmd, [installedAt]);
  assert.equal(payload.config.User, '999');
  for (const file of payload.runtime.files) {
    const inImage = readFileSync(join(payload.imageRoot, 'vmzones', file.path));
    assert.equal(inImage.length, file.bytes, file.path);
  }
});

test('the entrypoint copies the runtime in an empty read-only root as uid 999, and the copy starts node', () => {
  const target = join(dir, 'runtime-volume');
  mkdirSync(target);
  chmodSync(target, 0o777); // an emptyDir is world-writable
  const started = Date.now();
  const copy = spawnSync(
    ...spawnArgs({
      root: payload.imageRoot,
      binds: [{ host: target, at: installedAt }],
      uid: 999,
      cwd: '/',
      argv: [...payload.config.Entrypoint, ...payload.config.Cmd],
    }),
  );
  assert.equal(copy.status, 0, `init container failed: ${copy.stderr}`);
  assert.match(copy.stdout, /vmzones runtime copied/);
  const copyMs = Date.now() - started;
  for (const file of payload.runtime.files) {
    assert.equal(statSync(join(target, file.path)).size, file.bytes, file.path);
  }
  // The copied runtime, read-only, in a root holding nothing else (what the controller's container sees).
  const emptyRoot = join(dir, 'empty-root');
  mkdirSync(emptyRoot);
  const entry = pluginEntry(installedAt);
  const node = spawnSync(
    ...spawnArgs({
      root: emptyRoot,
      binds: [{ host: target, at: installedAt, readOnly: true }],
      uid: 999,
      cwd: '/',
      argv: [
        new URL(entry.location).pathname,
        ...entry.args.slice(0, 4),
        '-e',
        'process.stdout.write(process.version)',
      ],
    }),
  );
  assert.equal(node.status, 0, `node in the empty root: ${node.stderr}`);
  assert.match(node.stdout, /^v24\./);
  report.push(`init container copy in the chroot: ${copyMs} ms, ${copy.stdout.trim()}`);
});

function spawnArgs(
  p: Parameters<typeof rootCommand>[0],
): [string, string[], { encoding: 'utf8'; env: NodeJS.ProcessEnv }] {
  const { command, args } = rootCommand(p);
  return [command, args, { encoding: 'utf8', env: { PATH: process.env.PATH } }];
}

const pluginListSchema = z.array(
  z.object({ name: z.string(), location: z.string(), args: z.array(z.string()) }),
);

test('kustomize, helm values and argo-rollouts-config name the same plugins, init container and volume', () => {
  const docs = parseAllDocuments(readFileSync(renderOverlay(dir), 'utf8')).map(
    (d) => d.toJSON() as Record<string, unknown>,
  );
  const byKind = (kind: string) => docs.filter((d) => d.kind === kind);
  const config = z
    .object({ data: z.object({ stepPlugins: z.string(), metricProviderPlugins: z.string() }) })
    .parse(byKind('ConfigMap').find((d) => JSON.stringify(d).includes('argo-rollouts-config')));
  const entry = pluginEntry(installedAt);
  // The default install is namespace-scoped: the plugins list only the namespace its Role is in.
  const roles = byKind('Role').filter((d) => JSON.stringify(d).includes('"name":"vmzones"'));
  assert.equal(roles.length, 1, 'one namespaced vmzones Role');
  const zonesNamespace = z.object({ metadata: z.object({ namespace: z.string() }) }).parse(roles[0])
    .metadata.namespace;
  const watching = { ...entry, args: [...entry.args, `--watch-namespaces=${zonesNamespace}`] };
  assert.deepEqual(pluginListSchema.parse(parse(config.data.stepPlugins)), [
    { name: 'vmzones/step', ...watching },
  ]);
  assert.deepEqual(pluginListSchema.parse(parse(config.data.metricProviderPlugins)), [
    { name: 'vmzones/gates', ...watching },
  ]);
  const podSchema = z.object({
    initContainers: z.array(z.looseObject({ name: z.string(), image: z.string() })),
    containers: z.array(
      z.looseObject({ name: z.string(), image: z.string(), volumeMounts: z.array(z.unknown()) }),
    ),
    volumes: z.array(z.looseObject({ name: z.string() })),
  });
  const deployment = z
    .object({ spec: z.object({ template: z.object({ spec: podSchema }) }) })
    .parse(byKind('Deployment')[0]);
  const pod = deployment.spec.template.spec;
  const controller = pod.containers.find((c) => c.name === 'argo-rollouts');
  assert.equal(controller?.image, `quay.io/argoproj/argo-rollouts:${versions.argoRollouts}`);
  const version = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string })
    .version;
  assert.equal(pod.initContainers[0]?.image, `vmzones-runtime:${version}`);
  assert.equal(
    byKind('ClusterRole').filter((d) => JSON.stringify(d).includes('"vmzones-')).length,
    0,
    'no vmzones ClusterRole in the default (namespace-scoped) install',
  );
  const clusterWide = parseAllDocuments(readFileSync(renderOverlay(dir, 'cluster-wide'), 'utf8')).map(
    (d) => d.toJSON() as Record<string, unknown>,
  );
  assert.equal(
    clusterWide.filter((d) => d.kind === 'ClusterRole' && JSON.stringify(d).includes('"vmzones-')).length,
    2,
    'the cluster-wide overlay: vmzones-step and vmzones-gates ClusterRoles',
  );
  assert.ok(!JSON.stringify(clusterWide).includes('VMAUTH_NAMESPACE'), 'the placeholder Role is left out');
  assert.ok(
    !JSON.stringify(clusterWide).includes('--watch-namespaces'),
    'the cluster-wide overlay registers the plugins without --watch-namespaces',
  );

  const values = z
    .object({
      controller: z.object({
        image: z.object({ tag: z.string() }),
        initContainers: z.array(z.unknown()),
        volumes: z.array(z.unknown()),
        volumeMounts: z.array(z.unknown()),
        stepPlugins: pluginListSchema,
        metricProviderPlugins: pluginListSchema,
      }),
    })
    .parse(parse(readFileSync(join(repoRoot, 'manifests', 'helm', 'values.yaml'), 'utf8'))).controller;
  assert.equal(values.image.tag, versions.argoRollouts);
  assert.deepEqual(values.initContainers, pod.initContainers);
  assert.deepEqual(
    values.volumes,
    pod.volumes.filter((v) => v.name === 'vmzones-runtime'),
  );
  assert.deepEqual(
    values.volumeMounts,
    controller?.volumeMounts.filter((m) => JSON.stringify(m).includes('vmzones-runtime')),
  );
  assert.deepEqual(values.stepPlugins, [{ name: 'vmzones/step', ...entry }]);
  assert.deepEqual(values.metricProviderPlugins, [{ name: 'vmzones/gates', ...entry }]);
});

test('the Dockerfile builds the same image: runtime folder, user, entrypoint and command', () => {
  const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
  const instruction = (name: string) =>
    dockerfile
      .split('\n')
      .filter((line) => line.startsWith(`${name} `))
      .map((line) => line.slice(name.length + 1).trim());
  assert.deepEqual(instruction('FROM'), ['scratch']);
  assert.deepEqual(instruction('COPY'), ['dist/runtime/ /vmzones/']);
  assert.deepEqual(instruction('USER'), [payload.config.User]);
  assert.deepEqual(
    instruction('ENTRYPOINT').map((s) => JSON.parse(s)),
    [payload.config.Entrypoint],
  );
  assert.deepEqual(
    instruction('CMD').map((s) => JSON.parse(s)),
    [payload.config.Cmd],
  );
  assert.match(dockerfile, new RegExp(`argo-rollouts:${versions.argoRollouts.replaceAll('.', '\\.')}`));
});
