// Decoder/encoder speed on Go-generated streams. Not a test (no timing assertions): run it by hand with
//   ./node_modules/.bin/node test/unit/gob/bench.ts
// and read the figures.

import { GobDecoder, GobEncoder, type GobSchema } from '../../../plugin/goplugin/gob/index.ts';
import { readCase } from './go-vectors.ts';

function measure(label: string, rounds: number, fn: () => void): void {
  for (let i = 0; i < Math.min(rounds, 20); i++) fn(); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) fn();
  const perRound = Number(process.hrtime.bigint() - start) / rounds / 1e6;
  console.log(`${label.padEnd(58)} ${perRound.toFixed(3)} ms`);
}

function decodeStream(stream: Uint8Array, chunk: number): number {
  const d = new GobDecoder();
  let n = 0;
  for (let p = 0; p < stream.length; p += chunk) {
    d.push(stream.subarray(p, p + chunk));
    while (d.next() !== undefined) n++;
  }
  return n;
}

const big = readCase('big').stream;
const realistic = readCase('realistic').stream;
measure(`decode big.gob (one ${(big.length / 1048576).toFixed(2)} MiB message), one push`, 50, () => {
  decodeStream(big, big.length);
});
measure('decode big.gob in 16 KiB chunks (yamux-sized)', 50, () => {
  decodeStream(big, 16384);
});
measure(`decode realistic.gob (${realistic.length} B, 6 values), one push`, 2000, () => {
  decodeStream(realistic, realistic.length);
});
measure('decode realistic.gob pushed byte by byte', 50, () => {
  decodeStream(realistic, 1);
});

const str = { kind: 'string' } as const;
const measurement: GobSchema = {
  kind: 'struct',
  name: 'Measurement',
  fields: [
    { name: 'Phase', type: str },
    { name: 'Message', type: str },
    { name: 'StartedAt', type: { kind: 'gobEncoder', name: 'Time' } },
    { name: 'Value', type: str },
    { name: 'Metadata', type: { kind: 'map', key: str, elem: str } },
  ],
};
const encoder = new GobEncoder();
const value = { Phase: 'Successful', Value: '42', StartedAt: new Uint8Array(15), Metadata: { zone: 'a' } };
encoder.encode(measurement, value);
measure('encode a Measurement reply (definitions already sent)', 20000, () => {
  encoder.encode(measurement, value);
});
