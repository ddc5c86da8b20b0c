// Bad and hostile input: every outcome must be a value, "not yet" (undefined) or a GobError — never another
// exception, a hang or a wrong value. Hand-made streams pin down the rules taken from Go's decoder.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ByteWriter } from '../../../plugin/goplugin/gob/byte-writer.ts';
import {
  GobDecoder,
  type GobDecoderLimits,
  GobEncoder,
  GobError,
  GobInterface,
  GobOpaque,
  type GobValue,
} from '../../../plugin/goplugin/gob/index.ts';
import { seededRandom } from '../../fixtures/seeded-random.ts';
import { readCase } from './go-vectors.ts';
import { fromTagged } from './tagged.ts';

type Part = number | bigint | string | Part[] | { int: number | bigint } | { raw: number[] };

/** Gob bytes from parts: numbers are uints, {int} signed ints, strings length-prefixed, {raw} verbatim. */
function body(...parts: Part[]): ByteWriter {
  const w = new ByteWriter();
  const add = (p: Part): void => {
    if (typeof p === 'number' || typeof p === 'bigint') w.uint(p);
    else if (typeof p === 'string') w.string(p);
    else if (Array.isArray(p)) p.forEach(add);
    else if ('int' in p) w.int(p.int);
    else w.raw(Uint8Array.from(p.raw));
  };
  parts.forEach(add);
  return w;
}

/** One length-prefixed message. */
function msg(...parts: Part[]): Uint8Array {
  const out = new ByteWriter();
  body(...parts).appendAsMessage(out);
  return out.result();
}

function concat(...chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let pos = 0;
  for (const c of chunks) {
    out.set(c, pos);
    pos += c.length;
  }
  return out;
}

/** wireType parts for a struct definition of `id` with (name, typeId) fields. */
function structDef(id: number, name: string, fields: [string, number][]): Part[] {
  const fieldParts: Part[] =
    fields.length === 0 ? [] : [1, fields.length, fields.map(([n, t]) => [1, n, 1, { int: t }, 0])];
  return [{ int: -id }, 3, 1, 1, name, 1, { int: id }, 0, fieldParts, 0, 0];
}

function sliceDef(id: number, elem: number): Part[] {
  return [{ int: -id }, 2, 1, 1, 'S', 1, { int: id }, 0, 1, { int: elem }, 0, 0];
}

function decodeAll(stream: Uint8Array, limits?: Partial<GobDecoderLimits>): GobValue[] {
  const d = new GobDecoder(limits);
  d.push(stream);
  const out: GobValue[] = [];
  for (let v = d.next(); v !== undefined; v = d.next()) out.push(v);
  return out;
}

function assertGobError(fn: () => unknown, code: GobError['kind'], pattern?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof GobError, `expected GobError, got ${String(err)}`);
    assert.equal(err.kind, code, err.message);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

describe('truncated streams', () => {
  for (const name of ['realistic', 'interfaces']) {
    it(`${name}: every prefix yields only complete values, then the rest completes the stream`, () => {
      const { stream, expected } = readCase(name);
      const want = expected.map(fromTagged);
      for (let cut = 0; cut <= stream.length; cut++) {
        const d = new GobDecoder();
        d.push(stream.subarray(0, cut));
        const got: GobValue[] = [];
        for (let v = d.next(); v !== undefined; v = d.next()) got.push(v);
        assert.deepStrictEqual(got, want.slice(0, got.length), `cut ${cut}`);
        if (cut < stream.length) assert.ok(d.bufferedBytes > 0 || got.length < want.length, `cut ${cut}`);
        d.push(stream.subarray(cut));
        for (let v = d.next(); v !== undefined; v = d.next()) got.push(v);
        assert.deepStrictEqual(got, want, `cut ${cut}: after the rest arrived`);
        assert.equal(d.bufferedBytes, 0);
      }
    });
  }
});

