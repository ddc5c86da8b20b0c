import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GobEncoder, type GobSchema, type GobValue } from '../../../plugin/goplugin/gob/index.ts';
import {
  type ByteChannel,
  NetRpcServer,
  type NetRpcServerOptions,
  RpcProtocolError,
  type RpcReply,
  RpcServerError,
  type RpcServices,
} from '../../../plugin/goplugin/netrpc.ts';
import { RpcWire, stringSchema } from './rpc-client.ts';

type Receiver = Parameters<ByteChannel['setReceiver']>[0];

/** An in-memory channel: records every write separately, so atomicity of replies is visible. */
class MemoryChannel implements ByteChannel {
  receiver: Receiver | undefined;
  readonly writes: Uint8Array[] = [];
  readonly wire = new RpcWire();
  closed = false;
  failWrites = false;

  setReceiver(receiver: Receiver): void {
    this.receiver = receiver;
  }

  write(data: Uint8Array): Promise<void> {
    if (this.failWrites) return Promise.reject(new Error('stream gone'));
    this.writes.push(data);
    this.wire.push(data);
    return Promise.resolve();
  }

  close(): void {
    this.closed = true;
  }

  send(bytes: Uint8Array): void {
    this.receiver?.data(bytes);
  }
}

const textReply = (text: string): RpcReply => ({ schema: stringSchema, value: text });

