// Which samples of the load generator's stream a vmagent SIGKILL may cost (faults.ts restartVmagent), counted apart
// by the sample check (invariants.ts lostSamples): they are lost before vmzones' part of the path, not by it.

/**
 * The sequence numbers vmagent may not have taken around its SIGKILL: from a few before the kill (what it had
 * accepted but not yet written to its on-disk queue, a flush interval of 1 s) to the first batch it accepted after
 * answering /health again (+ 2 for pushes still in flight). The load generator (test/sandbox/loadgen.ts) does not
 * retry a refused batch, and its `lastSeq` is the last batch accepted, so right after /health answers it can still
 * be the one from before the kill: the window ends only once `lastSeq` moved past that value, or after `attempts`
 * polls (then at what was accepted last: the samples after it are reported lost, vmagent never took them again).
 */
export async function vmagentOutageSeqs(
  lastSeqBeforeKill: number,
  readLastSeq: () => Promise<number>,
  wait: () => Promise<void>,
  attempts = 60,
): Promise<{ from: number; to: number }> {
  const atHealth = await readLastSeq();
  let latest = atHealth;
  for (let i = 0; i < attempts && latest <= atHealth; i++) {
    await wait();
    latest = await readLastSeq();
  }
  return { from: lastSeqBeforeKill - 3, to: latest + 2 };
}