describe('random byte flips', () => {
  for (const name of ['realistic', 'interfaces', 'basics']) {
    it(`${name}: each corrupted stream ends in values, undefined or a GobError`, () => {
      const { stream } = readCase(name);
      const random = seededRandom(0x5eed + name.length);
      const outcomes = { complete: 0, pending: 0, error: 0 };
      for (let round = 0; round < 1500; round++) {
        const bad = stream.slice();
        const flips = 1 + Math.floor(random() * 4);
        for (let f = 0; f < flips; f++) {
          bad[Math.floor(random() * bad.length)]! ^= 1 + Math.floor(random() * 255);
        }
        const d = new GobDecoder();
        d.push(bad);
        try {
          let count = 0;
          while (d.next() !== undefined) assert.ok(++count <= bad.length, 'more values than bytes');
          if (d.bufferedBytes === 0) outcomes.complete++;
          else outcomes.pending++;
        } catch (err) {
          assert.ok(err instanceof GobError, `round ${round}: ${String(err)}`);
          assert.ok(err.kind === 'corrupt' || err.kind === 'limit', err.message);
          assert.doesNotMatch(err.message, /internal decoder error/);
          outcomes.error++;
          assert.throws(() => d.next(), GobError, 'a dead stream stays dead');
        }
      }
      assert.ok(outcomes.error > 0 && outcomes.complete + outcomes.pending > 0, JSON.stringify(outcomes));
    });
  }
});

describe('stream framing', () => {
  it('rejects a length prefix above maxMessageBytes before the body arrives', () => {
    const d = new GobDecoder({ maxMessageBytes: 100 });
    d.push(Uint8Array.from([0xfe, 0x01, 0x00])); // 256 bytes announced, none sent
    assertGobError(() => d.next(), 'limit', /256 bytes/);
  });

  it('rejects a length prefix wider than 8 bytes', () => {
    assertGobError(() => decodeAll(Uint8Array.from([0x80, 1, 2])), 'corrupt');
    assertGobError(() => decodeAll(Uint8Array.from([0xf7, 1, 2, 3, 4, 5, 6, 7, 8, 9])), 'corrupt');
  });

  it('rejects an empty message', () => {
    assertGobError(() => decodeAll(Uint8Array.from([0x00])), 'corrupt', /empty message/);
  });

  it('waits for an incomplete length prefix or body', () => {
    const d = new GobDecoder();
    d.push(Uint8Array.from([0xfe]));
    assert.equal(d.next(), undefined);
    d.push(Uint8Array.from([0x00, 0x03, 0x0c]));
    assert.equal(d.next(), undefined);
    d.push(Uint8Array.from([0x00, 0x00]));
    assert.equal(d.next(), '');
    assert.equal(d.bufferedBytes, 0);
  });

  it('drops what is left in a value message, as Go does', () => {
    const stream = concat(msg({ int: 6 }, 0, 'a', { raw: [9, 9, 9] }), msg({ int: 6 }, 0, 'b'));
    assert.deepStrictEqual(decodeAll(stream), ['a', 'b']);
  });

  it('accepts non-minimal uints like Go (FE 00 05 is 5)', () => {
    assert.deepStrictEqual(decodeAll(msg({ int: 3 }, 0, { raw: [0xfe, 0x00, 0x05] })), [5]);
  });

  it('rejects a uint wider than 8 bytes inside a message', () => {
    assertGobError(
      () => decodeAll(msg({ int: 3 }, 0, { raw: [0xf7, 1, 2, 3, 4, 5, 6, 7, 8, 9] })),
      'corrupt',
      /8 bytes/,
    );
  });

  it('rejects a uint that runs past the message', () => {
    assertGobError(() => decodeAll(msg({ int: 3 }, 0, { raw: [0xfa, 1, 2] })), 'corrupt');
  });

  it('rejects a non-zero singleton delta', () => {
    assertGobError(() => decodeAll(msg({ int: 6 }, 1, 'x')), 'corrupt', /singleton/);
  });
});

