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
