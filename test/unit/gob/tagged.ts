// Tagged JSON (written by test/vectors/gob/tag.go) → the GobValue the TypeScript decoder must produce.

import { GobInterface, GobOpaque, type GobValue } from '../../../plugin/goplugin/gob/index.ts';

export type Tagged =
  | { t: 'bool'; v: boolean }
  | { t: 'int' | 'uint'; v: string }
  | { t: 'float'; bits: string }
  | { t: 'complex'; re: string; im: string }
  | { t: 'string'; v: string }
  | { t: 'bytes'; b64: string }
  | { t: 'slice' | 'array'; v: Tagged[] }
  | { t: 'map'; v: [Tagged, Tagged][] }
  | { t: 'struct'; f: Record<string, Tagged> }
  | { t: 'iface'; name: string; v: Tagged }
  | { t: 'nil' }
  | { t: 'opaque'; kind: GobOpaque['kind']; type: string; b64: string };

function floatFromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

/** Integers within ±(2^53 − 1) are numbers, larger ones bigints — the decoder's rule. */
export function exactInteger(text: string): number | bigint {
  const big = BigInt(text);
  return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
}

export function bytesFromBase64(b64: string): Uint8Array {
  return new Uint8Array(Buffer.from(b64, 'base64'));
}

export function fromTagged(t: Tagged): GobValue {
  switch (t.t) {
    case 'bool':
    case 'string':
      return t.v;
    case 'int':
    case 'uint':
      return exactInteger(t.v);
    case 'float':
      return floatFromBits(t.bits);
    case 'complex':
      return { real: floatFromBits(t.re), imag: floatFromBits(t.im) };
    case 'bytes':
      return bytesFromBase64(t.b64);
    case 'slice':
    case 'array':
      return t.v.map(fromTagged);
    case 'map':
      return new Map(t.v.map(([k, v]) => [fromTagged(k), fromTagged(v)]));
    case 'struct': {
      const out: Record<string, GobValue> = {};
      for (const [name, v] of Object.entries(t.f)) out[name] = fromTagged(v);
      return out;
    }
    case 'iface':
      return new GobInterface(t.name, fromTagged(t.v));
    case 'nil':
      return null;
    case 'opaque':
      return new GobOpaque(t.kind, t.type, bytesFromBase64(t.b64));
  }
}
