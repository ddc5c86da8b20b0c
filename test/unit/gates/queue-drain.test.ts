import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type DrainRound,
  judgeQueueDrain,
  type PodScrape,
  QueueDrainConfigError,
  type QueueDrainInput,
} from '../../../plugin/gates/queue-drain.ts';
import type { PickedQueue, QueueFigureName } from '../../../plugin/vm/remote-write.ts';

const dirs = ['1_1C39D330F1670079', '2_F38B25BE2996618E'];
const path = `/vmagent_pq/vmagent-remotewrite-data/persistent-queue/${dirs[1]}`;
const t0 = Date.UTC(2026, 0, 1, 12, 0, 0);

type Figures = Partial<Record<QueueFigureName, number>>;

const quiet: Figures = {
  pendingDataBytes: 0,
  onDiskPendingBytes: 0,
  requests: 100,
  bytesSent: 10_000,
  retries: 5,
  errors: 1,
  packetsDropped: 0,
  onDiskBytesDropped: 0,
  onDiskBlocksDropped: 0,
};

function queue(figures: Figures, extra: Partial<PickedQueue> = {}): PickedQueue {
  return { figures, queuePaths: [path], missing: [], problems: [], allQueueDirNames: dirs, ...extra };
}

function ok(pod: string, figures: Figures, extra?: Partial<PickedQueue>): PodScrape {
  return { pod, ok: true, queue: queue(figures, extra) };
}

function down(pod: string, error = 'connect ECONNREFUSED 10.0.0.7:8429'): PodScrape {
  return { pod, ok: false, error };
}

function round(seconds: number, ...pods: PodScrape[]): DrainRound {
  return { at: t0 + seconds * 1000, pods };
}

/** A pod that delivers 10 requests and 1000 bytes per round and is otherwise quiet. */
function flowing(pod: string, step: number, overrides: Figures = {}): PodScrape {
  return ok(pod, { ...quiet, requests: 100 + 10 * step, bytesSent: 10_000 + 1000 * step, ...overrides });
}

function judge(rounds: DrainRound[], extra: Partial<QueueDrainInput> = {}) {
  return judgeQueueDrain({ pods: ['vm/agent-0', 'vm/agent-1'], queueIndex: 2, rounds, ...extra });
}

const threeGoodRounds = [0, 1, 2].map((step) =>
  round(step * 10, flowing('vm/agent-0', step), flowing('vm/agent-1', step)),
);

test('drained after K spaced rounds in which every pod is empty, delivering, and not retrying', () => {
  const verdict = judge(threeGoodRounds);
  assert.equal(verdict.verdict, 'drained', verdict.message);
  assert.match(verdict.message, /remote-write queue 2 drained on all 2 vmagent pods: 3 consecutive rounds/);
  assert.equal(verdict.figures.drained, true);
  assert.equal(verdict.figures.dataLost, false);
  assert.equal(verdict.figures.consecutiveGoodRounds, 3);
  assert.equal(verdict.figures.pendingDataBytes, 0);
  assert.equal(verdict.figures.onDiskPendingBytes, 0);
  assert.equal(verdict.figures.windowStart, new Date(t0).toISOString());
  assert.equal(verdict.figures.latestRoundAt, new Date(t0 + 20_000).toISOString());
  assert.deepEqual(verdict.figures.pods['vm/agent-1'], {
    reachable: true,
    queuePaths: [path],
    ...quiet,
    requests: 120,
    bytesSent: 12_000,
  });
  assert.doesNotThrow(() => JSON.stringify(verdict.figures));
});

test('needs K rounds: two good rounds are not enough, and K is configurable', () => {
  const verdict = judge(threeGoodRounds.slice(1));
  assert.equal(verdict.verdict, 'notDrained');
  assert.match(verdict.message, /looks drained in 2 of the 3 consecutive rounds \(at least 1\.5 s apart\)/);
  assert.equal(judge(threeGoodRounds.slice(1), { config: { consecutiveRounds: 2 } }).verdict, 'drained');
});

