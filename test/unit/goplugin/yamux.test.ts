import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeFrameHeader,
  encodeFrameHeader,
  Flag,
  FrameType,
  GoAwayCode,
  INITIAL_STREAM_WINDOW,
  type SessionCloseReason,
  YamuxSession,
  type YamuxStream,
} from '../../../plugin/goplugin/yamux.ts';
import { concatBytes, type FakePeer, socketPair } from './wire.ts';

interface Harness {
  peer: FakePeer;
  session: YamuxSession;
  streams: YamuxStream[];
  received: Map<number, Uint8Array[]>;
  events: string[];
  closeReasons: SessionCloseReason[];
}

function setup(options: { attachReceiver?: boolean; maxStreamWindow?: number } = {}): Harness {
  const { local, peer } = socketPair();
  const streams: YamuxStream[] = [];
  const received = new Map<number, Uint8Array[]>();
  const events: string[] = [];
  const closeReasons: SessionCloseReason[] = [];
  const session = new YamuxSession(local, {
    ...(options.maxStreamWindow === undefined ? {} : { maxStreamWindow: options.maxStreamWindow }),
    onStream: (stream) => {
      streams.push(stream);
      if (options.attachReceiver === false) return;
      received.set(stream.id, []);
      stream.setReceiver({
        data: (chunk) => received.get(stream.id)?.push(chunk.slice()),
        end: () => events.push(`end ${stream.id}`),
        reset: () => events.push(`reset ${stream.id}`),
      });
    },
    onClose: (reason) => closeReasons.push(reason),
  });
  return { peer, session, streams, received, events, closeReasons };
}

const bytes = (size: number, fill = 0xab): Uint8Array => new Uint8Array(size).fill(fill);

async function expectGoAway(h: Harness, code: number): Promise<void> {
  const goAway = await h.peer.waitFor((f) => f.type === FrameType.GoAway, 0, 'GoAway');
  assert.equal(goAway.length, code);
  assert.equal(goAway.streamId, 0);
  await h.peer.waitForEnd();
  assert.equal(h.session.closed, true);
}

describe('yamux framing', () => {
  it('encodes headers big-endian exactly as hashicorp/yamux does', () => {
    // WindowUpdate + ACK for stream 7, delta 0 (Go's AcceptStream).
    assert.deepEqual(
      [...encodeFrameHeader(FrameType.WindowUpdate, Flag.ACK, 7, 0)],
      [0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00],
    );
    // Data, stream 7, 75 payload bytes (docs/protocol.md, "yamux: the InitPlugin request frame").
    assert.deepEqual(
      [...encodeFrameHeader(FrameType.Data, 0, 7, 75)],
      [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x4b],
    );
    const header = decodeFrameHeader(encodeFrameHeader(FrameType.Ping, Flag.SYN, 0, 0xfffffffe));
    assert.deepEqual(header, { version: 0, type: 2, flags: 1, streamId: 0, length: 0xfffffffe });
  });

  it('ACKs every stream the peer opens, immediately and in order', async () => {
    const h = setup();
    for (const id of [1, 3, 5]) h.peer.send(FrameType.WindowUpdate, Flag.SYN, id, 0);
    for (const id of [1, 3, 5]) {
      const ack = await h.peer.waitFor((f) => f.streamId === id, 0, `ACK ${id}`);
      assert.equal(ack.type, FrameType.WindowUpdate);
      assert.equal(ack.flags, Flag.ACK);
      assert.equal(ack.length, 0);
    }
    assert.deepEqual(
      h.streams.map((s) => s.id),
      [1, 3, 5],
    );
  });

  it('reassembles frames split at every byte boundary and delivers SYN+data payloads', async () => {
    const h = setup();
    const payload = new TextEncoder().encode('hello over yamux');
    const wire = concatBytes([
      encodeFrameHeader(FrameType.Data, Flag.SYN, 1, payload.length),
      payload,
      encodeFrameHeader(FrameType.Data, 0, 1, 3),
      new Uint8Array([1, 2, 3]),
    ]);
    for (const byte of wire) h.peer.sendRaw(new Uint8Array([byte]));
    await h.peer.waitFor((f) => f.flags === Flag.ACK, 0, 'ACK');
    await h.peer.settle();
    assert.deepEqual([...concatBytes(h.received.get(1) ?? [])], [...payload, 1, 2, 3]);
  });

  it('buffers data that arrives before a receiver is attached', async () => {
    const h = setup({ attachReceiver: false });
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    h.peer.sendData(1, new Uint8Array([9, 8, 7]), Flag.FIN);
    await h.peer.waitFor((f) => f.flags === Flag.ACK);
    await h.peer.settle();
    const got: number[] = [];
    const log: string[] = [];
    h.streams[0]?.setReceiver({
      data: (c) => got.push(...c),
      end: () => log.push('end'),
      reset: () => log.push('reset'),
    });
    assert.deepEqual(got, [9, 8, 7]);
    assert.deepEqual(log, ['end']);
  });
});

