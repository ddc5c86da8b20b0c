// Issue 21 item 9: the yamux server limits the streams open at once. One more is refused the way hashicorp/yamux
// refuses a stream over its accept backlog (a WindowUpdate with RST for that id, never an ACK); the session and its
// other streams go on, the refused stream's payload and late frames are dropped, and a freed slot is used again.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_MAX_STREAMS,
  Flag,
  FrameType,
  type SessionCloseReason,
  YamuxSession,
  type YamuxStream,
} from '../../../plugin/goplugin/yamux.ts';
import { concatBytes, socketPair } from './wire.ts';

function setup(maxStreams?: number) {
  const { local, peer } = socketPair();
  const opened: YamuxStream[] = [];
  const received = new Map<number, Uint8Array[]>();
  const closeReasons: SessionCloseReason[] = [];
  const session = new YamuxSession(local, {
    ...(maxStreams === undefined ? {} : { maxStreams }),
    onStream: (stream) => {
      opened.push(stream);
      received.set(stream.id, []);
      stream.setReceiver({
        data: (chunk) => received.get(stream.id)?.push(chunk.slice()),
        end: () => {},
        reset: () => {},
      });
    },
    onClose: (reason) => closeReasons.push(reason),
  });
  return { peer, session, opened, received, closeReasons };
}

describe('yamux accepted-stream limit', () => {
  it('refuses a stream over the limit with RST, keeps the session and its streams, and reuses a freed slot', async () => {
    const h = setup(2);
    for (const id of [1, 3]) h.peer.send(FrameType.WindowUpdate, Flag.SYN, id, 0);
    for (const id of [1, 3])
      await h.peer.waitFor((f) => f.streamId === id && f.flags === Flag.ACK, 0, `ACK ${id}`);

    // Stream 5 opens with data in the SYN frame: refused, its payload dropped.
    h.peer.sendData(5, new TextEncoder().encode('refused payload'), Flag.SYN);
    const refusal = await h.peer.waitFor((f) => f.streamId === 5, 0, 'the answer to stream 5');
    assert.equal(refusal.type, FrameType.WindowUpdate);
    assert.equal(refusal.flags, Flag.RST);
    assert.equal(refusal.length, 0);
    assert.deepEqual(
      h.opened.map((s) => s.id),
      [1, 3],
      'the refused stream never reaches the plugin',
    );
    assert.equal(h.session.refusedStreamCount, 1);

    // A late frame for the refused stream is dropped; the open streams and pings still work.
    h.peer.sendData(5, new Uint8Array([1, 2, 3]));
    h.peer.sendData(1, new Uint8Array([7, 7]));
    h.peer.send(FrameType.Ping, Flag.SYN, 0, 42);
    const pong = await h.peer.waitFor((f) => f.type === FrameType.Ping, 0, 'ping ACK');
    assert.equal(pong.length, 42);
    await h.peer.settle();
    assert.deepEqual([...concatBytes(h.received.get(1) ?? [])], [7, 7]);
    assert.equal(h.session.closed, false);
    assert.deepEqual(h.closeReasons, []);
    assert.ok(!h.peer.frames.some((f) => f.type === FrameType.GoAway), 'no GoAway');

    // The peer resets stream 1: its slot is free, and stream 7 is accepted.
    h.peer.send(FrameType.WindowUpdate, Flag.RST, 1, 0);
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 7, 0);
    const ack = await h.peer.waitFor((f) => f.streamId === 7, 0, 'the answer to stream 7');
    assert.equal(ack.flags, Flag.ACK);
    assert.deepEqual(
      h.opened.map((s) => s.id),
      [1, 3, 7],
    );
    assert.equal(h.session.openStreamCount, 2);
  });

  it(`by default accepts ${DEFAULT_MAX_STREAMS} open streams and refuses the next`, async () => {
    const h = setup();
    const ids = Array.from({ length: DEFAULT_MAX_STREAMS + 1 }, (_, i) => 2 * i + 1);
    for (const id of ids) h.peer.send(FrameType.WindowUpdate, Flag.SYN, id, 0);
    const last = ids.at(-1) as number;
    const answer = await h.peer.waitFor((f) => f.streamId === last, 0, `the answer to stream ${last}`);
    assert.equal(answer.flags, Flag.RST);
    assert.equal(h.opened.length, DEFAULT_MAX_STREAMS);
    assert.equal(h.session.closed, false);
  });

  it('a refused stream that sends more than its window is a protocol error', async () => {
    const h = setup(1);
    h.peer.send(FrameType.WindowUpdate, Flag.SYN, 1, 0);
    h.peer.send(FrameType.Data, Flag.SYN, 3, 256 * 1024 + 1);
    const goAway = await h.peer.waitFor((f) => f.type === FrameType.GoAway, 0, 'GoAway');
    assert.equal(goAway.length, 1);
    await h.peer.waitForEnd();
    assert.equal(h.closeReasons[0]?.kind, 'protocol');
  });
});
