// The encoder: byte-exact against the worked examples of docs/protocol.md ("Wire facts": the first call byte by
// byte, gob primitive encodings, Go and Kubernetes types, a Measurement reply, a step Run reply), and accepted by
// Go's encoding/gob, which must decode the intended Go values (test/vectors/gob decode-check).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeGoTime,
  encodeGoTime,
  GobDecoder,
  GobEncoder,
  GobError,
  GobOpaque,
  type GobSchema,
  type GobValue,
} from '../../../plugin/goplugin/gob/index.ts';
import { goDecode } from './go-vectors.ts';
import { fromTagged } from './tagged.ts';

/** Bytes from docs/protocol.md's notation: hex pairs and "quoted ASCII". */
function docBytes(text: string): Uint8Array {
  const out: number[] = [];
  for (const token of text.match(/"[^"]*"|[0-9A-Fa-f]{2}/g) ?? []) {
    if (token.startsWith('"')) out.push(...Buffer.from(token.slice(1, -1), 'ascii'));
    else out.push(Number.parseInt(token, 16));
  }
  return Uint8Array.from(out);
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes)
    .toString('hex')
    .toUpperCase()
    .replace(/(..)(?!$)/g, '$1 ');
}

function concat(...chunks: Uint8Array[]): Uint8Array {
  return Uint8Array.from(chunks.flatMap((c) => [...c]));
}

function decodeAll(stream: Uint8Array): GobValue[] {
  const d = new GobDecoder();
  d.push(stream);
  const out: GobValue[] = [];
  for (let v = d.next(); v !== undefined; v = d.next()) out.push(v);
  assert.equal(d.bufferedBytes, 0);
  return out;
}

/** Decodes with Go into the named types; asserts Go consumed the stream exactly, returns the values. */
function goValues(types: string[], stream: Uint8Array): GobValue[] {
  const result = goDecode(types, stream);
  assert.equal(result.error, undefined, result.error);
  assert.equal(result.eof, true);
  return result.values.map(fromTagged);
}

const str = { kind: 'string' } as const satisfies GobSchema;
const responseHeader: GobSchema = {
  kind: 'struct',
  name: 'Response',
  fields: [
    { name: 'ServiceMethod', type: str },
    { name: 'Seq', type: { kind: 'uint' } },
    { name: 'Error', type: str },
  ],
};
const rpcError: GobSchema = {
  kind: 'struct',
  name: 'RpcError',
  fields: [{ name: 'ErrorString', type: str }],
};
const emptyStruct: GobSchema = { kind: 'struct', name: '', fields: [] };
const rpcStepResult: GobSchema = {
  kind: 'struct',
  name: 'RpcStepResult',
  fields: [
    { name: 'Phase', type: str },
    { name: 'Message', type: str },
    { name: 'RequeueAfter', type: { kind: 'int' } },
    { name: 'Status', type: { kind: 'bytes' } },
  ],
};
const stepResponse: GobSchema = {
  kind: 'struct',
  name: 'Response',
  fields: [
    { name: 'Result', type: rpcStepResult },
    { name: 'Error', type: rpcError },
  ],
};
const time: GobSchema = { kind: 'gobEncoder', name: 'Time' };
const stringMap: GobSchema = { kind: 'map', name: 'map[string]string', key: str, elem: str };
const measurement: GobSchema = {
  kind: 'struct',
  name: 'Measurement',
  fields: [
    { name: 'Phase', type: str },
    { name: 'Message', type: str },
    { name: 'StartedAt', type: time },
    { name: 'FinishedAt', type: time },
    { name: 'Value', type: str },
    { name: 'Metadata', type: stringMap },
    { name: 'ResumeAt', type: time },
  ],
};
const inner: GobSchema = {
  kind: 'struct',
  name: 'Inner',
  fields: [
    { name: 'Name', type: str },
    { name: 'Score', type: { kind: 'float' } },
    { name: 'Tags', type: { kind: 'slice', elem: str } },
  ],
};
const t1700000000 = encodeGoTime({ unixSeconds: 1700000000n, nanos: 0, offsetSeconds: null });