describe('yamux ping and GoAway', () => {
  it('answers a Ping SYN with a Ping ACK carrying the same opaque id', async () => {
    const h = setup();
    h.peer.send(FrameType.Ping, Flag.SYN, 0, 0xdeadbeef);
    const pong = await h.peer.waitFor((f) => f.type === FrameType.Ping, 0, 'ping ACK');
    assert.equal(pong.flags, Flag.ACK);
    assert.equal(pong.streamId, 0);
    assert.equal(pong.length, 0xdeadbeef);
  });

  it('records a normal GoAway without closing, and closes on an error GoAway', async () => {
    const h = setup();
    h.peer.send(FrameType.GoAway, 0, 0, GoAwayCode.Normal);
    h.peer.send(FrameType.Ping, Flag.SYN, 0, 1);
    await h.peer.waitFor((f) => f.type === FrameType.Ping);
    assert.equal(h.session.remoteGoAway, true);
    assert.equal(h.session.closed, false);
    h.peer.send(FrameType.GoAway, 0, 0, GoAwayCode.InternalError);
    await h.peer.waitForEnd();
    assert.deepEqual(h.closeReasons, [{ kind: 'remote-goaway', code: GoAwayCode.InternalError }]);
  });

  it('reports EOF when the peer closes the connection and resets open streams', async () => {
    const h = setup();
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    await h.peer.waitFor((f) => f.flags === Flag.ACK);
    h.peer.socket.end();
    await h.peer.waitForEnd();
    assert.equal(h.closeReasons[0]?.kind, 'eof');
    assert.deepEqual(h.events, ['reset 1']);
  });
});