test('rounds closer than the minimum spacing do not count separately', () => {
  const at = (seconds: number[]) =>
    seconds.map((s, step) => round(s, flowing('vm/agent-0', step), flowing('vm/agent-1', step)));
  // The default spacing is 1.5 s (a flush interval and half a second for its send): rounds 1 s apart count every
  // other one, rounds 1.5 s apart each.
  assert.equal(judge(at([0, 1, 2, 3])).verdict, 'notDrained');
  assert.equal(judge(at([0, 1, 2, 3, 4])).verdict, 'drained');
  assert.equal(judge(at([0, 1.5, 3])).verdict, 'drained');
  assert.equal(judge(at([0, 1.4, 2.8])).verdict, 'notDrained');
  assert.equal(judge(at([0, 1, 2]), { config: { minRoundSpacingMs: 1000 } }).verdict, 'drained');
});

test('an unreachable pod means not drained, naming the pod and the error', () => {
  const rounds = [...threeGoodRounds, round(30, flowing('vm/agent-0', 3), down('vm/agent-1'))];
  const verdict = judge(rounds);
  assert.equal(verdict.verdict, 'notDrained');
  assert.match(verdict.message, /pod vm\/agent-1 is unreachable: connect ECONNREFUSED 10\.0\.0\.7:8429/);
  assert.deepEqual(verdict.figures.pods['vm/agent-1'], {
    reachable: false,
    error: 'connect ECONNREFUSED 10.0.0.7:8429',
  });
  assert.equal(verdict.figures.pendingDataBytes, null);
});

test('a bad round in the middle restarts the count', () => {
  const steps = [0, 1, 2, 3, 4];
  const rounds = steps.map((step) =>
    round(
      step * 10,
      flowing('vm/agent-0', step),
      step === 2 ? down('vm/agent-1', 'timeout') : flowing('vm/agent-1', step),
    ),
  );
  const verdict = judge(rounds);
  assert.equal(verdict.verdict, 'notDrained');
  assert.match(verdict.message, /2 of the 3/);
  const more = [...rounds, round(50, flowing('vm/agent-0', 5), flowing('vm/agent-1', 5))];
  assert.equal(judge(more).verdict, 'drained');
});

test('a configured pod missing from a round means not drained', () => {
  const rounds = [0, 1, 2].map((step) => round(step * 10, flowing('vm/agent-0', step)));
  const verdict = judge(rounds);
  assert.equal(verdict.verdict, 'notDrained');
  assert.match(verdict.message, /pod vm\/agent-1 was not scraped/);
});

test('pending bytes above the thresholds mean not drained', () => {
  const withPending = (figures: Figures) => [
    ...threeGoodRounds.slice(0, 2),
    round(20, flowing('vm/agent-0', 2), flowing('vm/agent-1', 2, figures)),
  ];
  const inMemory = judge(withPending({ pendingDataBytes: 2 * 1024 * 1024 }));
  assert.equal(inMemory.verdict, 'notDrained');
  assert.match(
    inMemory.message,
    /pod vm\/agent-1 has 2097152 bytes pending for remote-write queue 2 \(at most 1048576 allowed\)/,
  );
  assert.equal(inMemory.figures.pendingDataBytes, 2 * 1024 * 1024);

  const onDisk = judge(withPending({ onDiskPendingBytes: 1 }));
  assert.equal(onDisk.verdict, 'notDrained');
  assert.match(onDisk.message, /1 bytes in the on-disk queue/);

  assert.equal(judge(withPending({ pendingDataBytes: 4096 })).verdict, 'drained');
  assert.equal(
    judge(withPending({ pendingDataBytes: 4096 }), { config: { maxPendingDataBytes: 0 } }).verdict,
    'notDrained',
  );
});

test('growing retries or errors mean not drained, even with nothing pending', () => {
  for (const figure of ['retries', 'errors'] as const) {
    const rounds = [
      ...threeGoodRounds.slice(0, 2),
      round(20, flowing('vm/agent-0', 2, { [figure]: 50 }), flowing('vm/agent-1', 2)),
    ];
    const verdict = judge(rounds);
    assert.equal(verdict.verdict, 'notDrained', figure);
    assert.match(
      verdict.message,
      new RegExp(
        `pod vm/agent-0: vmagent_remotewrite_${figure === 'retries' ? 'retries_count' : 'errors'}_total grew by`,
      ),
    );
  }
});

