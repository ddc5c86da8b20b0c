// The decoder's ignored fields (views.ts unreadFields): a Rollout decoded with them gives the same views as one
// decoded in full, everything else in the value is unchanged, and corrupt bytes inside an ignored field still fail.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  encodeGoTime,
  GobDecoder,
  GobEncoder,
  type GobSchema,
  type GobStruct,
  type GobValue,
} from '../../../plugin/goplugin/gob/index.ts';
import { analysisRunView, rolloutView, unreadFields } from '../../../plugin/rollouts/views.ts';
import { WireStruct } from '../../../plugin/rollouts/wire-read.ts';

const str = { kind: 'string' } as const satisfies GobSchema;
const int = { kind: 'int' } as const satisfies GobSchema;
const time: GobSchema = { kind: 'gobEncoder', name: 'Time' };
const stringMap: GobSchema = { kind: 'map', name: 'map[string]string', key: str, elem: str };
const managedField: GobSchema = {
  kind: 'struct',
  name: 'ManagedFieldsEntry',
  fields: [
    { name: 'Manager', type: str },
    { name: 'Time', type: time },
    { name: 'FieldsV1', type: { kind: 'bytes' } },
  ],
};
const objectMeta: GobSchema = {
  kind: 'struct',
  name: 'ObjectMeta',
  fields: [
    { name: 'Name', type: str },
    { name: 'Namespace', type: str },
    { name: 'UID', type: str },
    { name: 'Generation', type: int },
    { name: 'Labels', type: stringMap },
    { name: 'Annotations', type: stringMap },
    { name: 'OwnerReferences', type: { kind: 'slice', elem: stringMap } },
    { name: 'Finalizers', type: { kind: 'slice', elem: str } },
    { name: 'ManagedFields', type: { kind: 'slice', elem: managedField } },
    { name: 'CreationTimestamp', type: time },
  ],
};
const container: GobSchema = {
  kind: 'struct',
  name: 'Container',
  fields: [
    { name: 'Name', type: str },
    { name: 'Args', type: { kind: 'slice', elem: str } },
    { name: 'Env', type: stringMap },
    { name: 'CPU', type: { kind: 'float' } },
    { name: 'Privileged', type: { kind: 'bool' } },
    { name: 'Big', type: { kind: 'uint' } },
    { name: 'Offset', type: int },
  ],
};
const podTemplate: GobSchema = {
  kind: 'struct',
  name: 'PodTemplateSpec',
  fields: [
    { name: 'ObjectMeta', type: objectMeta },
    {
      name: 'Spec',
      type: {
        kind: 'struct',
        name: 'PodSpec',
        fields: [{ name: 'Containers', type: { kind: 'slice', elem: container } }],
      },
    },
  ],
};
const step: GobSchema = {
  kind: 'struct',
  name: 'CanaryStep',
  fields: [
    { name: 'SetWeight', type: int },
    {
      name: 'Plugin',
      type: {
        kind: 'struct',
        name: 'PluginStep',
        fields: [
          { name: 'Name', type: str },
          { name: 'Config', type: { kind: 'bytes' } },
        ],
      },
    },
  ],
};
const rollout: GobSchema = {
  kind: 'struct',
  name: 'Rollout',
  fields: [
    { name: 'ObjectMeta', type: objectMeta },
    {
      name: 'Spec',
      type: {
        kind: 'struct',
        name: 'RolloutSpec',
        fields: [
          { name: 'Template', type: podTemplate },
          {
            name: 'Strategy',
            type: {
              kind: 'struct',
              name: 'RolloutStrategy',
              fields: [
                {
                  name: 'Canary',
                  type: {
                    kind: 'struct',
                    name: 'CanaryStrategy',
                    fields: [{ name: 'Steps', type: { kind: 'slice', elem: step } }],
                  },
                },
              ],
            },
          },
        ],
      },
    },
    {
      name: 'Status',
      type: {
        kind: 'struct',
        name: 'RolloutStatus',
        fields: [
          { name: 'CurrentStepIndex', type: int },
          { name: 'Phase', type: str },
        ],
      },
    },
  ],
};

