// Shared test helpers for the gob tests.

import { GobDecoder, type GobValue } from '../../../plugin/goplugin/gob/index.ts';

/** Pushes the chunks one after another, draining every complete value after each push. */
export function decodeChunks(chunks: Iterable<Uint8Array>): { values: GobValue[]; decoder: GobDecoder } {
  const decoder = new GobDecoder();
  const values: GobValue[] = [];
  for (const chunk of chunks) {
    decoder.push(chunk);
    for (let v = decoder.next(); v !== undefined; v = decoder.next()) values.push(v);
  }
  return { values, decoder };
}

/** Deterministic PRNG (mulberry32) so failures reproduce. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
