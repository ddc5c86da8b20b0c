// The built CLI (dist/vmzones.mjs, dist/kubectl-vmzones.mjs) as users run it, under the machine's Node 20 and
// under the pinned Node 24: the offline commands work on both, and what needs Node 24 says so in one line.
// A missing Node 20 fails this test (the CLI's promise to run on it would go unchecked otherwise).

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pinnedNode } from '../../../scripts/package.ts';
import { rollout, spec, zoneSteps } from './run.ts';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const vmzones = join(repo, 'dist/vmzones.mjs');
const kubectlPlugin = join(repo, 'dist/kubectl-vmzones.mjs');
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string };

function versionOf(node: string): string | undefined {
  const r = spawnSync(node, ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** A Node 20 outside node_modules: /usr/bin/node, /usr/local/bin/node, then PATH. */
function findNode20(): string {
  const pathDirs = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((d) => d !== '' && !d.includes('node_modules'));
  const candidates = [
    ...new Set(['/usr/bin/node', '/usr/local/bin/node', ...pathDirs.map((d) => join(d, 'node'))]),
  ];
  const seen: string[] = [];
  for (const c of candidates.filter((c) => existsSync(c))) {
    const v = versionOf(c);
    seen.push(`${c} (${v ?? 'does not run'})`);
    if (v?.startsWith('v20.')) return c;
  }
  throw new Error(
    `no Node 20 found outside node_modules (tried ${seen.join(', ') || candidates.join(', ')}): install it, e.g. ` +
      '`apt-get install nodejs` on Debian 12 or a Node 20 binary in /usr/local/bin; the CLI must be tested on it',
  );
}

function newestSource(dir: string): number {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    newest = Math.max(newest, s.isDirectory() ? newestSource(p) : s.mtimeMs);
  }
  return newest;
}

test('the bundles exist and are newer than the sources', () => {
  for (const bundle of [vmzones, kubectlPlugin]) {
    assert.ok(existsSync(bundle), `${bundle} is missing: run "npm run build" first`);
    const stale = Math.max(newestSource(join(repo, 'plugin')), statSync(join(repo, 'package.json')).mtimeMs);
    assert.ok(
      statSync(bundle).mtimeMs >= stale,
      `${bundle} is older than plugin/: run "npm run build" first`,
    );
  }
});

const runtimes: [string, () => string][] = [
  ["the machine's Node 20", findNode20],
  [
    'the pinned Node 24',
    () => {
      assert.match(
        versionOf(pinnedNode) ?? 'missing',
        /^v24\./,
        `${pinnedNode} should be the pinned Node 24 (npm ci)`,
      );
      return realpathSync(pinnedNode);
    },
  ],
];

function cli(node: string, bundle: string, args: string[], input = '', env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(node, [bundle, ...args], {
    input,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, ...env },
    timeout: 30_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at .*:\d+:\d+/, `a stack trace: ${text}`);

for (const [label, locate] of runtimes) {
  test(`under ${label}: --help, --version, lint, render, render --write, kubectl vmzones`, (t) => {
    const node = locate();
    const dir = mkdtempSync(join(tmpdir(), 'vmzones-cli-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));

    const help = cli(node, vmzones, ['--help']);
    assert.deepEqual([help.code, help.err], [0, '']);
    assert.match(help.out, /^Usage: vmzones COMMAND \[flags\]$/m);
    const version = cli(node, vmzones, ['--version']);
    assert.deepEqual(version, { code: 0, out: `vmzones ${pkg.version}\n`, err: '' });

    const good = rollout(spec, zoneSteps('zone-a') + zoneSteps('zone-b'));
    const lint = cli(node, vmzones, ['lint', '--spec', '-'], good);
    assert.deepEqual(lint, {
      code: 0,
      out: 'stdin: Rollout vm: ok (2 zones: zone-a, zone-b; the steps walk every zone)\n',
      err: '',
    });
    const bad = cli(node, vmzones, ['lint', '--spec', '-'], rollout(spec, zoneSteps('zone-a')));
    assert.equal(bad.code, 1);
    assert.match(bad.err, /zone zone-b is never walked/);
    noStack(bad.err);

    writeFileSync(join(dir, 'spec.yaml'), spec);
    const render = cli(node, vmzones, ['render', '--spec', join(dir, 'spec.yaml'), '-o', 'json']);
    assert.equal(render.code, 0, render.err);
    assert.equal((JSON.parse(render.out) as { steps: unknown[] }).steps.length, 8, 'two zones, no pause');
    const partial = cli(node, vmzones, ['render', '--spec', join(dir, 'spec.yaml'), '--order', 'zone-b']);
    assert.deepEqual([partial.code, partial.out], [2, '']);
    noStack(partial.err);

    const file = join(dir, 'rollout.yaml');
    writeFileSync(file, rollout(spec, zoneSteps('zone-a')));
    const write = cli(node, vmzones, ['render', '--write', file]);
    assert.equal(write.code, 0, write.err);
    assert.equal(cli(node, vmzones, ['lint', '--spec', file]).code, 0);

    const kubectl = cli(node, kubectlPlugin, ['render', '--help']);
    assert.equal(kubectl.code, 0, kubectl.err);
    assert.match(kubectl.out, /^Usage: kubectl vmzones render /m);
    assert.equal(cli(node, kubectlPlugin, ['lint', '--spec', file]).code, 0);
  });
}

test("under the machine's Node 20 the plugin role says in one line that it needs Node 24", () => {
  const r = cli(findNode20(), vmzones, [], '', { ARGO_ROLLOUTS_RPC_PLUGIN: 'step' });
  assert.equal(r.code, 1);
  assert.equal(r.out, '');
  assert.match(
    r.err,
    /^vmzones: the vmzones plugin needs Node >=24\.\S+ <25, found v20\.\d+\.\d+: point location in argo-rollouts-config at a Node 24 runtime .*\n$/,
  );
});

test('under the pinned Node 24 the plugin role still starts and prints the go-plugin handshake', async () => {
  const child = spawn(realpathSync(pinnedNode), [vmzones], {
    env: { PATH: process.env.PATH, ARGO_ROLLOUTS_RPC_PLUGIN: 'step' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
      });
      child.stderr.on('data', (d: Buffer) => {
        err += d.toString();
      });
      child.on('exit', (code) => reject(new Error(`exited ${code} before the handshake: ${err}`)));
      setTimeout(() => reject(new Error(`no handshake within 20 s: ${err}`)), 20_000).unref();
    });
    assert.match(line, /^1\|1\|unix\|\S+\|netrpc\|$/);
  } finally {
    child.kill();
  }
});