const at = encodeGoTime({ unixSeconds: 1700000000n, nanos: 5, offsetSeconds: null });
const meta = (name: string) => ({
  Name: name,
  Namespace: 'monitoring',
  UID: 'u-1',
  Generation: 3,
  Labels: new Map([['app', 'vm']]),
  Annotations: new Map([['vmzones.io/spec', '{"zones":[]}']]),
  OwnerReferences: [new Map([['kind', 'Deployment']])],
  Finalizers: ['vmzones.io/cleanup'],
  ManagedFields: [{ Manager: 'kubectl', Time: at, FieldsV1: new Uint8Array([123, 125]) }],
  CreationTimestamp: at,
});
const value = {
  ObjectMeta: meta('walk'),
  Spec: {
    Template: {
      ObjectMeta: meta(''),
      Spec: {
        Containers: [0, 1, 2].map((i) => ({
          Name: `vmstorage-${i}`,
          Args: ['-retentionPeriod=1y', `-n=${i}`],
          Env: new Map([['GOMAXPROCS', '2']]),
          CPU: 0.25 * (i + 1),
          Privileged: i === 1,
          Big: 2n ** 60n + BigInt(i),
          Offset: -(2 ** 40) - i,
        })),
      },
    },
    Strategy: {
      Canary: {
        Steps: [
          { SetWeight: 20 },
          { Plugin: { Name: 'vmzones/step', Config: new TextEncoder().encode('{"a":1}') } },
        ],
      },
    },
  },
  Status: { CurrentStepIndex: 1, Phase: 'Progressing' },
};

/** Two values on one stream (the second without type definitions, as in every later Plugin.Run). */
function stream(): Uint8Array[] {
  const e = new GobEncoder();
  return [e.encode(rollout, value), e.encode(rollout, value)];
}

function decodeAll(chunks: Uint8Array[], ignored?: typeof unreadFields): GobValue[] {
  const d = new GobDecoder(undefined, ignored);
  const out: GobValue[] = [];
  for (const chunk of chunks) {
    d.push(chunk);
    for (let v = d.next(); v !== undefined; v = d.next()) out.push(v);
  }
  return out;
}

/** A full decode with the ignored fields deleted by hand. */
function withoutIgnored(full: GobStruct): GobStruct {
  const copy = full as Record<string, Record<string, Record<string, unknown>>>;
  const metas = [copy.ObjectMeta, copy.Spec!.Template!.ObjectMeta] as Record<string, unknown>[];
  for (const m of metas) for (const f of unreadFields.ObjectMeta!) delete m[f];
  delete (copy.Spec!.Template as Record<string, unknown>).Spec;
  return copy as unknown as GobStruct;
}

describe('decoding with the fields no view reads ignored', () => {
  it('gives the same Rollout view as a full decode, for the first and a later value', () => {
    const full = decodeAll(stream());
    const lean = decodeAll(stream(), unreadFields);
    assert.equal(lean.length, 2);
    for (let i = 0; i < 2; i++) {
      assert.deepStrictEqual(
        rolloutView(new WireStruct(lean[i], 'Rollout')),
        rolloutView(new WireStruct(full[i], 'Rollout')),
      );
      assert.deepStrictEqual(lean[i], withoutIgnored(decodeAll(stream())[i] as GobStruct));
    }
    // The view reads what the lean decode kept: not a vacuous comparison of two empty views.
    const view = rolloutView(new WireStruct(lean[1], 'Rollout'));
    assert.equal(view.metadata.name, 'walk');
    assert.equal(view.metadata.creationTimestamp, '2023-11-14T22:13:20Z');
    assert.deepEqual(view.spec.template.metadata.annotations, { 'vmzones.io/spec': '{"zones":[]}' });
    assert.equal(view.spec.strategy.canary?.steps?.[1]?.plugin?.name, 'vmzones/step');
    assert.equal(view.status.currentStepIndex, 1);
  });

  it('only names fields of the views: an AnalysisRun keeps its metadata view too', () => {
    const lean = decodeAll(stream(), unreadFields);
    const full = decodeAll(stream());
    assert.deepStrictEqual(
      analysisRunView(new WireStruct(lean[0], 'AnalysisRun')).metadata,
      analysisRunView(new WireStruct(full[0], 'AnalysisRun')).metadata,
    );
  });

  it('still fails on corrupt bytes inside an ignored field, with the same error as a full decode', () => {
    const [first] = stream();
    const bytes = first!.slice();
    // The container name "vmstorage-1" is inside the ignored pod spec: make its length a 16-byte uint.
    const name = new TextEncoder().encode('vmstorage-1');
    const start = bytes.findIndex((_, i) => name.every((b, j) => bytes[i + j] === b));
    assert.ok(start > 0 && bytes[start - 1] === name.length);
    bytes[start - 1] = 0xf0;
    const errorOf = (ignored?: typeof unreadFields) => {
      try {
        decodeAll([bytes], ignored);
      } catch (error) {
        return (error as Error).message;
      }
      return 'no error';
    };
    const full = errorOf();
    assert.match(full, /uint wider than 8 bytes \(prefix 0xf0\)/);
    assert.equal(errorOf(unreadFields), full);
  });
});