describe('yamux flow control', () => {
  it('returns receive credit with a WindowUpdate once half the window was consumed', async () => {
    const h = setup();
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    await h.peer.waitFor((f) => f.flags === Flag.ACK);
    const frameCount = h.peer.frames.length;
    h.peer.sendData(1, bytes(INITIAL_STREAM_WINDOW / 2 - 1));
    await h.peer.settle();
    assert.equal(h.peer.frames.length, frameCount, 'no WindowUpdate below the threshold');
    assert.equal(h.streams[0]?.receiveWindow, INITIAL_STREAM_WINDOW / 2 + 1);
    h.peer.sendData(1, bytes(1));
    const update = await h.peer.waitFor(
      (f) => f.type === FrameType.WindowUpdate && f.flags === 0,
      frameCount,
    );
    assert.equal(update.streamId, 1);
    assert.equal(update.length, INITIAL_STREAM_WINDOW / 2);
    assert.equal(h.streams[0]?.receiveWindow, INITIAL_STREAM_WINDOW);
  });

  it('accepts a 1 MiB request sent in window-sized frames when credit is returned', async () => {
    const h = setup();
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    await h.peer.waitFor((f) => f.flags === Flag.ACK);
    // Act like Go's sender: never exceed the window we granted; wait for WindowUpdates.
    let window = INITIAL_STREAM_WINDOW;
    let seen = h.peer.frames.length;
    let sent = 0;
    const total = 1024 * 1024;
    while (sent < total) {
      if (window === 0) {
        const update = await h.peer.waitFor((f) => f.type === FrameType.WindowUpdate && f.length > 0, seen);
        seen = h.peer.frames.indexOf(update) + 1;
        window += update.length;
        continue;
      }
      const size = Math.min(window, total - sent, 100_000);
      h.peer.sendData(1, bytes(size, sent % 251));
      window -= size;
      sent += size;
    }
    await h.peer.settle();
    assert.equal(concatBytes(h.received.get(1) ?? []).length, total);
    assert.equal(h.session.closed, false);
  });

  it('never sends more than the peer window and resumes after its WindowUpdate', async () => {
    const h = setup();
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    await h.peer.waitFor((f) => f.flags === Flag.ACK);
    const stream = h.streams[0];
    assert.ok(stream);
    let written = false;
    const total = INITIAL_STREAM_WINDOW + 1000;
    const done = stream.write(bytes(total, 7)).then(() => {
      written = true;
    });
    await h.peer.settle();
    const dataBytes = () =>
      h.peer.frames.filter((f) => f.type === FrameType.Data).reduce((sum, f) => sum + f.payload.length, 0);
    assert.equal(dataBytes(), INITIAL_STREAM_WINDOW, 'stops at the window');
    assert.equal(written, false);
    assert.equal(stream.sendWindow, 0);
    h.peer.send(FrameType.WindowUpdate, 0, 1, 600);
    await h.peer.settle();
    assert.equal(dataBytes(), INITIAL_STREAM_WINDOW + 600);
    h.peer.send(FrameType.WindowUpdate, 0, 1, 100_000);
    await done;
    assert.equal(dataBytes(), total);
    assert.equal(stream.sendWindow, 100_000 - 400);
  });

  it('keeps the bytes of consecutive writes in order', async () => {
    const h = setup();
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    await h.peer.waitFor((f) => f.flags === Flag.ACK);
    const stream = h.streams[0];
    assert.ok(stream);
    const writes = [bytes(200_000, 1), bytes(100_000, 2), bytes(5, 3)];
    const all = Promise.all(writes.map((w) => stream.write(w)));
    h.peer.send(FrameType.WindowUpdate, 0, 1, 100_000);
    await all;
    const got = concatBytes(h.peer.frames.filter((f) => f.type === FrameType.Data).map((f) => f.payload));
    assert.deepEqual(got, concatBytes(writes));
  });

  it('grants a larger configured window in the ACK, as Go does', async () => {
    const h = setup({ maxStreamWindow: 1024 * 1024 });
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    const ack = await h.peer.waitFor((f) => f.flags === Flag.ACK);
    assert.equal(ack.length, 1024 * 1024 - INITIAL_STREAM_WINDOW);
    h.peer.sendData(1, bytes(1024 * 1024));
    await h.peer.settle();
    assert.equal(h.session.closed, false);
  });
});

describe('yamux stream close and reset', () => {
  it('half-closes with FIN after queued data, and forgets the stream when both sides closed', async () => {
    const h = setup();
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    await h.peer.waitFor((f) => f.flags === Flag.ACK);
    const stream = h.streams[0];
    assert.ok(stream);
    void stream.write(bytes(10));
    stream.close();
    const fin = await h.peer.waitFor((f) => (f.flags & Flag.FIN) !== 0, 0, 'FIN');
    const dataIndex = h.peer.frames.findIndex((f) => f.type === FrameType.Data);
    assert.ok(dataIndex >= 0 && dataIndex < h.peer.frames.indexOf(fin), 'data before FIN');
    assert.equal(fin.type, FrameType.WindowUpdate);
    await assert.rejects(stream.write(bytes(1)), { code: 'ConnectionClosed' });
    assert.equal(h.session.openStreamCount, 1, 'still open for reading');
    h.peer.send(FrameType.WindowUpdate, Flag.FIN, 1, 0);
    await h.peer.settle();
    assert.deepEqual(h.events, ['end 1']);
    assert.equal(h.session.openStreamCount, 0);
    // A late WindowUpdate for the closed stream is dropped, not a protocol error.
    h.peer.send(FrameType.WindowUpdate, 0, 1, 10);
    h.peer.sendData(1, bytes(4));
    await h.peer.settle();
    assert.equal(h.session.closed, false);
  });

  it('delivers the payload of a Data+FIN frame before signalling the end', async () => {
    const h = setup();
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    h.peer.sendData(1, new Uint8Array([1, 2]), Flag.FIN);
    await h.peer.settle();
    assert.deepEqual([...concatBytes(h.received.get(1) ?? [])], [1, 2]);
    assert.deepEqual(h.events, ['end 1']);
  });

  it('reports a peer RST to the receiver and rejects pending writes', async () => {
    const h = setup();
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    await h.peer.waitFor((f) => f.flags === Flag.ACK);
    const stream = h.streams[0];
    assert.ok(stream);
    const pending = stream.write(bytes(INITIAL_STREAM_WINDOW + 1));
    h.peer.send(FrameType.WindowUpdate, Flag.RST, 1, 0);
    await assert.rejects(pending, { code: 'ConnectionClosed', message: /reset by the peer/ });
    assert.deepEqual(h.events, ['reset 1']);
    assert.equal(h.session.openStreamCount, 0);
    assert.equal(h.session.closed, false);
  });

  it('sends RST on a local reset', async () => {
    const h = setup();
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 3, 0);
    await h.peer.waitFor((f) => f.flags === Flag.ACK);
    h.streams[0]?.reset();
    const rst = await h.peer.waitFor((f) => f.flags === Flag.RST);
    assert.equal(rst.streamId, 3);
    assert.equal(rst.type, FrameType.WindowUpdate);
  });
});

