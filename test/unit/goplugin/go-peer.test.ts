// Real-peer test: builds test/go-peer (hashicorp/go-plugin v1.8.0 + yamux v0.1.2) and lets it drive the
// fixture plugin (test/fixtures/fixture-plugin.ts, its EchoPlugin service) through the same client code the Argo Rollouts controller uses. Go is required:
// without it this test fails, it does not skip.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { goBinary } from '../../go-binary.ts';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const fixture = join(repo, 'test/fixtures/fixture-plugin.ts');

function run(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

const expectedChecks = [
  ...['unix', 'tcp'].flatMap((network) =>
    [
      'handshake',
      'dispense',
      'dispense-unknown',
      'ping',
      'echo-1.5MiB',
      'echo-interface-arg',
      'concurrent-64',
      'server-error',
      'unknown-method',
      'unknown-service',
      'echo-after-errors',
      'kill',
    ].map((check) => `goplugin-${network}/${check}`),
  ),
  'raw/handshake-line',
  'raw/socket-removed',
  'raw/yamux-ping',
  'raw/control-ping',
  'raw/broker-ack',
  'raw/echo-1MiB',
  'raw/exit-on-eof',
  'raw/stderr-is-hclog-json',
  'raw/exit-on-gob-corruption',
  'raw/yamux-bad-version-goaway',
  'env/cookie-missing',
  'env/protocol-version-mismatch',
];

describe('go-plugin transport against the real Go client', () => {
  it('passes every check of the Go peer', async () => {
    const go = spawnSync('go', ['version'], { encoding: 'utf8' });
    if (go.error !== undefined || go.status !== 0) {
      throw new Error(
        `Go is required for the real-peer transport test (test/go-peer) but "go version" failed: ${
          go.error?.message ?? go.stderr
        }. Install Go 1.26+ and make it available on PATH.`,
      );
    }
    // Built once per source and Go version (test/go-binary.ts); a failed build throws with Go's output.
    const peerBinary = goBinary('test/go-peer', ['-buildvcs=false']);

    const result = await run(peerBinary, ['-node', process.execPath, '-fixture', fixture], repo);
    const lines = result.stdout.split('\n');
    const failed = lines.filter((line) => line.startsWith('FAIL '));
    assert.deepEqual(
      failed,
      [],
      `Go peer reported failures:\n${result.stdout}\n--- stderr ---\n${result.stderr}`,
    );
    for (const check of expectedChecks) {
      assert.ok(
        lines.some((line) => line === `PASS ${check}` || line.startsWith(`PASS ${check} `)),
        `missing PASS ${check}\n${result.stdout}`,
      );
    }
    assert.equal(result.code, 0, result.stdout);

    // go-plugin's client re-logs the plugin's stderr; a JSON line with a valid 6-digit @timestamp keeps
    // its level and message, anything else would be logged as a raw [DEBUG] line.
    assert.match(result.stderr, /\[WARN\] +plugin\.node: fixture plugin starting:/);
    // Kill was graceful (Quit answered, process gone before the 2 s deadline).
    assert.doesNotMatch(result.stderr, /plugin failed to exit gracefully/);
    for (const line of lines.filter((l) => l.startsWith('METRIC '))) console.log(line);
  });
});