function setup(services: RpcServices, extra: Partial<NetRpcServerOptions> = {}) {
  const channel = new MemoryChannel();
  const fatal: Error[] = [];
  const sent: string[] = [];
  let drained = 0;
  const server = new NetRpcServer(channel, {
    services,
    onFatal: (error) => fatal.push(error),
    onReplySent: (method) => sent.push(method),
    onDrained: () => drained++,
    ...extra,
  });
  const client = new RpcWire();
  return { channel, server, client, fatal, sent, drained: () => drained };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('net/rpc server', () => {
  it('answers a call with the Response header and the reply, echoing ServiceMethod and Seq', async () => {
    const t = setup({ Echo: { Say: async (body) => textReply(`you said ${String(body)}`) } });
    t.channel.send(t.client.request('Echo.Say', 0, stringSchema, 'hi'));
    await tick();
    assert.deepEqual(t.channel.wire.replies, [
      { serviceMethod: 'Echo.Say', seq: 0, error: '', body: 'you said hi' },
    ]);
    assert.deepEqual(t.sent, ['Echo.Say']);
    assert.equal(t.channel.writes.length, 1, 'header and body in one write');
  });

  it('writes the Response type definition once, then only header values', async () => {
    const t = setup({ Echo: { Say: async () => textReply('x') } });
    t.channel.send(t.client.request('Echo.Say', 0, stringSchema, 'a'));
    await tick();
    t.channel.send(t.client.request('Echo.Say', 1, stringSchema, 'b'));
    await tick();
    const [first, second] = t.channel.writes;
    assert.ok(first && second);
    // Second reply: header value (no typedef) "len FF 82 ..." + "04 0C 00 01 78".
    assert.equal(second[1], 0xff);
    assert.equal(second[2], 0x82, 'header value refers to the type id defined in the first reply');
    assert.ok(first.length > second.length + 40, 'first reply carried the Response definition');
  });

  it('runs calls concurrently and answers them in completion order', async () => {
    const release = Promise.withResolvers<void>();
    const t = setup({
      Svc: {
        Slow: async () => {
          await release.promise;
          return textReply('slow');
        },
        Fast: async () => textReply('fast'),
      },
    });
    t.channel.send(t.client.request('Svc.Slow', 0, stringSchema, ''));
    t.channel.send(t.client.request('Svc.Fast', 1, stringSchema, ''));
    await tick();
    assert.deepEqual(
      t.channel.wire.replies.map((r) => [r.seq, r.body]),
      [[1, 'fast']],
    );
    assert.equal(t.server.inFlight, 1);
    release.resolve();
    await tick();
    assert.deepEqual(
      t.channel.wire.replies.map((r) => [r.seq, r.body]),
      [
        [1, 'fast'],
        [0, 'slow'],
      ],
    );
  });

  it('echoes a Seq beyond 2^53 exactly', async () => {
    const t = setup({ S: { M: async () => textReply('ok') } });
    const seq = 2n ** 64n - 1n;
    t.channel.send(t.client.request('S.M', seq, stringSchema, ''));
    await tick();
    assert.equal(t.channel.wire.replies[0]?.seq, seq);
  });

  it("uses Go's error texts for unknown services and methods, with a struct{} body", async () => {
    const t = setup({ Plugin: { Known: async () => textReply('ok') } });
    t.channel.send(t.client.request('Plugin.Nope', 1, stringSchema, 'x'));
    t.channel.send(t.client.request('Nope.Known', 2, stringSchema, 'x'));
    t.channel.send(t.client.request('NoDot', 3, stringSchema, 'x'));
    t.channel.send(t.client.request('Plugin.Known', 4, stringSchema, 'x'));
    await tick();
    assert.deepEqual(
      t.channel.wire.replies.map((r) => [r.seq, r.error, r.body]),
      [
        [1, "rpc: can't find method Plugin.Nope", {}],
        [2, "rpc: can't find service Nope.Known", {}],
        [3, 'rpc: service/method request ill-formed: NoDot', {}],
        [4, '', 'ok'],
      ],
    );
  });

  it('does not resolve methods through the prototype chain', async () => {
    const t = setup({ Plugin: {} });
    t.channel.send(t.client.request('Plugin.toString', 1, stringSchema, 'x'));
    t.channel.send(t.client.request('constructor.name', 2, stringSchema, 'x'));
    await tick();
    assert.deepEqual(
      t.channel.wire.replies.map((r) => r.error),
      ["rpc: can't find method Plugin.toString", "rpc: can't find service constructor.name"],
    );
  });

  it('sends RpcServerError and unexpected exceptions as Response.Error', async () => {
    const t = setup({
      P: {
        Deliberate: async () => {
          throw new RpcServerError('invalid args');
        },
        Bug: async () => {
          throw new TypeError('x is undefined');
        },
        SyncThrow: (() => {
          throw new RpcServerError('sync');
        }) as unknown as (body: GobValue) => Promise<RpcReply>,
      },
    });
    t.channel.send(t.client.request('P.Deliberate', 1, stringSchema, ''));
    t.channel.send(t.client.request('P.Bug', 2, stringSchema, ''));
    t.channel.send(t.client.request('P.SyncThrow', 3, stringSchema, ''));
    await tick();
    assert.deepEqual(
      t.channel.wire.replies.map((r) => [r.seq, r.error, r.body]).sort((a, b) => Number(a[0]) - Number(b[0])),
      [
        [1, 'invalid args', {}],
        [2, 'x is undefined', {}],
        [3, 'sync', {}],
      ],
    );
    assert.deepEqual(t.fatal, []);
  });

  it('answers with an error when a reply does not fit its schema, and the stream stays usable', async () => {
    const intSchema: GobSchema = { kind: 'int' };
    const t = setup({
      P: {
        Bad: async () => ({ schema: intSchema, value: 'not a number' }),
        Good: async () => ({ schema: intSchema, value: 7 }),
      },
    });
    t.channel.send(t.client.request('P.Bad', 1, stringSchema, ''));
    t.channel.send(t.client.request('P.Good', 2, stringSchema, ''));
    await tick();
    const [bad, good] = t.channel.wire.replies;
    assert.match(bad?.error ?? '', /^plugin could not encode its reply: /);
    assert.deepEqual(bad?.body, {});
    assert.deepEqual([good?.seq, good?.error, good?.body], [2, '', 7]);
    assert.deepEqual(t.fatal, []);
  });

  it('decodes requests fed one byte at a time', async () => {
    const t = setup({ E: { Len: async (body) => textReply(String((body as Uint8Array).length)) } });
    const bytesSchema: GobSchema = { kind: 'bytes' };
    const wire = t.client.request('E.Len', 5, bytesSchema, new Uint8Array(300_000).fill(1));
    for (let i = 0; i < wire.length; i += 997)
      t.channel.send(wire.subarray(i, Math.min(i + 997, wire.length)));
    await tick();
    assert.deepEqual(
      t.channel.wire.replies.map((r) => [r.seq, r.body]),
      [[5, '300000']],
    );
  });

  it('reports corrupt gob as fatal and stops reading', async () => {
    let calls = 0;
    const t = setup({
      E: {
        M: async () => {
          calls++;
          return textReply('x');
        },
      },
    });
    // A value of type id 1000, never defined on this stream.
    t.channel.send(new Uint8Array([0x03, 0xfe, 0x07, 0xd0]));
    t.channel.send(t.client.request('E.M', 1, stringSchema, ''));
    await tick();
    assert.equal(t.fatal.length, 1);
    assert.equal(calls, 0);
    assert.deepEqual(t.channel.wire.replies, []);
  });

  it('reports a header that is not a struct as a fatal protocol error', async () => {
    const t = setup({});
    // A bare string where the Request header should be.
    t.channel.send(new GobEncoder().encode(stringSchema, 'y'));
    await tick();
    assert.equal(t.fatal.length, 1);
    assert.ok(t.fatal[0] instanceof RpcProtocolError);
  });

  it('after the peer closes, waits for in-flight calls, then closes its side', async () => {
    const release = Promise.withResolvers<void>();
    const t = setup({
      S: {
        Slow: async () => {
          await release.promise;
          return textReply('late');
        },
      },
    });
    t.channel.send(t.client.request('S.Slow', 1, stringSchema, ''));
    t.channel.receiver?.end();
    await tick();
    assert.equal(t.channel.closed, false);
    release.resolve();
    await tick();
    assert.deepEqual(
      t.channel.wire.replies.map((r) => r.body),
      ['late'],
    );
    assert.equal(t.channel.closed, true);
    assert.equal(t.drained(), 1);
  });

  it('stops replying after a reset, and a failed write is not fatal', async () => {
    const release = Promise.withResolvers<void>();
    const t = setup({
      S: {
        Slow: async () => {
          await release.promise;
          return textReply('late');
        },
        Now: async () => textReply('now'),
      },
    });
    t.channel.send(t.client.request('S.Slow', 1, stringSchema, ''));
    t.channel.failWrites = true;
    t.channel.send(t.client.request('S.Now', 2, stringSchema, ''));
    await tick();
    assert.deepEqual(t.fatal, [], 'a failed write is not fatal');
    assert.deepEqual(t.sent, [], 'a reply that was not written is not reported as sent');
    t.channel.receiver?.reset();
    // Writes work again: only the reset can keep S.Slow's late reply off the channel.
    t.channel.failWrites = false;
    release.resolve();
    await tick();
    assert.deepEqual(t.channel.writes, []);
    assert.deepEqual(t.fatal, []);
  });

  it('runs a reply’s afterSent only once the write completed, also when it failed', async () => {
    const order: string[] = [];
    const flushed = Promise.withResolvers<void>();
    const t = setup({
      S: {
        Ok: async () => ({ ...textReply('ok'), afterSent: () => order.push('after Ok') }),
      },
    });
    // The transport accepts the bytes but completes the write only later (a socket flushing them).
    t.channel.write = (data) => {
      order.push('write');
      t.channel.writes.push(data);
      return flushed.promise.then(() => {
        order.push('flushed');
      });
    };
    t.channel.send(t.client.request('S.Ok', 1, stringSchema, ''));
    await tick();
    assert.deepEqual(order, ['write']);
    flushed.resolve();
    await tick();
    assert.deepEqual(order, ['write', 'flushed', 'after Ok']);

    const failing = setup({
      S: { Ok: async () => ({ ...textReply('ok'), afterSent: () => order.push('after failed') }) },
    });
    failing.channel.failWrites = true;
    failing.channel.send(failing.client.request('S.Ok', 1, stringSchema, ''));
    await tick();
    assert.equal(order.at(-1), 'after failed');
  });
});