test('a send waiting out its backoff means not drained, however quiet its counters stay meanwhile', () => {
  // agent-0 failed once more than it retried: one sender holds a block through its backoff, which pending bytes
  // do not count, while the other senders deliver; the counters do not move for the K rounds.
  const holding = { errors: 7, retries: 6, failedRequests: 0 };
  const rounds = [0, 1, 2].map((step) =>
    round(step * 10, flowing('vm/agent-0', step, holding), flowing('vm/agent-1', step)),
  );
  const verdict = judge(rounds);
  assert.equal(verdict.verdict, 'notDrained');
  assert.equal(verdict.retrying, true, 'the gate looks again soon: the retry ends it');
  assert.match(verdict.message, /pod vm\/agent-0: 1 send\(s\) to remote-write queue 2 wait to retry a block/);

  // The retry went through: counted in retries_count_total, nothing waits any more.
  const retried = [3, 4, 5, 6].map((step) =>
    round(step * 10, flowing('vm/agent-0', step, { ...holding, retries: 7 }), flowing('vm/agent-1', step)),
  );
  const after = judge([...rounds, ...retried.slice(0, 3)]);
  assert.equal(after.verdict, 'notDrained', 'the round that saw the retry counted is not good');
  const settled = judge([...rounds, ...retried]);
  assert.equal(settled.verdict, 'drained', settled.message);
  assert.equal(settled.retrying, false);
});

test('no delivery during the window means not drained, unless no ingestion is expected', () => {
  const idle = [0, 1, 2].map((step) =>
    round(step * 10, flowing('vm/agent-0', step), ok('vm/agent-1', quiet)),
  );
  const verdict = judge(idle);
  assert.equal(verdict.verdict, 'notDrained');
  assert.match(
    verdict.message,
    /no data was delivered by pod vm\/agent-1 between .* ingestionExpected: false/,
  );
  assert.equal(judge(idle, { config: { ingestionExpected: false } }).verdict, 'drained');

  const bytesOnly = [0, 1, 2].map((step) =>
    round(step * 10, flowing('vm/agent-0', step), ok('vm/agent-1', { ...quiet, bytesSent: 10_000 + step })),
  );
  assert.equal(judge(bytesOnly).verdict, 'drained');
});

test('any growth of a drop counter is data loss, whenever it happened', () => {
  for (const figure of [
    'packetsDropped',
    'onDiskBytesDropped',
    'onDiskBlocksDropped',
    'samplesDropped',
  ] as const) {
    const rounds = [
      round(-20, flowing('vm/agent-0', -2, { [figure]: 0 }), flowing('vm/agent-1', -2)),
      round(-10, flowing('vm/agent-0', -1, { [figure]: 7 }), flowing('vm/agent-1', -1)),
      ...[0, 1, 2].map((step) =>
        round(step * 10, flowing('vm/agent-0', step, { [figure]: 7 }), flowing('vm/agent-1', step)),
      ),
    ];
    const verdict = judge(rounds);
    assert.equal(verdict.verdict, 'dataLost', figure);
    assert.match(verdict.message, /data was dropped for remote-write queue 2: pod vm\/agent-0: .* grew by 7/);
    assert.equal(verdict.figures.dataLost, true);
    assert.equal(verdict.figures.drained, false);
  }
});

test('a restart (a counter going back) is not drained, and drops counted after it are data loss', () => {
  const restarted = [
    ...threeGoodRounds,
    round(
      30,
      flowing('vm/agent-0', 3),
      ok('vm/agent-1', { ...quiet, requests: 3, bytesSent: 300, retries: 0, errors: 0 }),
    ),
  ];
  const verdict = judge(restarted);
  assert.equal(verdict.verdict, 'notDrained');
  assert.match(
    verdict.message,
    /pod vm\/agent-1 restarted \(vmagent_remotewrite_requests_total\{status_code="2XX"\} went back from 120 to 3\)/,
  );

  const lostAfterRestart = [
    ...threeGoodRounds,
    round(
      30,
      flowing('vm/agent-0', 3),
      ok('vm/agent-1', { ...quiet, requests: 3, bytesSent: 300, retries: 0, errors: 0, packetsDropped: 2 }),
    ),
  ];
  const lost = judge(lostAfterRestart);
  assert.equal(lost.verdict, 'dataLost');
  assert.match(lost.message, /grew by 2 by .* \(after a restart\)/);
});

