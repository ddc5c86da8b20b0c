// The sandbox's Git server (test/sandbox/git-server.ts): real git clones and fetches over smart HTTP from the
// bare repositories it serves, sees a commit pushed by path, and refuses pushes over HTTP.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freePort } from './ports.ts';
import { startDaemon, stopDaemon, waitFor } from './processes.ts';
import { repoRoot } from './sandbox.ts';

const dir = mkdtempSync(join(tmpdir(), 'vmzones-git-server-'));
const git = (cwd: string, args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], {
    cwd,
    encoding: 'utf8',
  });

after(() => rmSync(dir, { recursive: true, force: true }));

test('clone and fetch over HTTP from a bare repository; a push by path is seen; a push over HTTP is refused', async (t) => {
  const root = join(dir, 'root');
  execFileSync('git', ['init', '-q', '--bare', '--initial-branch=main', join(root, 'app.git')]);
  const work = join(dir, 'work');
  execFileSync('git', ['clone', '-q', join(root, 'app.git'), work], { stdio: 'ignore' });
  writeFileSync(join(work, 'a.yaml'), 'one\n');
  git(work, ['add', '-A']);
  git(work, ['commit', '-qm', 'one']);
  git(work, ['push', '-q', 'origin', 'HEAD:main']);

  const port = await freePort();
  const server = startDaemon({
    name: 'git-server',
    command: process.execPath,
    args: [join(repoRoot, 'test', 'sandbox', 'git-server.ts'), `--root=${root}`, `--port=${port}`],
    log: join(dir, 'git-server.log'),
    ports: [port],
  });
  t.after(() => stopDaemon(server));
  const url = `http://127.0.0.1:${port}/app.git`;
  await waitFor(async () => ((await fetch(`http://127.0.0.1:${port}/health`)).ok ? true : undefined), {
    part: 'git-server',
    log: server.log,
    pid: server.pid,
    timeoutMs: 15_000,
  });

  const head = git(work, ['rev-parse', 'HEAD']).trim();
  assert.match(git(dir, ['ls-remote', url]), new RegExp(`^${head}\\trefs/heads/main$`, 'm'));
  const clone = join(dir, 'clone');
  git(dir, ['clone', '-q', url, clone]);
  assert.equal(readFileSync(join(clone, 'a.yaml'), 'utf8'), 'one\n');

  writeFileSync(join(work, 'a.yaml'), 'two\n');
  git(work, ['commit', '-qam', 'two']);
  git(work, ['push', '-q', 'origin', 'HEAD:main']);
  git(clone, ['pull', '-q']);
  assert.equal(readFileSync(join(clone, 'a.yaml'), 'utf8'), 'two\n');

  writeFileSync(join(clone, 'a.yaml'), 'three\n');
  git(clone, ['commit', '-qam', 'three']);
  const push = spawnSync('git', ['push', 'origin', 'HEAD:main'], { cwd: clone, encoding: 'utf8' });
  assert.notEqual(push.status, 0, 'a push over HTTP must fail');
  assert.match(push.stderr, /403/);
});