describe('byte-exact against docs/protocol.md', () => {
  it('the first call: InitPlugin reply (Response typedef, header, RpcError typedef, RpcError{})', () => {
    const e = new GobEncoder();
    const header = e.encode(responseHeader, { ServiceMethod: 'Plugin.InitPlugin' });
    const body = e.encode(rpcError, {});
    assert.equal(
      hex(header),
      hex(
        docBytes(`3A FF 81 03 01 01 08 52 65 73 70 6F 6E 73 65 01 FF 82 00 01 03
          01 0D 53 65 72 76 69 63 65 4D 65 74 68 6F 64 01 0C 00  01 03 53 65 71 01 06 00
          01 05 45 72 72 6F 72 01 0C 00 00 00
          16 FF 82 01 11 50 6C 75 67 69 6E 2E 49 6E 69 74 50 6C 75 67 69 6E 00`),
      ),
    );
    assert.equal(
      hex(body),
      hex(
        docBytes(`26 FF 83 03 01 01 08 52 70 63 45 72 72 6F 72 01 FF 84 00 01 01
          01 0B 45 72 72 6F 72 53 74 72 69 6E 67 01 0C 00 00 00   03 FF 84 00`),
      ),
    );
    // The table of other small messages, continuing on the same stream (ids 65 and 66 known, 67 next).
    assert.equal(
      hex(e.encode(rpcError, { ErrorString: 'boom' })),
      hex(docBytes('09 FF 84 01 04 62 6F 6F 6D 00')),
    );
    assert.equal(
      hex(e.encode(emptyStruct, {})),
      hex(docBytes('0A FF 85 03 01 02 FF 86 00 00 00  03 FF 86 00')),
    );
    assert.equal(
      hex(e.encode(responseHeader, { ServiceMethod: 'Control.Ping', Seq: 1 })),
      hex(docBytes('13 FF 82 01 0C 43 6F 6E 74 72 6F 6C 2E 50 69 6E 67 01 01 00')),
    );
    assert.equal(
      hex(
        e.encode(responseHeader, {
          ServiceMethod: 'Plugin.Foo',
          Seq: 2,
          Error: "rpc: can't find method Plugin.Foo",
        }),
      ),
      hex(docBytes(`34 FF 82 01 0A "Plugin.Foo" 01 02 01 21 "rpc: can't find method Plugin.Foo" 00`)),
    );
  });

  it('the first call: singleton bodies', () => {
    const e = new GobEncoder();
    assert.equal(hex(e.encode({ kind: 'uint' }, 1)), '03 06 00 01');
    assert.equal(hex(e.encode({ kind: 'bool' }, true)), '03 02 00 01');
    assert.equal(hex(e.encode(str, 'my-step')), hex(docBytes('0A 0C 00 07 "my-step"')));
    assert.equal(hex(e.encode(str, 'RpcStepPlugin')), hex(docBytes('10 0C 00 0D "RpcStepPlugin"')));
    assert.equal(
      hex(e.encode(str, 'RpcMetricProviderPlugin')),
      hex(docBytes('1A 0C 00 17 "RpcMetricProviderPlugin"')),
    );
    assert.equal(hex(e.encode(str, '')), '03 0C 00 00');
  });

  it('gob primitive encodings', () => {
    const e = new GobEncoder();
    const single = (schema: GobSchema, v: unknown) => hex(e.encode(schema, v).subarray(3));
    assert.equal(single({ kind: 'uint' }, 256), 'FE 01 00');
    assert.equal(single({ kind: 'uint' }, 60_000_000_000), 'FB 0D F8 47 58 00');
    assert.equal(single({ kind: 'int' }, -129), 'FE 01 01');
    assert.equal(single({ kind: 'int' }, 65), 'FF 82');
    assert.equal(single({ kind: 'int' }, -65), 'FF 81');
    assert.equal(single({ kind: 'float' }, 17), 'FE 31 40');
    assert.equal(single({ kind: 'float' }, 0), '00');
    assert.equal(single({ kind: 'float' }, -0), 'FF 80');
    assert.equal(single({ kind: 'uint' }, 2n ** 64n - 1n), 'F8 FF FF FF FF FF FF FF FF');
    assert.equal(single({ kind: 'int' }, -(2n ** 63n)), 'F8 FF FF FF FF FF FF FF FF');
  });

  it('time layout: time.Time binary of 2023-11-14T22:13:20Z in UTC', () => {
    assert.equal(hex(t1700000000), '01 00 00 00 0E DC E5 E8 00 00 00 00 00 FF FF');
  });
});

