import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeGoTime, encodeGoTime, GobDecoder } from '../../../plugin/goplugin/gob/index.ts';
import { formatKubernetesTime } from '../../../plugin/rollouts/wire-read.ts';
import { seededRandom as prng } from '../../fixtures/seeded-random.ts';

const viaDate = (s: bigint) => `${new Date(Number(s) * 1000).toISOString().slice(0, 19)}Z`;

test('formatKubernetesTime matches Date.toISOString over the whole Kubernetes range', () => {
  const edges = [-62135596800n, 253402300799n, 0n, -1n, 951782400n, 951868800n, 4107542400n, -2208988800n];
  const random = prng(7);
  const span = 253402300799 + 62135596800;
  const samples = [...edges];
  for (let i = 0; i < 50_000; i++) samples.push(BigInt(Math.floor(-62135596800 + random() * span)));
  for (const s of samples) assert.equal(formatKubernetesTime(s), viaDate(s), `${s}`);
  assert.throws(() => formatKubernetesTime(-62135596801n), { code: 'ProtocolError' });
  assert.throws(() => formatKubernetesTime(253402300800n), { code: 'ProtocolError' });
});

test('decodeGoTime reads back every encoded second, sign and offset', () => {
  for (const unixSeconds of [
    -(2n ** 62n),
    2n ** 62n,
    -62135596800n,
    123456789012n,
    -1n,
    0n,
    2n ** 33n + 5n,
  ]) {
    for (const offsetSeconds of [null, 3600, -5400, 37, -37]) {
      const t = decodeGoTime(encodeGoTime({ unixSeconds, nanos: 999_999_999, offsetSeconds }));
      assert.deepEqual(
        t,
        { unixSeconds, nanos: 999_999_999, offsetSeconds },
        `${unixSeconds} ${offsetSeconds}`,
      );
    }
  }
});

test('[]byte values decoded from one stream stay intact while the stream goes on', () => {
  // gob of []byte: a singleton value of type id 5 (bytes): [length][typeId=5 → 0x0a][delta 0][n][bytes]
  const message = (bytes: number[]) => [bytes.length + 3, 0x0a, 0x00, bytes.length, ...bytes];
  const decoder = new GobDecoder();
  const kept: Uint8Array[] = [];
  for (let i = 0; i < 5000; i++) {
    decoder.push(new Uint8Array(message([i & 0xff, (i >> 8) & 0xff, 7, 7, 7])));
    kept.push(decoder.next() as Uint8Array);
  }
  for (const [i, b] of kept.entries())
    assert.deepEqual([...b], [i & 0xff, (i >> 8) & 0xff, 7, 7, 7], `value ${i}`);
});
