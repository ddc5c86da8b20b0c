// Go's time.Time binary layout: decoding Go's own MarshalBinary output, formatting like Go's RFC3339Nano,
// and encoding bytes that Go's UnmarshalBinary reads back as the intended instant and zone offset.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeGoTime,
  encodeGoTime,
  GobError,
  type GoTime,
  goTimeFromDate,
  goTimeNow,
  goTimeToRFC3339,
} from '../../../plugin/goplugin/gob/index.ts';
import { goReadTimes, timeVectors } from './go-vectors.ts';

function fromHex(hex: string): Uint8Array {
  return new Uint8Array(Buffer.from(hex, 'hex'));
}

function assertGobError(fn: () => unknown, code: GobError['kind'], pattern: RegExp): void {
  assert.throws(
    fn,
    (err: unknown) => err instanceof GobError && err.kind === code && pattern.test(err.message),
  );
}

describe('Go time.Time vectors', () => {
  const vectors = timeVectors();

  it('covers UTC, fixed zones, sub-minute zones (version 2) and extreme years', () => {
    assert.ok(vectors.length >= 20);
    assert.ok(vectors.some((v) => v.hex!.startsWith('02')));
    assert.ok(
      vectors.some((v) => v.hex!.startsWith('02') && fromHex(v.hex!)[15]! >= 0x80),
      'a negative sub-minute offset (Go writes a negative seconds byte)',
    );
    assert.ok(vectors.some((v) => v.utc) && vectors.some((v) => !v.utc && v.offset === 0));
  });

  /** The offset the Go sender had: Go's own reading adds a negative seconds byte as 128..255 s. */
  const senderOffset = (v: (typeof vectors)[number]): number => {
    const secondsByte = v.hex!.startsWith('02') ? fromHex(v.hex!)[15]! : 0;
    return secondsByte >= 0x80 ? v.offset - 256 : v.offset;
  };

  for (const v of timeVectors()) {
    it(`${v.rfc3339} (${v.hex})`, () => {
      const t = decodeGoTime(fromHex(v.hex!));
      assert.deepStrictEqual(t, {
        unixSeconds: BigInt(v.unix),
        nanos: v.nanos,
        offsetSeconds: v.utc ? null : senderOffset(v),
      });
      if (senderOffset(v) === v.offset) assert.equal(goTimeToRFC3339(t), v.rfc3339);
    });
  }

  it('re-encodes every vector so that Go reads the same time, with Go’s bytes where Go wrote them canonically', () => {
    const encoded = vectors.map((v) => encodeGoTime(decodeGoTime(fromHex(v.hex!))));
    const readings = goReadTimes(encoded);
    vectors.forEach((v, i) => {
      const { hex: _, rfc3339, ...want } = v;
      const { rfc3339: readRfc3339, ...read } = readings[i]!;
      assert.deepStrictEqual(read, { ...want, offset: senderOffset(v) }, v.hex);
      if (senderOffset(v) === v.offset) assert.equal(readRfc3339, rfc3339, v.hex);
      // Go writes a negative sub-minute offset as a negative seconds byte (≥ 0x80), which it then reads as
      // 128..255 s; we write the offset it read with a seconds byte of 0..59 instead.
      const secondsByte = v.hex!.startsWith('02') ? fromHex(v.hex!)[15]! : 0;
      if (secondsByte < 60) assert.equal(Buffer.from(encoded[i]!).toString('hex'), v.hex);
      else assert.notEqual(Buffer.from(encoded[i]!).toString('hex'), v.hex);
    });
  });
});