describe('Go decodes the doc examples and the encoder output to the same Go values', () => {
  it('a Measurement reply', () => {
    const doc = docBytes(`10 FF 8B 05 01 01 04 54 69 6D 65 01 FF 8C 00 00 00
      0E FF 8D 04 01 02 FF 8E 00 01 0C 01 0C 00 00
      74 FF 8F 03 01 01 0B "Measurement" 01 FF 90 00 01 07
        01 05 "Phase" 01 0C 00   01 07 "Message" 01 0C 00   01 09 "StartedAt" 01 FF 8C 00
        01 0A "FinishedAt" 01 FF 8C 00   01 05 "Value" 01 0C 00   01 08 "Metadata" 01 FF 8E 00
        01 08 "ResumeAt" 01 FF 8C 00 00 00
      3B FF 90 01 0A "Successful" 02 0F 01 00 00 00 0E DC E5 E8 00 00 00 00 00 FF FF
        01 0F 01 00 00 00 0E DC E5 E8 00 00 00 00 00 FF FF 01 02 "42" 01 01 01 "k" 01 "v" 00`);
    const value = {
      Phase: 'Successful',
      StartedAt: t1700000000,
      FinishedAt: t1700000000,
      Value: '42',
      Metadata: new Map([['k', 'v']]),
    };
    const ours = new GobEncoder().encode(measurement, value);
    const fromDoc = goValues(['Measurement'], doc);
    assert.deepStrictEqual(goValues(['Measurement'], ours), fromDoc);
    const [m] = fromDoc as [Record<string, GobValue>];
    assert.equal(m.Phase, 'Successful');
    assert.deepStrictEqual((m.StartedAt as GobOpaque).bytes, t1700000000);
    // Our decoder reads both streams to the same generic value (modulo the wire names of the time type).
    const [a] = decodeAll(doc) as [Record<string, GobValue>];
    const [b] = decodeAll(ours) as [Record<string, GobValue>];
    assert.deepStrictEqual(Object.keys(a), Object.keys(b));
    assert.deepStrictEqual(a.Metadata, b.Metadata);
    assert.deepStrictEqual(a.StartedAt, b.StartedAt);
  });

  it('a step Run reply (after the RpcError definition of the InitPlugin reply)', () => {
    const rpcErrorDef = docBytes(`26 FF 83 03 01 01 08 52 70 63 45 72 72 6F 72 01 FF 84 00 01 01
      01 0B 45 72 72 6F 72 53 74 72 69 6E 67 01 0C 00 00 00   03 FF 84 00`);
    const doc = docBytes(`4D FF 87 03 01 01 0D "RpcStepResult" 01 FF 88 00 01 04
        01 05 "Phase" 01 0C 00  01 07 "Message" 01 0C 00  01 0C "RequeueAfter" 01 04 00
        01 06 "Status" 01 0A 00 00 00
      2D FF 89 03 01 01 08 "Response" 01 FF 8A 00 01 02
        01 06 "Result" 01 FF 88 00  01 05 "Error" 01 FF 84 00 00 00
      29 FF 8A 01 01 07 "Running" 01 07 "waiting" 01 FB 0D F8 47 58 00 01 07 7B 22 6E 22 3A 31 7D 00
        01 00 00`);
    const value = {
      Result: {
        Phase: 'Running',
        Message: 'waiting',
        RequeueAfter: 30_000_000_000,
        Status: Buffer.from('{"n":1}'),
      },
      Error: {},
    };
    const e = new GobEncoder();
    const ours = concat(e.encode(rpcError, {}), e.encode(stepResponse, value));
    const fromDoc = goValues(['RpcError', 'StepResponse'], concat(rpcErrorDef, doc));
    assert.deepStrictEqual(goValues(['RpcError', 'StepResponse'], ours), fromDoc);
    assert.deepStrictEqual(fromDoc[1], {
      Result: {
        Phase: 'Running',
        Message: 'waiting',
        RequeueAfter: 30_000_000_000,
        Status: new Uint8Array(Buffer.from('{"n":1}')),
      },
      Error: {},
    });
  });

  it('the first call: InitPlugin request as the controller sends it', () => {
    const doc = docBytes(`2F FF 81 03 01 01 07 52 65 71 75 65 73 74 01 FF 82 00 01 02
      01 0D 53 65 72 76 69 63 65 4D 65 74 68 6F 64 01 0C 00  01 03 53 65 71 01 06 00 00 00
      16 FF 82 01 11 "Plugin.InitPlugin" 00
      03 10 00 00
      11 FF 82 01 0A "Plugin.Run" 01 01 00`);
    assert.deepStrictEqual(goValues(['Request', 'Any', 'Request'], doc), [
      { ServiceMethod: 'Plugin.InitPlugin' },
      null,
      { ServiceMethod: 'Plugin.Run', Seq: 1 },
    ]);
    assert.deepStrictEqual(decodeAll(doc), [
      { ServiceMethod: 'Plugin.InitPlugin' },
      null,
      { ServiceMethod: 'Plugin.Run', Seq: 1 },
    ]);
  });
});

