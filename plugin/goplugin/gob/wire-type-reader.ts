// Decodes a wireType (predefined gob type 16) from the current message. Go decodes it with its ordinary struct
// machinery, so this follows the same rules: field deltas, absent fields, a struct ends at delta 0 or at the
// end of the message, a field number past the struct's fields is an error.
//
// wireType       { 0 ArrayT *arrayType; 1 SliceT *sliceType; 2 StructT *structType; 3 MapT *mapType;
//                  4 GobEncoderT, 5 BinaryMarshalerT, 6 TextMarshalerT *gobEncoderType }
// CommonType     { 0 Name string; 1 Id typeId(int32) }
// arrayType      { 0 CommonType; 1 Elem typeId; 2 Len int }
// sliceType      { 0 CommonType; 1 Elem typeId }
// structType     { 0 CommonType; 1 Field []*fieldType }
// fieldType      { 0 Name string; 1 Id typeId }
// mapType        { 0 CommonType; 1 Key typeId; 2 Elem typeId }
// gobEncoderType { 0 CommonType }

import type { MessageCursor } from './cursor.ts';
import { GobError, type GobOpaque } from './types.ts';
import { WireDef } from './wire-types.ts';

const opaqueKinds: readonly GobOpaque['kind'][] = ['GobEncoder', 'BinaryMarshaler', 'TextMarshaler'];

/** Iterates the field numbers of one struct value; returns -1 at the end of the struct. */
function nextField(c: MessageCursor, previous: number, fieldCount: number, what: string): number {
  if (c.pos >= c.end) return -1;
  const delta = c.readUint();
  if (delta === 0) return -1;
  if (previous >= fieldCount - delta) throw new GobError('corrupt', `field number out of range in ${what}`);
  return previous + delta;
}

function readString(c: MessageCursor): string {
  return c.takeString(c.readLength('string'));
}

function readInt32(c: MessageCursor, what: string): number {
  const v = c.readIntExact();
  if (typeof v !== 'number' || v < -0x80000000 || v > 0x7fffffff) {
    throw new GobError('corrupt', `${what} out of the int32 range`);
  }
  return v;
}

function readCommonType(c: MessageCursor): { name: string; id: number } {
  const common = { name: '', id: 0 };
  for (let f = nextField(c, -1, 2, 'CommonType'); f >= 0; f = nextField(c, f, 2, 'CommonType')) {
    if (f === 0) common.name = readString(c);
    else common.id = readInt32(c, 'CommonType.Id');
  }
  return common;
}

function readFieldList(c: MessageCursor): { name: string; id: number }[] {
  const count = c.readUint();
  const fields: { name: string; id: number }[] = [];
  for (let i = 0; i < count; i++) {
    if (c.pos >= c.end) throw new GobError('corrupt', `field list of ${count} entries exceeds the message`);
    const field = { name: '', id: 0 };
    for (let f = nextField(c, -1, 2, 'fieldType'); f >= 0; f = nextField(c, f, 2, 'fieldType')) {
      if (f === 0) field.name = readString(c);
      else field.id = readInt32(c, 'fieldType.Id');
    }
    fields.push(field);
  }
  return fields;
}

/** Reads one wireType for the definition of `id`. */
export function readWireType(c: MessageCursor, id: number): WireDef {
  const def = new WireDef(id);
  for (let f = nextField(c, -1, 7, 'wireType'); f >= 0; f = nextField(c, f, 7, 'wireType')) {
    if (f === 0) {
      const t = { name: '', elem: 0, len: 0 };
      for (let g = nextField(c, -1, 3, 'arrayType'); g >= 0; g = nextField(c, g, 3, 'arrayType')) {
        if (g === 0) t.name = readCommonType(c).name;
        else if (g === 1) t.elem = readInt32(c, 'arrayType.Elem');
        else t.len = Number(c.readIntExact());
      }
      def.array = t;
    } else if (f === 1) {
      const t = { name: '', elem: 0 };
      for (let g = nextField(c, -1, 2, 'sliceType'); g >= 0; g = nextField(c, g, 2, 'sliceType')) {
        if (g === 0) t.name = readCommonType(c).name;
        else t.elem = readInt32(c, 'sliceType.Elem');
      }
      def.slice = t;
    } else if (f === 2) {
      const t = { name: '', fields: [] as { name: string; id: number }[] };
      for (let g = nextField(c, -1, 2, 'structType'); g >= 0; g = nextField(c, g, 2, 'structType')) {
        if (g === 0) t.name = readCommonType(c).name;
        else t.fields = readFieldList(c);
      }
      def.struct = t;
    } else if (f === 3) {
      const t = { name: '', key: 0, elem: 0 };
      for (let g = nextField(c, -1, 3, 'mapType'); g >= 0; g = nextField(c, g, 3, 'mapType')) {
        if (g === 0) t.name = readCommonType(c).name;
        else if (g === 1) t.key = readInt32(c, 'mapType.Key');
        else t.elem = readInt32(c, 'mapType.Elem');
      }
      def.map = t;
    } else {
      const t = { name: '', kind: opaqueKinds[f - 4]! };
      for (let g = nextField(c, -1, 1, 'gobEncoderType'); g >= 0; g = nextField(c, g, 1, 'gobEncoderType')) {
        t.name = readCommonType(c).name;
      }
      def.opaque = t;
    }
    def.kindsSet++;
  }
  return def;
}
