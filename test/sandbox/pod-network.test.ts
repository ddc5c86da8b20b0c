// The sandbox's pod network on this machine (needs root and iproute2, as the zonePodNetwork option does): the
// namespace's address is reachable from the host through the veth and only a listener inside the namespace answers
// there; removal and the prune of a namespace whose owner is gone leave neither the namespace nor its veth behind.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { after, test } from 'node:test';
import {
  createPodNetwork,
  type PodNetwork,
  podNetworkUnavailable,
  pruneStalePodNetworks,
  removePodNetwork,
} from './pod-network.ts';
import { freePort } from './ports.ts';
import { isAlive } from './processes.ts';

const made: PodNetwork[] = [];
after(() => {
  for (const net of made) removePodNetwork(net);
});

function exists(net: PodNetwork): { netns: boolean; hostVeth: boolean } {
  const list = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
  return {
    netns: list.split('\n').some((line) => line.split(' ')[0] === net.netns),
    hostVeth: spawnSync('ip', ['link', 'show', net.hostVeth]).status === 0,
  };
}

function request(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, timeout: 3000 });
    let body = '';
    socket.on('data', (chunk) => {
      body += chunk.toString();
    });
    socket.on('end', () => resolve(body));
    socket.on('timeout', () => socket.destroy(new Error(`no answer from ${host}:${port}`)));
    socket.on('error', reject);
  });
}

test('the pod network can be made here (root and iproute2)', () => {
  assert.equal(podNetworkUnavailable(), undefined);
});

test('a listener inside the namespace answers at the Pod address from the host; removal takes namespace and veth', async () => {
  const net = createPodNetwork();
  made.push(net);
  assert.deepEqual(exists(net), { netns: true, hostVeth: true });
  const port = await freePort();
  // A server inside the namespace only: the host has no socket on the Pod address.
  const server = spawn(
    'ip',
    [
      'netns',
      'exec',
      net.netns,
      process.execPath,
      '-e',
      `require('node:net').createServer((s) => s.end('inside ${net.netns}')).listen(${port}, '${net.podAddress}', () => console.log('listening'))`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      server.stdout.once('data', () => resolve());
      server.once('exit', (code) => reject(new Error(`the server in ${net.netns} exited ${code}`)));
    });
    assert.equal(await request(net.podAddress, port), `inside ${net.netns}`);
  } finally {
    server.kill('SIGKILL');
  }
  await assert.rejects(request(net.podAddress, port), 'nothing answers once the namespace’s server is gone');
  removePodNetwork(net);
  assert.deepEqual(exists(net), { netns: false, hostVeth: false });
});

test('the prune removes pod networks whose owner is gone and keeps those whose owner runs', () => {
  const live = createPodNetwork(process.pid);
  made.push(live);
  // An owner that has exited: a child that ran and ended.
  const deadPid = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], {
    encoding: 'utf8',
  }).stdout.trim();
  const stale = createPodNetwork(Number(deadPid));
  made.push(stale);
  assert.notEqual(live.subnet, stale.subnet, 'two pod networks never share a /30');
  const removed = pruneStalePodNetworks(isAlive);
  assert.ok(removed.includes(stale.netns), `pruned ${removed.join(', ')}`);
  assert.ok(!removed.includes(live.netns));
  assert.deepEqual(exists(stale), { netns: false, hostVeth: false });
  assert.deepEqual(exists(live), { netns: true, hostVeth: true });
});