describe('type definitions', () => {
  it('resolves definitions that refer to ids defined later', () => {
    const stream = concat(
      msg(structDef(70, 'Outer', [['In', 71]])),
      msg(structDef(71, 'Inner', [['N', 2]])),
      msg({ int: 70 }, 1, 1, { int: -3 }, 0, 0),
    );
    assert.deepStrictEqual(decodeAll(stream), [{ In: { N: -3 } }]);
  });

  it('keys a definition by the id before its wireType, not by CommonType.Id (Go sends them different)', () => {
    const def = msg({ int: -65 }, 3, 1, 1, 'Odd', 1, { int: 999 }, 0, 1, 1, 1, 'N', 1, { int: 6 }, 0, 0, 0);
    assert.deepStrictEqual(decodeAll(concat(def, msg({ int: 65 }, 1, 'x', 0))), [{ N: 'x' }]);
    assertGobError(
      () => decodeAll(concat(def, msg({ int: 999 }, 1, 'x', 0))),
      'corrupt',
      /undefined type id 999/,
    );
  });

  it('decodes a recursive slice type and enforces maxDepth', () => {
    const nested = (depth: number) => msg({ int: 65 }, 0, Array(depth).fill(1), 0);
    const stream = (depth: number) => concat(msg(sliceDef(65, 65)), nested(depth));
    let v: GobValue = [];
    for (let i = 0; i < 10; i++) v = [v];
    assert.deepStrictEqual(decodeAll(stream(10)), [v]);
    assertGobError(() => decodeAll(stream(100)), 'limit', /nested deeper/);
    assert.equal(decodeAll(stream(100), { maxDepth: 200 }).length, 1);
  });

  it('decodes an interface whose many definitions arrive one message at a time, counting each once', () => {
    const n = 400;
    const fields: [string, number][] = Array.from({ length: n }, (_, i) => [`F${i}`, 71 + i]);
    const messages = [
      msg({ int: 8 }, 0, 'pkg.Wide', structDef(70, 'Wide', fields)),
      ...fields.map(([, id]) => msg(structDef(id, `T${id}`, [['X', 2]]))),
      msg({ int: 70 }, 6, 1, 1, { int: -1 }, 0, 0),
    ];
    const d = new GobDecoder({ maxTypes: n + 1 });
    for (const [i, m] of messages.entries()) {
      d.push(m.subarray(0, 1)); // split inside the length prefix too
      assert.equal(d.next(), undefined, `message ${i}`);
      d.push(m.subarray(1));
      if (i < messages.length - 1) assert.equal(d.next(), undefined, `message ${i}`);
    }
    const v = d.next();
    assert.ok(v instanceof GobInterface);
    assert.deepStrictEqual(v.value, { F0: { X: -1 } });
    assert.equal(d.bufferedBytes, 0);
    const tooFew = new GobDecoder({ maxTypes: n });
    tooFew.push(concat(...messages));
    assertGobError(() => tooFew.next(), 'limit');
  });

  it('rejects ids below 64 and redefinitions', () => {
    assertGobError(() => decodeAll(msg(structDef(63, 'Low', []))), 'corrupt', /63/);
    const twice = concat(msg(structDef(65, 'A', [])), msg(structDef(65, 'A', [])), msg({ int: 65 }, 0));
    assertGobError(() => decodeAll(twice), 'corrupt', /duplicate/);
  });

  it('rejects a redefinition across values of the same stream', () => {
    const d = new GobDecoder();
    d.push(concat(msg(structDef(65, 'A', [])), msg({ int: 65 }, 0)));
    assert.deepStrictEqual(d.next(), {});
    d.push(concat(msg(structDef(65, 'A', [])), msg({ int: 65 }, 0)));
    assertGobError(() => d.next(), 'corrupt', /duplicate/);
  });

  it('enforces maxTypes', () => {
    const defs = [65, 66, 67, 68].map((id) => msg(structDef(id, `T${id}`, [])));
    assertGobError(() => decodeAll(concat(...defs, msg({ int: 65 }, 0)), { maxTypes: 3 }), 'limit', /3 type/);
    assert.equal(decodeAll(concat(...defs, msg({ int: 65 }, 0)), { maxTypes: 4 }).length, 1);
  });

  it('rejects extra bytes after a definition outside an interface', () => {
    assertGobError(
      () => decodeAll(concat(msg(structDef(65, 'A', []), 7), msg({ int: 65 }, 0))),
      'corrupt',
      /extra/,
    );
  });

  it('rejects values of undefined or reserved type ids', () => {
    assertGobError(() => decodeAll(msg({ int: 70 }, 0)), 'corrupt', /undefined type id 70/);
    assertGobError(() => decodeAll(msg({ int: 9 }, 0, 0)), 'corrupt', /undefined type id 9/);
    assertGobError(() => decodeAll(msg({ int: 0 }, 0)), 'corrupt', /undefined type id 0/);
  });

  it('rejects a used type that refers to an undefined id, but not an unused one (like Go)', () => {
    const dangling = msg(structDef(65, 'A', [['X', 99]]));
    assertGobError(() => decodeAll(concat(dangling, msg({ int: 65 }, 0))), 'corrupt', /undefined type id 99/);
    assert.deepStrictEqual(decodeAll(concat(dangling, msg({ int: 6 }, 0, 'ok'))), ['ok']);
  });

  it('rejects a wire type with no kind, or two, once it is used', () => {
    const none = msg({ int: -65 }, 0);
    assert.deepStrictEqual(decodeAll(concat(none, msg({ int: 2 }, 0, { int: 1 }))), [1]);
    assertGobError(() => decodeAll(concat(none, msg({ int: 65 }, 0))), 'corrupt', /no kinds/);
    const two = msg({ int: -65 }, 2, [1, 1, 'S', 0, 1, { int: 6 }, 0], 1, [1, 1, 'T', 0], 0, 0);
    assertGobError(() => decodeAll(concat(two, msg({ int: 65 }, 0, 0))), 'corrupt', /several kinds/);
  });

  it('rejects an out-of-range field number inside a wire type', () => {
    assertGobError(() => decodeAll(msg({ int: -65 }, 8, 0)), 'corrupt', /field number/);
  });

  it('rejects an empty field name once the type is used', () => {
    assertGobError(
      () => decodeAll(concat(msg(structDef(65, 'A', [['', 2]])), msg({ int: 65 }, 0))),
      'corrupt',
      /empty name/,
    );
  });

  it('keeps exported fields only, like Go (no prototype tricks through field names)', () => {
    const def = structDef(65, 'A', [
      ['Visible', 6],
      ['hidden', 6],
      ['__proto__', 6],
      ['Ünïcode', 2],
    ]);
    const [v] = decodeAll(concat(msg(def), msg({ int: 65 }, 1, 'a', 1, 'b', 1, 'c', 1, { int: 4 }, 0)));
    assert.deepStrictEqual(v, { Visible: 'a', Ünïcode: 4 });
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
  });

  it('decodes the three marshaler kinds as opaque values with their wire names', () => {
    const defs = [5, 6, 7].map((delta, i) =>
      msg({ int: -(65 + i) }, delta, 1, 1, `M${i}`, 1, { int: 65 + i }, 0, 0, 0),
    );
    const values = [65, 66, 67].map((id) => msg({ int: id }, 0, 2, { raw: [id, 1] }));
    assert.deepStrictEqual(decodeAll(concat(...defs, ...values)), [
      new GobOpaque('GobEncoder', 'M0', Uint8Array.from([65, 1])),
      new GobOpaque('BinaryMarshaler', 'M1', Uint8Array.from([66, 1])),
      new GobOpaque('TextMarshaler', 'M2', Uint8Array.from([67, 1])),
    ]);
  });
});

