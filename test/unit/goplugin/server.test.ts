import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GobSchema } from '../../../plugin/goplugin/gob/index.ts';
import { createLogger, silentLogger } from '../../../plugin/goplugin/hclog.ts';
import { RpcServerError } from '../../../plugin/goplugin/netrpc.ts';
import { type PluginSet, servePlugin, servePluginConnection } from '../../../plugin/goplugin/server.ts';
import { Flag, FrameType, GoAwayCode } from '../../../plugin/goplugin/yamux.ts';
import { RpcWire, stringSchema } from './rpc-client.ts';
import { concatBytes, type FakePeer, socketPair } from './wire.ts';

const boolSchema: GobSchema = { kind: 'bool' };

const plugins: PluginSet = {
  EchoPlugin: {
    Say: async (body) => ({ schema: stringSchema, value: `echo ${String(body)}` }),
    Fail: async () => {
      throw new RpcServerError('nope');
    },
  },
};

function payloadOf(peer: FakePeer, streamId: number): Uint8Array {
  return concatBytes(
    peer.frames.filter((f) => f.type === FrameType.Data && f.streamId === streamId).map((f) => f.payload),
  );
}

function setup() {
  const { local, peer } = socketPair();
  const done: Array<[number, string]> = [];
  servePluginConnection(local, {
    plugins,
    logger: silentLogger,
    onDone: (code, reason) => done.push([code, reason]),
  });
  // go-plugin's client opens control, stdout and stderr first.
  for (const id of [1, 3, 5]) peer.send(FrameType.WindowUpdate, Flag.SYN, id, 0);
  const control = new RpcWire();
  let controlSeen = 0;
  /** Sends a control call and waits for its reply. */
  const controlCall = async (method: string, schema: GobSchema, body: unknown, seq: number) => {
    peer.sendData(1, control.request(method, seq, schema, body));
    for (;;) {
      const bytes = payloadOf(peer, 1);
      if (bytes.length > controlSeen) {
        control.push(bytes.subarray(controlSeen));
        controlSeen = bytes.length;
      }
      const reply = control.replies.find((r) => r.seq === seq);
      if (reply !== undefined) return reply;
      await peer.waitFor((f) => f.type === FrameType.Data && f.streamId === 1, peer.frames.length);
    }
  };
  return { peer, done, controlCall };
}

/** Opens a broker stream for `id` and returns a reader of what came back on it. */
function openBroker(
  peer: FakePeer,
  streamId: number,
  brokerId: number,
  rest: Uint8Array = new Uint8Array(0),
) {
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, brokerId, true);
  peer.send(FrameType.WindowUpdate, Flag.SYN, streamId, 0);
  peer.sendData(streamId, concatBytes([prefix, rest]));
}

