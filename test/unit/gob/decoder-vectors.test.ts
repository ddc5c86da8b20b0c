// The decoder against streams produced by Go's encoding/gob (test/vectors/gob): every case must decode to the
// values Go sent, whether the stream arrives in one piece, byte by byte, or split at random places.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GobDecoder } from '../../../plugin/goplugin/gob/index.ts';
import { seededRandom } from '../../fixtures/seeded-random.ts';
import { readCase } from './go-vectors.ts';
import { decodeChunks } from './helpers.ts';
import { fromTagged } from './tagged.ts';

const cases = ['basics', 'structs', 'maps', 'slices', 'recursive', 'times', 'interfaces', 'realistic', 'big'];

function* byteChunks(stream: Uint8Array): Generator<Uint8Array> {
  for (let i = 0; i < stream.length; i++) yield stream.subarray(i, i + 1);
}

function* randomChunks(stream: Uint8Array, random: () => number, maxChunk: number): Generator<Uint8Array> {
  let pos = 0;
  while (pos < stream.length) {
    const size = 1 + Math.floor(random() * maxChunk);
    yield stream.subarray(pos, pos + size);
    pos += size;
  }
}

describe('decoder on Go-generated vectors', () => {
  for (const name of cases) {
    describe(name, () => {
      const { stream, expected } = readCase(name);
      const want = expected.map(fromTagged);

      it('decodes the whole stream pushed at once', () => {
        const { values, decoder } = decodeChunks([stream]);
        assert.equal(values.length, want.length);
        for (let i = 0; i < want.length; i++) assert.deepStrictEqual(values[i], want[i], `${name}[${i}]`);
        assert.equal(decoder.bufferedBytes, 0);
      });

      it('decodes the same values when pushed one byte at a time', () => {
        const { values, decoder } = decodeChunks(byteChunks(stream));
        assert.deepStrictEqual(values, want);
        assert.equal(decoder.bufferedBytes, 0);
      });

      it('decodes the same values when split at random places', () => {
        const random = seededRandom(name.length * 7919);
        for (let round = 0; round < 5; round++) {
          const maxChunk = [3, 17, 64, 700, 70000][round]!;
          const { values } = decodeChunks(randomChunks(stream, random, maxChunk));
          assert.deepStrictEqual(values, want, `round ${round}`);
        }
      });
    });
  }

  it('keeps a value pending until its last byte arrives, consuming nothing before', () => {
    const { stream, expected } = readCase('interfaces');
    const want = expected.map(fromTagged);
    // Offsets at which each value becomes decodable when the stream arrives byte by byte.
    const ends: number[] = [];
    const probe = new GobDecoder();
    for (let i = 0; i < stream.length; i++) {
      probe.push(stream.subarray(i, i + 1));
      while (probe.next() !== undefined) ends.push(i + 1);
    }
    assert.equal(ends.length, want.length);
    // Value 1 is the first RunArgs interface: its type definitions span many messages.
    const decoder = new GobDecoder();
    decoder.push(stream.subarray(0, ends[1]! - 1));
    assert.deepStrictEqual(decoder.next(), want[0]);
    assert.equal(decoder.next(), undefined);
    assert.equal(decoder.next(), undefined, 'retrying without new bytes stays pending');
    assert.equal(decoder.bufferedBytes, ends[1]! - 1 - ends[0]!);
    decoder.push(stream.subarray(ends[1]! - 1, ends[1]!));
    assert.deepStrictEqual(decoder.next(), want[1]);
    assert.equal(decoder.bufferedBytes, 0);
    // Everything after that, including the second send that reuses the definitions.
    decoder.push(stream.subarray(ends[1]!));
    const rest: unknown[] = [];
    for (let v = decoder.next(); v !== undefined; v = decoder.next()) rest.push(v);
    assert.deepStrictEqual(rest, want.slice(2));
  });
});