describe('yamux protocol violations close the session with GoAway(protocol error)', () => {
  const cases: Array<[string, (peer: FakePeer) => void, RegExp]> = [
    [
      'bad version',
      (peer) => peer.sendRaw(new Uint8Array([1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0])),
      /invalid protocol version 1/,
    ],
    ['bad message type', (peer) => peer.send(4, 0, 0, 0), /invalid message type 4/],
    [
      'duplicate SYN',
      (peer) => {
        peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
        peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
      },
      /duplicate stream 1/,
    ],
    [
      'receive window exceeded',
      (peer) => {
        peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
        peer.sendData(1, bytes(INITIAL_STREAM_WINDOW + 1));
      },
      /recv window exceeded on stream 1/,
    ],
    [
      'window exceeded across frames',
      (peer) => {
        peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
        // The first frame stays below the credit-return threshold, so the window is not refilled.
        peer.sendData(1, bytes(INITIAL_STREAM_WINDOW / 2 - 1));
        peer.sendData(1, bytes(INITIAL_STREAM_WINDOW / 2 + 2));
      },
      /recv window exceeded/,
    ],
    ['frame for a never-opened stream', (peer) => peer.sendData(9, bytes(3)), /unknown stream 9/],
    ['data on stream 0', (peer) => peer.sendData(0, bytes(3)), /unknown stream 0/],
    [
      'SYN on an even (server) stream id',
      (peer) => peer.send(FrameType.WindowUpdate, Flag.SYN, 2, 0),
      /stream 2/,
    ],
    [
      'second FIN on a stream',
      (peer) => {
        peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
        peer.send(FrameType.WindowUpdate, Flag.FIN, 1, 0);
        peer.send(FrameType.WindowUpdate, Flag.FIN, 1, 0);
      },
      /unexpected FIN/,
    ],
    [
      'send window overflow',
      (peer) => {
        peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
        peer.send(FrameType.WindowUpdate, 0, 1, 0xffffffff);
      },
      /overflows/,
    ],
  ];
  for (const [name, provoke, message] of cases) {
    it(name, async () => {
      const h = setup();
      provoke(h.peer);
      await expectGoAway(h, GoAwayCode.ProtocolError);
      const reason = h.closeReasons[0];
      assert.equal(reason?.kind, 'protocol');
      assert.match(reason.kind === 'protocol' ? reason.error.message : '', message);
    });
  }

  it('ignores everything the peer sends after the violation', async () => {
    const h = setup();
    h.peer.send(4, 0, 0, 0);
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    await expectGoAway(h, GoAwayCode.ProtocolError);
    assert.equal(h.streams.length, 0);
    assert.equal(h.closeReasons.length, 1);
  });

  it('a receiver that throws ends the session with GoAway(internal error)', async () => {
    const { local, peer } = socketPair();
    const reasons: SessionCloseReason[] = [];
    new YamuxSession(local, {
      onStream: (stream) =>
        stream.setReceiver({
          data: () => {
            throw new Error('consumer bug');
          },
          end: () => {},
          reset: () => {},
        }),
      onClose: (reason) => reasons.push(reason),
    });
    peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    peer.sendData(1, bytes(1));
    const goAway = await peer.waitFor((f) => f.type === FrameType.GoAway);
    assert.equal(goAway.length, GoAwayCode.InternalError);
    assert.equal(reasons[0]?.kind, 'internal');
  });
});