describe('values', () => {
  it('ends a struct at the end of its message, as Go does', () => {
    const stream = concat(msg(structDef(65, 'A', [['X', 2]])), msg({ int: 65 }, 1, { int: 5 }));
    assert.deepStrictEqual(decodeAll(stream), [{ X: 5 }]);
  });

  it('rejects a field number past the struct', () => {
    const stream = concat(msg(structDef(65, 'A', [['X', 2]])), msg({ int: 65 }, 2, { int: 5 }, 0));
    assertGobError(() => decodeAll(stream), 'corrupt', /field number 1 out of range/);
  });

  it('rejects string and byte lengths beyond the message', () => {
    assertGobError(() => decodeAll(msg({ int: 6 }, 0, 10, { raw: [65, 66] })), 'corrupt', /string length 10/);
    assertGobError(() => decodeAll(msg({ int: 5 }, 0, 2 ** 40)), 'corrupt', /length/);
  });

  it('rejects element counts larger than the data', () => {
    const ints = concat(msg(sliceDef(65, 2)), msg({ int: 65 }, 0, 1000, { int: 1 }, { int: 2 }));
    assertGobError(() => decodeAll(ints), 'corrupt', /1000 elements/);
    const huge = concat(msg(sliceDef(65, 2)), msg({ int: 65 }, 0, 2n ** 63n));
    assertGobError(() => decodeAll(huge), 'corrupt', /elements/);
    const mapDef = msg({ int: -65 }, 4, 1, 1, 'M', 1, { int: 65 }, 0, 1, { int: 6 }, 1, { int: 6 }, 0, 0);
    assertGobError(
      () => decodeAll(concat(mapDef, msg({ int: 65 }, 0, 2n ** 64n - 1n))),
      'corrupt',
      /map entries/,
    );
  });

  it('checks array lengths against the definition', () => {
    const def = msg({ int: -65 }, 1, 1, 1, 'A', 1, { int: 65 }, 0, 1, { int: 2 }, 1, { int: 2 }, 0, 0);
    assert.deepStrictEqual(decodeAll(concat(def, msg({ int: 65 }, 0, 2, { int: 1 }, { int: -1 }))), [
      [1, -1],
    ]);
    assertGobError(
      () => decodeAll(concat(def, msg({ int: 65 }, 0, 3, { int: 1 }, { int: 2 }, { int: 3 }))),
      'corrupt',
      /length 2/,
    );
  });

  it('bounds interface names', () => {
    assert.deepStrictEqual(decodeAll(msg({ int: 8 }, 0, 0)), [null]);
    assertGobError(() => decodeAll(msg({ int: 8 }, 0, 5, { raw: [65] })), 'corrupt', /exceeds the message/);
    const long = 'N'.repeat(1025);
    assertGobError(
      () => decodeAll(concat(msg({ int: 8 }, 0, long, { int: 6 }, 3, 0, 'x'))),
      'corrupt',
      /1025 bytes/,
    );
    assert.equal(decodeAll(msg({ int: 8 }, 0, 'N'.repeat(1024), { int: 6 }, 3, 0, 1, 'x')).length, 1);
  });

  it('decodes an interface whose definitions and value arrive in later messages', () => {
    // The controller's layout: name + first definition, further definitions, then id, length and value.
    const stream = concat(
      msg({ int: 8 }, 0, 'pkg.Args', structDef(70, 'Args', [['Inner', 71]])),
      msg(structDef(71, 'Inner', [['S', 6]])),
      msg({ int: 70 }, 5, 1, 1, 'hi', 0, 0),
    );
    const [v] = decodeAll(stream);
    assert.deepStrictEqual(
      JSON.stringify(v),
      JSON.stringify({ name: 'pkg.Args', value: { Inner: { S: 'hi' } } }),
    );
    const d = new GobDecoder();
    d.push(stream.subarray(0, stream.length - 1));
    assert.equal(d.next(), undefined, 'incomplete: nothing registered');
    d.push(stream.subarray(stream.length - 1));
    assert.deepStrictEqual(d.next(), v);
  });

  it('resumes after a definition followed by a skipped byte count at the end of a message', () => {
    // Go's decodeTypeSequence skips one uint after a definition when the message continues.
    const messages = [
      msg({ int: 8 }, 0, 'pkg.Args', structDef(70, 'Args', [['Inner', 71]]), 99),
      msg(structDef(71, 'Inner', [['S', 6]])),
      msg({ int: 70 }, 5, 1, 1, 'hi', 0, 0),
    ];
    const want = decodeAll(concat(...messages));
    assert.equal(want.length, 1);
    const d = new GobDecoder();
    for (const m of messages) {
      d.push(m);
      const v = d.next();
      if (v !== undefined) assert.deepStrictEqual(v, want[0]);
    }
    assert.equal(d.bufferedBytes, 0);
  });

  it('decodes int64 and uint64 extremes exactly', () => {
    const e = new GobEncoder();
    const values = [2n ** 63n - 1n, -(2n ** 63n), 2n ** 53n, -(2n ** 53n), 2 ** 53 - 1, -(2 ** 53 - 1)];
    const stream = concat(...values.map((v) => e.encode({ kind: 'int' }, v)));
    assert.deepStrictEqual(decodeAll(stream), [
      2n ** 63n - 1n,
      -(2n ** 63n),
      2n ** 53n,
      -(2n ** 53n),
      2 ** 53 - 1,
      -(2 ** 53 - 1),
    ]);
    const u = concat(...[2n ** 64n - 1n, 2n ** 53n, 2 ** 53 - 1].map((v) => e.encode({ kind: 'uint' }, v)));
    assert.deepStrictEqual(decodeAll(u), [2n ** 64n - 1n, 2n ** 53n, 2 ** 53 - 1]);
  });
});
