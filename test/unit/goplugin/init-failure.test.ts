// Real-process test of issue 8 item 12: the vmzones executable (plugin/main.ts, step role) whose InitPlugin
// fails (KUBECONFIG names a file that does not exist) must put its error reply on the socket before it
// exits, because the controller caches the process and never calls InitPlugin on it again. The peer is a
// yamux/net/rpc client on the real unix socket; the plugin is a real child process that really exits.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { GobSchema } from '../../../plugin/goplugin/gob/index.ts';
import { Flag, FrameType } from '../../../plugin/goplugin/yamux.ts';
import { RpcWire, stringSchema } from './rpc-client.ts';
import { concatBytes, FakePeer } from './wire.ts';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const boolSchema: GobSchema = { kind: 'bool' };
const missingKubeconfig = '/nonexistent/vmzones-init-failure/kubeconfig';

function payloadOf(peer: FakePeer, streamId: number): Uint8Array {
  return concatBytes(
    peer.frames.filter((f) => f.type === FrameType.Data && f.streamId === streamId).map((f) => f.payload),
  );
}

/** Waits until `wire` holds a reply with `seq` from the data of `streamId` (after `skip` bytes). */
async function replyOn(peer: FakePeer, streamId: number, wire: RpcWire, seq: number, skip = 0) {
  let seen = skip;
  for (;;) {
    const bytes = payloadOf(peer, streamId);
    if (bytes.length > seen) {
      wire.push(bytes.subarray(seen));
      seen = bytes.length;
    }
    const reply = wire.replies.find((r) => r.seq === seq);
    if (reply !== undefined) return reply;
    await peer.waitFor(
      (f) => f.type === FrameType.Data && f.streamId === streamId,
      peer.frames.length,
      `a reply on stream ${streamId}`,
    );
  }
}

describe('InitPlugin failure (plugin/main.ts, real process and socket)', () => {
  it('sends the error reply, then exits 1', async () => {
    const child = spawn(process.execPath, [join(repo, 'plugin/main.ts')], {
      env: {
        ...process.env,
        ARGO_ROLLOUTS_RPC_PLUGIN: 'step',
        PLUGIN_PROTOCOL_VERSIONS: '1',
        KUBECONFIG: missingKubeconfig,
        VMZONES_KUBECONFIG: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    try {
      const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const parts = line.split('|');
      assert.equal(parts[2], 'unix', `handshake line ${line}`);
      const socket = connect(parts[3] ?? '');
      socket.on('error', () => {}); // the plugin going away is part of the test
      await once(socket, 'connect');
      const peer = new FakePeer(socket);
      for (const id of [1, 3, 5]) peer.send(FrameType.WindowUpdate, Flag.SYN, id, 0);

      const control = new RpcWire();
      peer.sendData(1, control.request('Dispenser.Dispense', 0, stringSchema, 'RpcStepPlugin'));
      const dispensed = await replyOn(peer, 1, control, 0);
      assert.equal(dispensed.error, '');

      const prefix = new Uint8Array(4);
      new DataView(prefix.buffer).setUint32(0, Number(dispensed.body), true);
      const plugin = new RpcWire();
      peer.send(FrameType.WindowUpdate, Flag.SYN, 7, 0);
      peer.sendData(7, concatBytes([prefix, plugin.request('Plugin.InitPlugin', 0, boolSchema, true)]));

      const [code] = await exited;
      await peer.waitForEnd();
      // Everything the plugin wrote before exiting is in peer.frames now.
      const bytes = payloadOf(peer, 7);
      assert.ok(bytes.length > 4, `no InitPlugin reply before the process exited; stderr:\n${stderr}`);
      const reply = await replyOn(peer, 7, plugin, 0, 4);
      assert.equal(reply.serviceMethod, 'Plugin.InitPlugin');
      assert.equal(reply.error, '', 'the error travels in the RpcError body, not as a transport error');
      const body = reply.body as { ErrorString?: string };
      assert.match(body.ErrorString ?? '', /nonexistent\/vmzones-init-failure\/kubeconfig|ENOENT/);
      assert.equal(code, 1, 'a failed init ends the process so that the controller starts a new one');
      assert.match(stderr, /InitPlugin failed; exiting/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