describe('encodeGoTime', () => {
  it('writes offsets Go reads back exactly, including negative sub-minute ones Go itself cannot round-trip', () => {
    const times: GoTime[] = [
      { unixSeconds: 1700000000n, nanos: 1, offsetSeconds: -3630 },
      { unixSeconds: 1700000000n, nanos: 0, offsetSeconds: -30 },
      { unixSeconds: 1700000000n, nanos: 0, offsetSeconds: -59 },
      { unixSeconds: 1700000000n, nanos: 0, offsetSeconds: -61 },
      { unixSeconds: 1700000000n, nanos: 0, offsetSeconds: 59 },
      { unixSeconds: 1700000000n, nanos: 0, offsetSeconds: 0 },
      { unixSeconds: 1700000000n, nanos: 0, offsetSeconds: -120 },
      { unixSeconds: -62135596800n, nanos: 999_999_999, offsetSeconds: null },
    ];
    const readings = goReadTimes(times.map(encodeGoTime));
    times.forEach((t, i) => {
      const r = readings[i]!;
      assert.equal(r.error, undefined);
      assert.equal(BigInt(r.unix), t.unixSeconds);
      assert.equal(r.nanos, t.nanos);
      assert.equal(r.utc, t.offsetSeconds === null);
      assert.equal(r.offset, t.offsetSeconds ?? 0);
      assert.equal(r.rfc3339, goTimeToRFC3339(t));
      assert.deepStrictEqual(decodeGoTime(encodeGoTime(t)), t);
    });
  });

  it('uses version 1 for whole minutes and UTC, version 2 otherwise', () => {
    assert.equal(encodeGoTime({ unixSeconds: 0n, nanos: 0, offsetSeconds: null }).length, 15);
    assert.equal(encodeGoTime({ unixSeconds: 0n, nanos: 0, offsetSeconds: -7200 })[0], 1);
    const v2 = encodeGoTime({ unixSeconds: 0n, nanos: 0, offsetSeconds: 30 });
    assert.deepStrictEqual([v2.length, v2[0]], [16, 2]);
  });

  it('rejects what the layout cannot carry', () => {
    assertGobError(
      () => encodeGoTime({ unixSeconds: 0n, nanos: 0, offsetSeconds: -60 }),
      'encode',
      /cannot be represented/,
    );
    assertGobError(
      () => encodeGoTime({ unixSeconds: 0n, nanos: 0, offsetSeconds: 1.5 }),
      'encode',
      /whole seconds/,
    );
    assertGobError(
      () => encodeGoTime({ unixSeconds: 0n, nanos: 0, offsetSeconds: 32768 * 60 }),
      'encode',
      /cannot/,
    );
    assertGobError(
      () => encodeGoTime({ unixSeconds: 0n, nanos: 1e9, offsetSeconds: null }),
      'encode',
      /nanoseconds/,
    );
    assertGobError(
      () => encodeGoTime({ unixSeconds: 2n ** 63n, nanos: 0, offsetSeconds: null }),
      'encode',
      /seconds/,
    );
  });
});

describe('decodeGoTime', () => {
  const good = '010000000edce5e80000000000ffff';

  it('rejects bad lengths and versions like Go, and nanoseconds outside a second', () => {
    assertGobError(() => decodeGoTime(new Uint8Array(0)), 'corrupt', /no data/);
    assertGobError(() => decodeGoTime(fromHex(`03${good.slice(2)}`)), 'corrupt', /version 3/);
    assertGobError(() => decodeGoTime(fromHex(good.slice(0, -2))), 'corrupt', /length 14/);
    assertGobError(() => decodeGoTime(fromHex(`${good}00`)), 'corrupt', /length 16/);
    assertGobError(() => decodeGoTime(fromHex(`02${good.slice(2)}`)), 'corrupt', /length 15 for version 2/);
    assertGobError(() => decodeGoTime(fromHex('010000000edce5e83b9aca000000')), 'corrupt', /length/);
    assertGobError(() => decodeGoTime(fromHex('010000000edce5e83b9aca00ffff')), 'corrupt', /length/);
    assertGobError(() => decodeGoTime(fromHex('010000000edce5e83b9aca0000ffff')), 'corrupt', /nanoseconds/);
  });

  it('reads a subarray view at any offset', () => {
    const padded = new Uint8Array(20);
    padded.set(fromHex(good), 3);
    assert.deepStrictEqual(decodeGoTime(padded.subarray(3, 18)), {
      unixSeconds: 1700000000n,
      nanos: 0,
      offsetSeconds: null,
    });
  });
});

describe('JavaScript clocks', () => {
  it('goTimeFromDate keeps milliseconds, in UTC', () => {
    assert.deepStrictEqual(goTimeFromDate(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678))), {
      unixSeconds: 1767323045n,
      nanos: 678_000_000,
      offsetSeconds: null,
    });
    assert.deepStrictEqual(goTimeFromDate(new Date(-1)), {
      unixSeconds: -1n,
      nanos: 999_000_000,
      offsetSeconds: null,
    });
    assert.equal(
      goTimeToRFC3339(goTimeFromDate(new Date('2026-01-02T03:04:05.600Z'))),
      '2026-01-02T03:04:05.6Z',
    );
    assertGobError(() => goTimeFromDate(new Date(Number.NaN)), 'encode', /invalid Date/);
  });

  it('goTimeNow reads the wall clock in UTC', () => {
    const before = Date.now();
    const t = goTimeNow();
    const after = Date.now();
    const ms = Number(t.unixSeconds) * 1000 + t.nanos / 1e6;
    assert.ok(ms >= before - 2 && ms <= after + 2, `${ms} not within [${before}, ${after}]`);
    assert.ok(Number.isInteger(t.nanos) && t.nanos >= 0 && t.nanos < 1e9);
    assert.equal(t.offsetSeconds, null);
  });
});