describe('Go accepts the encoder output', () => {
  it('a reply stream: definitions once, then values only', () => {
    const e = new GobEncoder();
    const run = {
      Result: { Phase: 'Successful', Message: 'done', Status: Buffer.from('{"zone":"a","applied":true}') },
      Error: {},
    };
    const failed = { Result: {}, Error: { ErrorString: 'retry later: ünïcode ✓' } };
    const first = [
      e.encode(responseHeader, { ServiceMethod: 'Plugin.Run', Seq: 1 }),
      e.encode(stepResponse, run),
    ];
    const second = [
      e.encode(responseHeader, { ServiceMethod: 'Plugin.Run', Seq: 2 }),
      e.encode(stepResponse, failed),
    ];
    // Once sent, a type is never described again: the later messages start with the positive type id.
    assert.deepStrictEqual([...second[0]!.subarray(1, 3)], [0xff, 0x82]);
    assert.deepStrictEqual([...second[1]!.subarray(1, 3)], [0xff, 0x84]); // the step Response is id 66
    const stream = concat(...first, ...second);
    const expected = [
      { ServiceMethod: 'Plugin.Run', Seq: 1 },
      {
        Result: { Phase: 'Successful', Message: 'done', Status: new Uint8Array(run.Result.Status) },
        Error: {},
      },
      { ServiceMethod: 'Plugin.Run', Seq: 2 },
      { Result: {}, Error: { ErrorString: 'retry later: ünïcode ✓' } },
    ];
    assert.deepStrictEqual(
      goValues(['Response', 'StepResponse', 'Response', 'StepResponse'], stream),
      expected,
    );
    assert.deepStrictEqual(decodeAll(stream), expected);
  });

  it('Measurement with times, metadata and omitted fields', () => {
    const started = encodeGoTime({ unixSeconds: 1767225600n, nanos: 123_456_789, offsetSeconds: null });
    const resume = encodeGoTime({ unixSeconds: 1767225630n, nanos: 0, offsetSeconds: null });
    const value = {
      Phase: 'Running',
      StartedAt: started,
      ResumeAt: resume,
      Metadata: { zone: 'a', drained: 'false' },
    };
    const [m] = goValues(['Measurement'], new GobEncoder().encode(measurement, value)) as [
      Record<string, GobValue>,
    ];
    assert.deepStrictEqual(Object.keys(m).sort(), ['Metadata', 'Phase', 'ResumeAt', 'StartedAt']);
    assert.deepStrictEqual((m.StartedAt as GobOpaque).bytes, started);
    assert.deepStrictEqual(decodeGoTime((m.ResumeAt as GobOpaque).bytes), decodeGoTime(resume));
    assert.deepStrictEqual(
      m.Metadata,
      new Map([
        ['zone', 'a'],
        ['drained', 'false'],
      ]),
    );
  });

  it('an empty struct reply, and an empty map that is still sent', () => {
    const e = new GobEncoder();
    const stream = concat(e.encode(emptyStruct, {}), e.encode(measurement, { Metadata: new Map() }));
    assert.deepStrictEqual(goValues(['Empty', 'Measurement'], stream), [{}, { Metadata: new Map() }]);
  });

  it('top-level basics at their edges', () => {
    const e = new GobEncoder();
    const cases: [string, GobSchema, unknown, GobValue][] = [
      ['Int64', { kind: 'int' }, 2n ** 63n - 1n, 2n ** 63n - 1n],
      ['Int64', { kind: 'int' }, -(2n ** 63n), -(2n ** 63n)],
      ['Int64', { kind: 'int' }, -1, -1],
      ['Int64', { kind: 'int' }, 0, 0],
      ['Uint64', { kind: 'uint' }, 2n ** 64n - 1n, 2n ** 64n - 1n],
      ['Uint64', { kind: 'uint' }, 2 ** 53, 2n ** 53n],
      ['Uint32', { kind: 'uint' }, 0xffffffff, 0xffffffff],
      ['Float64', { kind: 'float' }, Number.NaN, Number.NaN],
      ['Float64', { kind: 'float' }, -0, -0],
      ['Float64', { kind: 'float' }, Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY],
      ['Float64', { kind: 'float' }, 0.1, 0.1],
      ['Float64', { kind: 'float' }, 5e-324, 5e-324],
      ['Bool', { kind: 'bool' }, false, false],
      ['String', str, 'héllo ✓ 𝄞 \u{feff}', 'héllo ✓ 𝄞 \u{feff}'],
      ['Bytes', { kind: 'bytes' }, new Uint8Array(0), new Uint8Array(0)],
      ['Bytes', { kind: 'bytes' }, Uint8Array.from([0, 255]), Uint8Array.from([0, 255])],
      ['Strings', { kind: 'slice', elem: str }, [], []],
      ['Strings', { kind: 'slice', elem: str }, ['a', ''], ['a', '']],
      [
        'StringMap',
        stringMap,
        { a: '1', b: '' },
        new Map([
          ['a', '1'],
          ['b', ''],
        ]),
      ],
      [
        'IntMap',
        { kind: 'map', key: { kind: 'int' }, elem: { kind: 'slice', elem: { kind: 'uint' } } },
        new Map<unknown, unknown>([
          [-5, [1, 2n ** 64n - 1n]],
          [2n ** 62n, []],
        ]),
        new Map<GobValue, GobValue>([
          [-5, [1, 2n ** 64n - 1n]],
          [2n ** 62n, []],
        ]),
      ],
      ['Inner', inner, { Name: 'n', Score: -2.5, Tags: ['x'] }, { Name: 'n', Score: -2.5, Tags: ['x'] }],
      ['Inner', inner, { Name: '', Score: -0, Tags: [] }, {}],
    ];
    const stream = concat(...cases.map(([, schema, v]) => e.encode(schema, v)));
    const want = cases.map(([, , , expected]) => expected);
    assert.deepStrictEqual(
      goValues(
        cases.map(([t]) => t),
        stream,
      ),
      want,
    );
    assert.deepStrictEqual(decodeAll(stream), want);
  });
});

