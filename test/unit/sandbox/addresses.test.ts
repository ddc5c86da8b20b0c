// Test traffic goes only to loopback or into a network namespace the test run made (test/sandbox/pod-network.ts):
// the pod network's addresses, the check up() runs on every address a sandbox hands out, and the sandbox's and the
// tests' sources, which must name no other address and never look up this machine's own.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { addressesIn, addressViolations } from '../../sandbox/addresses.ts';
import { addressAllowed, inSubnet, podNetworkRange, podSubnet } from '../../sandbox/pod-network.ts';
import { repoRoot } from '../../sandbox/sandbox.ts';

test('each pod network is a /30 inside 10.201.0.0/16 whose two addresses are its own and no neighbour’s', () => {
  for (const index of [0, 1, 2, 4097, 16383]) {
    const net = podSubnet(index);
    assert.match(net.subnet, /\/30$/);
    assert.ok(inSubnet(net.podAddress, net.subnet) && inSubnet(net.hostAddress, net.subnet), net.subnet);
    assert.ok(inSubnet(net.podAddress, podNetworkRange), `${net.podAddress} in ${podNetworkRange}`);
    assert.notEqual(net.podAddress, net.hostAddress);
    for (const neighbour of [index - 1, index + 1].filter((i) => i >= 0 && i <= 16383)) {
      const other = podSubnet(neighbour);
      assert.ok(!inSubnet(net.podAddress, other.subnet), `${net.podAddress} not in ${other.subnet}`);
    }
    // kube-apiserver refuses loopback and link-local Pod IPs: the pod proxy needs neither.
    assert.ok(!inSubnet(net.podAddress, '127.0.0.0/8') && !inSubnet(net.podAddress, '169.254.0.0/16'));
  }
  assert.throws(() => podSubnet(16384), /outside 0\.\.16383/);
  assert.throws(() => podSubnet(-1), /outside/);
});

test('the address check passes loopback, Service names and the pod network, and names every other address', () => {
  const net = podSubnet(7);
  const state = {
    apiServer: 'https://127.0.0.1:6443',
    published: '127.0.0.3:31000',
    zoneClusters: [{ podIP: net.podAddress, vmselectUrl: 'http://127.0.0.2:30001/' }],
    endpoints: [{ url: 'http://localhost:8428', args: ['-httpListenAddr=127.0.0.1:8428'] }],
    key: 'vminsert-vm-zone-b.vm.svc:8480',
    ipv6: 'http://[::1]:9090/metrics',
  };
  assert.deepEqual(addressViolations(state, [net]), []);
  const leaked = {
    ...state,
    machine: 'http://198.51.100.7:8480/insert',
    dns: ['https://example.com/x'],
    other: podSubnet(8).podAddress,
    v6: 'http://[2001:db8::1]:80/',
  };
  assert.deepEqual(addressViolations(leaked, [net]).sort(), [
    '10.201.0.34',
    '198.51.100.7',
    '[2001:db8::1]',
    'example.com',
  ]);
  // Without the namespace, its address is not allowed either.
  assert.deepEqual(addressViolations({ podIP: net.podAddress }, []), [net.podAddress]);
  assert.deepEqual(addressesIn(['v1.151.0', 'retention 1.2.3.4.5']), [], 'versions are not addresses');
  assert.ok(!addressAllowed('127.0.0.1.nip.io', []));
});

function sources(dir: string, pattern: RegExp): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules') found.push(...sources(path, pattern));
    else if (entry.isFile() && pattern.test(entry.name)) found.push(path);
  }
  return found;
}

/**
 * Literals in the sandbox's sources that are no traffic target: the kube-apiserver Service CIDR and the kubernetes
 * Service IP in its serving certificate (no kube-proxy runs, nothing routes or connects to them), and the default
 * route the pod network skips when it looks for a free /30.
 */
const notTargets: Record<string, string[]> = {
  'test/sandbox/sandbox.ts': ['10.96.0.0'],
  'test/env/kube/internal/pki/pki.go': ['10.96.0.1'],
  'test/sandbox/pod-network.ts': ['0.0.0.0'],
};

test('the sandbox’s sources name no address outside loopback and its pod network range', () => {
  const files = [
    ...sources(join(repoRoot, 'test', 'sandbox'), /\.ts$/),
    ...sources(join(repoRoot, 'test', 'env', 'kube'), /(?<!_test)\.go$/),
  ].filter((f) => !f.endsWith('.test.ts'));
  assert.ok(files.length > 20, `found ${files.length} sandbox sources`);
  const stray: string[] = [];
  for (const file of files) {
    const path = relative(repoRoot, file);
    const allowed = notTargets[path] ?? [];
    const literals = addressesIn(readFileSync(file, 'utf8'));
    for (const a of literals) {
      if (/^\d/.test(a) && !addressAllowed(a, [{ subnet: podNetworkRange }]) && !allowed.includes(a))
        stray.push(`${path}: ${a}`);
    }
  }
  assert.deepEqual(stray, []);
});

test('no test or script looks up this machine’s own addresses (os.networkInterfaces)', () => {
  const files = [
    ...sources(join(repoRoot, 'test'), /\.(ts|mjs|js)$/),
    ...sources(join(repoRoot, 'scripts'), /\.(ts|mjs|js)$/),
  ];
  const self = relative(repoRoot, new URL(import.meta.url).pathname);
  const users = files
    .filter((f) => relative(repoRoot, f) !== self)
    .filter((f) => /networkInterfaces\s*\(/.test(readFileSync(f, 'utf8')))
    .map((f) => relative(repoRoot, f));
  assert.deepEqual(users, []);
});