describe('go-plugin connection', () => {
  it('ACKs control, stdout and stderr and serves Control.Ping with a struct{} reply', async () => {
    const t = setup();
    const reply = await t.controlCall('Control.Ping', boolSchema, true, 0);
    assert.deepEqual([reply.serviceMethod, reply.error, reply.body], ['Control.Ping', '', {}]);
    for (const id of [1, 3, 5]) {
      assert.ok(t.peer.frames.some((f) => f.streamId === id && f.flags === Flag.ACK));
    }
  });

  it('dispenses ids 1, 2, … as gob uints and rejects unknown names with go-plugin’s text', async () => {
    const t = setup();
    const first = await t.controlCall('Dispenser.Dispense', stringSchema, 'EchoPlugin', 0);
    const second = await t.controlCall('Dispenser.Dispense', stringSchema, 'EchoPlugin', 1);
    const unknown = await t.controlCall('Dispenser.Dispense', stringSchema, 'Other', 2);
    assert.deepEqual([first.error, first.body], ['', 1]);
    assert.deepEqual([second.error, second.body], ['', 2]);
    assert.deepEqual([unknown.error, unknown.body], ['unknown plugin type: Other', {}]);
  });

  it('echoes the broker id on the plugin stream, then serves the "Plugin" service', async () => {
    const t = setup();
    const dispensed = await t.controlCall('Dispenser.Dispense', stringSchema, 'EchoPlugin', 0);
    const pluginWire = new RpcWire();
    // Id and the first request in one frame, as a fast client may send them.
    openBroker(t.peer, 7, Number(dispensed.body), pluginWire.request('Plugin.Say', 0, stringSchema, 'hi'));
    await t.peer.waitFor((f) => f.type === FrameType.Data && f.streamId === 7);
    for (;;) {
      const bytes = payloadOf(t.peer, 7);
      if (bytes.length > 4) {
        assert.deepEqual([...bytes.subarray(0, 4)], [1, 0, 0, 0]);
        pluginWire.push(bytes.subarray(4));
        if (pluginWire.replies.length > 0) break;
      }
      await t.peer.waitFor((f) => f.type === FrameType.Data && f.streamId === 7, t.peer.frames.length);
    }
    assert.deepEqual(
      pluginWire.replies.map((r) => [r.serviceMethod, r.error, r.body]),
      [['Plugin.Say', '', 'echo hi']],
    );
  });

  it('closes a broker stream whose id was never dispensed', async () => {
    const t = setup();
    await t.controlCall('Control.Ping', boolSchema, true, 0);
    openBroker(t.peer, 7, 42);
    const fin = await t.peer.waitFor((f) => f.streamId === 7 && (f.flags & Flag.FIN) !== 0);
    assert.equal(fin.type, FrameType.WindowUpdate);
    assert.equal(payloadOf(t.peer, 7).length, 0, 'no ack for an unknown id');
    assert.deepEqual(t.done, []);
  });

  it('finishes with code 0 after answering Control.Quit', async () => {
    const t = setup();
    const reply = await t.controlCall('Control.Quit', boolSchema, true, 0);
    assert.deepEqual([reply.error, reply.body], ['', {}]);
    await t.peer.waitForEnd();
    assert.deepEqual(t.done, [[0, 'host asked the plugin to quit']]);
  });

  it('finishes with code 0 when the host closes the connection', async () => {
    const t = setup();
    await t.controlCall('Control.Ping', boolSchema, true, 0);
    t.peer.socket.end();
    await t.peer.waitForEnd();
    assert.deepEqual(t.done, [[0, 'host closed the connection']]);
  });

  it('finishes with code 1 and GoAway(internal error) on corrupt gob on the plugin stream', async () => {
    const t = setup();
    const dispensed = await t.controlCall('Dispenser.Dispense', stringSchema, 'EchoPlugin', 0);
    openBroker(t.peer, 7, Number(dispensed.body), new Uint8Array([0x03, 0xfe, 0x07, 0xd0]));
    const goAway = await t.peer.waitFor((f) => f.type === FrameType.GoAway);
    assert.equal(goAway.length, GoAwayCode.InternalError);
    await t.peer.waitForEnd();
    assert.equal(t.done.length, 1);
    assert.equal(t.done[0]?.[0], 1);
    assert.match(t.done[0]?.[1] ?? '', /plugin stream 7 \(EchoPlugin\)/);
  });

  it('finishes with code 1 on a yamux protocol violation', async () => {
    const t = setup();
    t.peer.send(7, 0, 0, 0);
    const goAway = await t.peer.waitFor((f) => f.type === FrameType.GoAway);
    assert.equal(goAway.length, GoAwayCode.ProtocolError);
    await t.peer.waitForEnd();
    assert.equal(t.done[0]?.[0], 1);
  });
});

describe('servePlugin environment checks', () => {
  async function runWith(env: Record<string, string>): Promise<{ code: number | undefined; stderr: string }> {
    let code: number | undefined;
    let stderr = '';
    const original = process.stderr.write;
    process.stderr.write = ((chunk: string | Uint8Array) => {
      stderr += String(chunk);
      return true;
    }) as typeof process.stderr.write;
    try {
      await servePlugin({
        cookieKey: 'TEST_PLUGIN_COOKIE',
        roles: { alpha: plugins, beta: plugins },
        env,
        exit: (c) => {
          code = c;
        },
        logger: createLogger('test', { sink: (line) => (stderr += line) }),
        notLaunchedHint: 'Configure it in the host instead.',
      });
    } finally {
      process.stderr.write = original;
    }
    return { code, stderr };
  }

  it('exits 1 with a human message when the cookie is missing', async () => {
    const result = await runWith({});
    assert.equal(result.code, 1);
    assert.match(result.stderr, /must be launched by its host program/);
    assert.match(result.stderr, /TEST_PLUGIN_COOKIE to one of: alpha, beta \(it is not set\)/);
    assert.match(result.stderr, /Configure it in the host instead\./);
  });

  it('exits 1 when the cookie has a value no role accepts', async () => {
    const result = await runWith({ TEST_PLUGIN_COOKIE: 'gamma' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /\(it is "gamma"\)/);
  });

  it('exits 1 when PLUGIN_PROTOCOL_VERSIONS does not offer version 1', async () => {
    const result = await runWith({ TEST_PLUGIN_COOKIE: 'alpha', PLUGIN_PROTOCOL_VERSIONS: '2,3' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /offers plugin protocol versions \\"2,3\\" \(PLUGIN_PROTOCOL_VERSIONS\)/);
  });
});