describe('encoder state and errors', () => {
  it('allocates ids from 65 per encoder and never re-sends a definition', () => {
    const a = new GobEncoder();
    const b = new GobEncoder();
    assert.deepStrictEqual(a.encode(rpcError, {}), b.encode(rpcError, {}));
    assert.equal(hex(a.encode(rpcError, {})), '03 FF 82 00');
  });

  it('shares one definition between equal schemas built separately', () => {
    const e = new GobEncoder();
    const copy = structuredClone(rpcError);
    e.encode(rpcError, {});
    assert.equal(hex(e.encode(copy, { ErrorString: 'x' })), '06 FF 82 01 01 78 00');
    const other: GobSchema = { kind: 'struct', name: 'RpcError', fields: [{ name: 'Other', type: str }] };
    const defined = e.encode(other, {});
    assert.deepStrictEqual(
      [...defined.subarray(1, 3)],
      [0xff, 0x83],
      'a different struct gets its own id, 66',
    );
  });

  it('sends parent definitions before their field types (Go order) and nested types once', () => {
    const e = new GobEncoder();
    const bytes = e.encode(stepResponse, { Result: {}, Error: {} });
    const ids: number[] = [];
    const d = new GobDecoder();
    d.push(bytes);
    assert.deepStrictEqual(d.next(), { Result: {}, Error: {} });
    for (let p = 0; p < bytes.length; ) {
      const len = bytes[p]!;
      ids.push(bytes[p + 2]!); // every id here is a two-byte int (FF xx)
      p += 1 + len;
    }
    assert.deepStrictEqual(ids, [0x81, 0x83, 0x85, 0x82]); // -65 Response, -66 RpcStepResult, -67 RpcError, then 65
  });

  it('rejects values that do not fit the schema, emitting nothing and keeping its state', () => {
    const e = new GobEncoder();
    const bad: [GobSchema, unknown, RegExp][] = [
      [measurement, { Phase: 7 }, /Measurement\.Phase: expected a string/],
      [measurement, { phase: 'Running' }, /no field "phase"/],
      [measurement, { StartedAt: '2024-01-01' }, /StartedAt: expected a Uint8Array/],
      [measurement, { Metadata: new Map([['k', 1]]) }, /Metadata\["k"\]: expected a string/],
      [stepResponse, { Result: { RequeueAfter: 1.5 } }, /RequeueAfter: expected an int64/],
      [stepResponse, { Result: { RequeueAfter: 2 ** 63 } }, /int64/],
      [stepResponse, { Result: [] }, /expected a plain object/],
      [{ kind: 'uint' }, -1, /uint64/],
      [{ kind: 'uint' }, 2n ** 64n, /uint64/],
      [{ kind: 'int' }, Number.NaN, /int64/],
      [{ kind: 'slice', elem: str }, ['a', null], /\[1\]: nil element/],
      [{ kind: 'map', key: { kind: 'int' }, elem: str }, { 1: 'a' }, /expected a Map/],
      [str, null, /nil value/],
      [{ kind: 'struct', name: 'Bad', fields: [{ name: 'lower', type: str }] }, {}, /not exported/],
      [
        {
          kind: 'struct',
          name: 'Dup',
          fields: [
            { name: 'A', type: str },
            { name: 'A', type: str },
          ],
        },
        {},
        /duplicate/,
      ],
      [{ kind: 'gobEncoder', name: '' }, new Uint8Array(1), /type name/],
    ];
    for (const [schema, value, pattern] of bad) {
      assert.throws(
        () => e.encode(schema, value),
        (err: unknown) => err instanceof GobError && err.kind === 'encode' && pattern.test(err.message),
        `${JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v))} should fail with ${pattern}`,
      );
    }
    // None of the failed calls allocated an id or marked a type as sent.
    assert.deepStrictEqual(e.encode(rpcError, {}), new GobEncoder().encode(rpcError, {}));
  });

  it('rejects recursive schemas', () => {
    const node: { kind: 'struct'; name: string; fields: { name: string; type: GobSchema }[] } = {
      kind: 'struct',
      name: 'Node',
      fields: [],
    };
    node.fields.push({ name: 'Next', type: { kind: 'slice', elem: node } });
    assert.throws(() => new GobEncoder().encode(node, {}), { code: 'ProtocolError', kind: 'encode' });
  });

  it('omits zero fields and sends present structs, maps and gobEncoder values', () => {
    const e = new GobEncoder();
    const schema: GobSchema = {
      kind: 'struct',
      name: 'Z',
      fields: [
        { name: 'B', type: { kind: 'bool' } },
        { name: 'I', type: { kind: 'int' } },
        { name: 'F', type: { kind: 'float' } },
        { name: 'S', type: str },
        { name: 'Bs', type: { kind: 'bytes' } },
        { name: 'L', type: { kind: 'slice', elem: str } },
        { name: 'M', type: stringMap },
        { name: 'In', type: rpcError },
        { name: 'T', type: time },
      ],
    };
    const zero = {
      B: false,
      I: 0n,
      F: -0,
      S: '',
      Bs: new Uint8Array(0),
      L: [],
      M: undefined,
      In: undefined,
      T: null,
    };
    const [a] = decodeAll(e.encode(schema, zero));
    assert.deepStrictEqual(a, {});
    const [b] = decodeAll(new GobEncoder().encode(schema, { M: {}, In: {}, T: t1700000000 }));
    assert.deepStrictEqual(b, { M: new Map(), In: {}, T: new GobOpaque('GobEncoder', 'Time', t1700000000) });
  });
});
