// Profiles the in-process part of one Plugin.Run: gob decode of the bench's Run request body and the typed
// Rollout view, on the streams `bin/bench -dump-gob DIR` writes. By hand:
//   ./test/bench/bin/bench -node x -bundle x -sample x -dump-gob /tmp/g
//   ./node_modules/.bin/node [--cpu-prof] test/bench/decode-profile.ts /tmp/g/field-heavy.gob [rounds] [full]
// Decodes like vmzones (the fields no view reads walked, not built); `full` builds every field instead.
import { readFileSync } from 'node:fs';
import { GobDecoder } from '../../plugin/goplugin/gob/index.ts';
import { rolloutView, unreadFields } from '../../plugin/rollouts/views.ts';
import { unwrapInterface } from '../../plugin/rollouts/wire-read.ts';

const stream = new Uint8Array(readFileSync(process.argv[2] ?? '/tmp/perfgob/field-heavy.gob'));
const rounds = Number(process.argv[3] ?? 3000);
// The first value carries the type definitions; time the second (what every later call costs).
const probe = new GobDecoder();
probe.push(stream);
probe.next();
const firstEnd = stream.length - probe.bufferedBytes;
const steady = stream.subarray(firstEnd);
const decoder = new GobDecoder(undefined, process.argv[4] === 'full' ? undefined : unreadFields);
decoder.push(stream.subarray(0, firstEnd));
decoder.next();
const decodeNs: number[] = [];
const viewNs: number[] = [];
let cpu = process.cpuUsage();
for (let i = 0; i < rounds; i++) {
  if (i === Math.ceil(rounds / 10)) cpu = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  decoder.push(steady);
  const body = decoder.next();
  const t1 = process.hrtime.bigint();
  const args = unwrapInterface(body!, 'step.RunArgs');
  rolloutView(args.struct('Rollout'));
  args.struct('Context').json('Config');
  const t2 = process.hrtime.bigint();
  if (i >= rounds / 10) {
    decodeNs.push(Number(t1 - t0));
    viewNs.push(Number(t2 - t1));
  }
}
const median = (xs: number[]) => (xs.sort((a, b) => a - b)[xs.length >> 1]! / 1e6).toFixed(3);
const used = process.cpuUsage(cpu);
const cpuMs = ((used.user + used.system) / 1000 / decodeNs.length).toFixed(3);
console.log(
  `${steady.length} B per value, median of ${decodeNs.length}: decode ${median(decodeNs)} ms, view ${median(viewNs)} ms; CPU per call ${cpuMs} ms`,
);