test('a changed remote-write list means not drained, against the baseline or the first scrape', () => {
  const reordered = [dirs[1] as string, dirs[0] as string].map((dir, i) =>
    dir.replace(/^\d+/, String(i + 1)),
  );
  const rounds = [
    ...threeGoodRounds,
    round(
      30,
      flowing('vm/agent-0', 3, {}),
      ok('vm/agent-1', { ...quiet, requests: 130, bytesSent: 13_000 }, { allQueueDirNames: reordered }),
    ),
  ];
  const verdict = judge(rounds);
  assert.equal(verdict.verdict, 'notDrained');
  assert.match(
    verdict.message,
    /pod vm\/agent-1: the remote-write queues changed since the start .* the -remoteWrite.url list was edited/,
  );

  const baseline = { 'vm/agent-0': ['1_0000000000000000'], 'vm/agent-1': dirs };
  const againstBaseline = judge(threeGoodRounds, { baselineQueueDirs: baseline });
  assert.equal(againstBaseline.verdict, 'notDrained');
  assert.match(
    againstBaseline.message,
    /pod vm\/agent-0: the remote-write queues changed since the start \(were 1_0000000000000000, now/,
  );
});

test('an identity problem or a missing series means not drained, naming them', () => {
  const wrongDir = [
    ...threeGoodRounds.slice(0, 2),
    round(
      20,
      flowing('vm/agent-0', 2),
      ok('vm/agent-1', quiet, { problems: ['queue 2 is stored in /x/2_AAAA, not in 2_BBBB'] }),
    ),
  ];
  assert.match(judge(wrongDir).message, /pod vm\/agent-1: queue 2 is stored in \/x\/2_AAAA, not in 2_BBBB/);

  const missing = [
    ...threeGoodRounds.slice(0, 2),
    round(
      20,
      flowing('vm/agent-0', 2),
      ok('vm/agent-1', quiet, { missing: ['vmagent_remotewrite_retries_count_total{url=~"^2:"}'] }),
    ),
  ];
  const verdict = judge(missing);
  assert.equal(verdict.verdict, 'notDrained');
  assert.match(
    verdict.message,
    /pod vm\/agent-1 lacks the series vmagent_remotewrite_retries_count_total\{url=~"\^2:"\}/,
  );
});

test('ignores rounds before notBefore and sorts rounds by time', () => {
  const early = round(-30, flowing('vm/agent-0', -3, { onDiskPendingBytes: 1e9 }), down('vm/agent-1'));
  const shuffled = [threeGoodRounds[2], early, threeGoodRounds[0], threeGoodRounds[1]] as DrainRound[];
  assert.equal(judge(shuffled).verdict, 'drained');
  const badLatest = [...threeGoodRounds, round(25, down('vm/agent-0'), flowing('vm/agent-1', 3))];
  assert.equal(judge(badLatest).verdict, 'notDrained');
  assert.equal(judge(badLatest.slice(0, 3), { notBefore: t0 - 1 }).verdict, 'drained');
  assert.equal(judge(badLatest, { notBefore: t0 + 26_000 }).verdict, 'notDrained');
});

test('nothing to judge is not drained', () => {
  assert.match(judge([]).message, /no scrape of the vmagent pods yet/);
  const noPods = judge(threeGoodRounds, { pods: [] });
  assert.equal(noPods.verdict, 'notDrained');
  assert.match(noPods.message, /no vmagent pods are configured/);
});

test('rejects a nonsensical config', () => {
  for (const config of [
    { consecutiveRounds: 0 },
    { consecutiveRounds: 1.5 },
    { maxPendingDataBytes: -1 },
    { minRoundSpacingMs: Number.NaN },
  ]) {
    assert.throws(() => judge(threeGoodRounds, { config }), QueueDrainConfigError, JSON.stringify(config));
  }
});
