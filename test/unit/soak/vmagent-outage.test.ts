// The soak's excuse for samples a vmagent SIGKILL costs (test/soak/vmagent-outage.ts). Seed 4242's walk 10 reported
// `sample-lost` (13 sequence numbers missing in all four zones) after vmagent was SIGKILLed and took 14.8 s to answer
// /health again: the load generator counted 15 refused batches, but the excused window ended at the last batch
// accepted *before* the kill, read right after /health answered. These samples never reached vmagent, so no zone
// could have them; a soak that calls them lost blames vmzones for its own fault.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lostSamples } from '../../soak/invariants.ts';
import { vmagentOutageSeqs } from '../../soak/vmagent-outage.ts';

/** A load generator pushing one batch per poll: batches `refused` fail, the others are accepted (lastSeq). */
function loadgen(firstSeq: number, refused: { from: number; to: number }) {
  let seq = firstSeq;
  let lastSeq = firstSeq;
  const taken = new Set<number>();
  for (let s = 1; s <= firstSeq; s++) taken.add(s);
  return {
    taken,
    readLastSeq: async () => lastSeq,
    tick: async () => {
      seq++;
      if (seq < refused.from || seq > refused.to) {
        lastSeq = seq;
        taken.add(seq);
      }
    },
  };
}

test('a vmagent SIGKILL: the batches refused until it accepts again are counted apart, not lost', async () => {
  // Killed after batch 100; batches 101..115 refused (15, as in seed 4242's walk 10); /health answers during 115.
  const gen = loadgen(100, { from: 101, to: 115 });
  for (let i = 0; i < 15; i++) await gen.tick();
  const window = await vmagentOutageSeqs(100, gen.readLastSeq, gen.tick);
  for (let i = 0; i < 5; i++) await gen.tick();
  const seqs = Object.fromEntries(['zone-a', 'zone-b'].map((z) => [z, gen.taken]));
  const result = lostSamples(seqs, 90, 118, [window]);
  assert.equal(result.lost, 0, `samples vmagent refused while down reported lost: ${result.detail}`);
  assert.equal(result.excused, 2 * 15, 'the 15 refused batches, in each zone, counted apart');
});

test('a sample missing after vmagent accepted again is still lost', async () => {
  const gen = loadgen(100, { from: 101, to: 105 });
  for (let i = 0; i < 5; i++) await gen.tick();
  const window = await vmagentOutageSeqs(100, gen.readLastSeq, gen.tick);
  for (let i = 0; i < 10; i++) await gen.tick();
  const zoneB = new Set(gen.taken);
  zoneB.delete(115); // lost on the way to zone-b, well after vmagent answered again
  const result = lostSamples({ 'zone-a': gen.taken, 'zone-b': zoneB }, 90, 115, [window]);
  assert.equal(result.lost, 1, result.detail);
  assert.match(result.detail, /zone-b: 1 missing \(first 115\)/);
});
