import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MetricsTextParser } from '../../../plugin/vm/metrics-text.ts';
import {
  pickQueueSamples,
  queueMetricNameList,
  RemoteWriteUrlError,
  remoteWriteQueueDirName,
  sendsAwaitingRetry,
  vmagentQueueUrlString,
} from '../../../plugin/vm/remote-write.ts';

interface Vector {
  input: string;
  output?: string;
  error?: boolean;
}

const goVectors = JSON.parse(readFileSync(new URL('./go-url-vectors.json', import.meta.url), 'utf8')) as {
  go: string;
  vectors: Vector[];
};

test('normalizes remote-write URLs exactly as Go net/url does before vmagent hashes them', () => {
  assert.ok(goVectors.vectors.length > 30);
  for (const vector of goVectors.vectors) {
    if (vector.error === true) {
      assert.throws(() => vmagentQueueUrlString(vector.input), RemoteWriteUrlError, vector.input);
    } else {
      assert.equal(vmagentQueueUrlString(vector.input), vector.output, vector.input);
    }
  }
});

// Directory names printed by real vmagent binaries (Debian's 1.79.5 and 1.151.0 built from the Go module,
// identical in both) for these -remoteWrite.url flags, in this order.
const observedQueueDirs: [string, string][] = [
  ['http://127.0.0.1:18428/api/v1/write', '1_1C39D330F1670079'],
  [
    'http://user:p%40ss@127.0.0.1:18429/insert/0/prometheus/api/v1/write?extra_label=zone=a#frag',
    '2_F38B25BE2996618E',
  ],
  ['http://127.0.0.1:18430/api/v1/write?', '3_DF8312F51BF8DD2A'],
  ['HTTP://LocalHost:18431/a%2fb/c%20d', '4_D21E84D94170F666'],
  ['https://127.0.0.1:18432/api/v1/write/', '5_76989DDD12BFE313'],
  ['http://[::1]:18433/write?x=1&y=2', '6_FB929B4CE377E856'],
  ['http://127.0.0.1:18434/p/ä/x', '7_1C11B5187040520D'],
];

test('computes the queue directory names that vmagent 1.79.5 and 1.151.0 create', async () => {
  for (const [index, [url, dirName]] of observedQueueDirs.entries()) {
    assert.equal(await remoteWriteQueueDirName(index + 1, url), dirName, url);
  }
});

test('the directory name depends on the index and on the URL without its query', async () => {
  const url = 'http://vminsert-zone-a:8480/insert/0/prometheus/api/v1/write';
  const first = await remoteWriteQueueDirName(1, url);
  assert.match(first, /^1_[0-9A-F]{16}$/);
  assert.equal(await remoteWriteQueueDirName(1, `${url}?extra_label=a#x`), first);
  assert.equal((await remoteWriteQueueDirName(3, url)).slice(2), first.slice(2));
  assert.notEqual(await remoteWriteQueueDirName(1, `${url}/`), first);
  await assert.rejects(remoteWriteQueueDirName(0, url), RangeError);
  await assert.rejects(remoteWriteQueueDirName(1, 'ftp://x/y'), RemoteWriteUrlError);
});

test('never prints a password from a bad URL', () => {
  assert.throws(
    () => vmagentQueueUrlString('http://user:s3cret@host:80x/p'),
    (error: unknown) => error instanceof RemoteWriteUrlError && !error.message.includes('s3cret'),
  );
});

const pqDir = '/vmagent_pq/vmagent-remotewrite-data/persistent-queue';

// A scrape in vmagent 1.151.0's shape (1.79.5 lacks the `name` label and samples_dropped).
const scrape = `
vmagent_remotewrite_pending_data_bytes{path="${pqDir}/1_1C39D330F1670079", url="1:secret-url"} 10
vmagent_remotewrite_pending_data_bytes{path="${pqDir}/2_F38B25BE2996618E", url="2:secret-url"} 2048
vmagent_remotewrite_pending_data_bytes{path="${pqDir}/12_0123456789ABCDEF", url="12:secret-url"} 99999
vm_persistentqueue_bytes_pending{path="${pqDir}/1_1C39D330F1670079", name="1:secret-url"} 0
vm_persistentqueue_bytes_pending{path="${pqDir}/2_F38B25BE2996618E", name="2:secret-url"} 1024
vm_persistentqueue_bytes_dropped_total{path="${pqDir}/2_F38B25BE2996618E", name="2:secret-url"} 0
vm_persistentqueue_blocks_dropped_total{path="${pqDir}/2_F38B25BE2996618E", name="2:secret-url"} 0
vmagent_remotewrite_requests_total{url="2:secret-url", status_code="2XX"} 500
vmagent_remotewrite_requests_total{url="2:secret-url", status_code="204"} 5
vmagent_remotewrite_requests_total{url="2:secret-url", status_code="503"} 7
vmagent_remotewrite_requests_total{url="12:secret-url", status_code="2XX"} 100000
vmagent_remotewrite_bytes_sent_total{url="2:secret-url"} 123456
vmagent_remotewrite_retries_count_total{url="2:secret-url"} 3
vmagent_remotewrite_errors_total{url="2:secret-url"} 1
vmagent_remotewrite_packets_dropped_total{url="2:secret-url"} 0
vmagent_remotewrite_samples_dropped_total{path="${pqDir}/2_F38B25BE2996618E",url="2:secret-url"} 0
vmagent_remotewrite_retries_count_total{url="12:secret-url"} 777
`;

function parse(text: string) {
  const parser = new MetricsTextParser({ keep: queueMetricNameList });
  parser.push(new TextEncoder().encode(text));
  return parser.end().samples;
}

test('picks one queue by index, not confusing 2 with 12, and sums 2xx status codes and the others apart', () => {
  const picked = pickQueueSamples(parse(scrape), { index: 2, expectedDirName: '2_F38B25BE2996618E' });
  assert.deepEqual(picked.figures, {
    pendingDataBytes: 2048,
    onDiskPendingBytes: 1024,
    onDiskBytesDropped: 0,
    onDiskBlocksDropped: 0,
    requests: 505,
    failedRequests: 7,
    bytesSent: 123456,
    retries: 3,
    errors: 1,
    packetsDropped: 0,
    samplesDropped: 0,
  });
  assert.deepEqual(picked.queuePaths, [`${pqDir}/2_F38B25BE2996618E`]);
  assert.deepEqual(picked.missing, []);
  assert.deepEqual(picked.problems, []);
  assert.deepEqual(picked.allQueueDirNames, [
    '12_0123456789ABCDEF',
    '1_1C39D330F1670079',
    '2_F38B25BE2996618E',
  ]);
});

test('sends waiting to retry: failures (errors, non-2xx answers) not yet followed by a retry or a drop', () => {
  // vmagent: a failure is counted, the backoff waited, then the retry counted (or, for 409/400, a drop instead).
  assert.equal(sendsAwaitingRetry({ errors: 4, failedRequests: 3, retries: 6, packetsDropped: 0 }), 1);
  assert.equal(sendsAwaitingRetry({ errors: 4, failedRequests: 3, retries: 6, packetsDropped: 1 }), 0);
  assert.equal(sendsAwaitingRetry({ errors: 2, retries: 2 }), 0, 'no non-2xx answer yet: no such series');
  assert.equal(sendsAwaitingRetry({ errors: 1, retries: 3 }), undefined, 'a balance below 0 proves nothing');
  assert.equal(sendsAwaitingRetry({ failedRequests: 3, retries: 2 }), undefined, 'without errors_total');
});

test('reports a queue whose directory does not belong to the zone URL', () => {
  const picked = pickQueueSamples(parse(scrape), { index: 2, expectedDirName: '2_AAAAAAAAAAAAAAAA' });
  assert.equal(picked.problems.length, 1);
  assert.match(
    picked.problems[0] ?? '',
    /queue 2 is stored in .*2_F38B25BE2996618E, not in a directory named 2_AAAAAAAAAAAAAAAA/,
  );
});

test('names every required series the page lacks, and tolerates the ones older vmagent lacks', () => {
  const picked = pickQueueSamples(parse(scrape), { index: 1 });
  assert.deepEqual(picked.figures, { pendingDataBytes: 10, onDiskPendingBytes: 0 });
  assert.deepEqual(picked.missing, [
    'vmagent_remotewrite_requests_total{url=~"^1:",status_code="2XX"}',
    'vmagent_remotewrite_bytes_sent_total{url=~"^1:"}',
    'vmagent_remotewrite_retries_count_total{url=~"^1:"}',
    'vmagent_remotewrite_errors_total{url=~"^1:"}',
    'vmagent_remotewrite_packets_dropped_total{url=~"^1:"}',
    `vm_persistentqueue_bytes_dropped_total{path="${pqDir}/1_1C39D330F1670079"}`,
    `vm_persistentqueue_blocks_dropped_total{path="${pqDir}/1_1C39D330F1670079"}`,
  ]);

  const absent = pickQueueSamples(parse(scrape), { index: 3, expectedDirName: '3_DF8312F51BF8DD2A' });
  assert.deepEqual(absent.queuePaths, []);
  assert.ok(absent.missing.includes('vmagent_remotewrite_pending_data_bytes{url=~"^3:"}'));
  assert.ok(absent.missing.includes('vm_persistentqueue_bytes_pending{path=~".*/3_DF8312F51BF8DD2A"}'));
});

test('finds the on-disk series by directory name when the url-labelled series is missing', () => {
  const text = `vm_persistentqueue_bytes_pending{path="${pqDir}/2_F38B25BE2996618E"} 4096\n`;
  const picked = pickQueueSamples(parse(text), { index: 2, expectedDirName: '2_F38B25BE2996618E' });
  assert.equal(picked.figures.onDiskPendingBytes, 4096);
  assert.ok(picked.missing.includes('vmagent_remotewrite_pending_data_bytes{url=~"^2:"}'));
});

test('sums the per-tenant queues of a 1.79 multitenant URL', () => {
  const text = [
    `vmagent_remotewrite_pending_data_bytes{path="${pqDir}/1_AAAAAAAAAAAAAAAA", url="1:secret-url:0:0"} 5`,
    `vmagent_remotewrite_pending_data_bytes{path="${pqDir}/1_BBBBBBBBBBBBBBBB", url="1:secret-url:1:0"} 7`,
    `vm_persistentqueue_bytes_pending{path="${pqDir}/1_AAAAAAAAAAAAAAAA"} 1`,
    `vm_persistentqueue_bytes_pending{path="${pqDir}/1_BBBBBBBBBBBBBBBB"} 2`,
    '',
  ].join('\n');
  const picked = pickQueueSamples(parse(text), { index: 1 });
  assert.equal(picked.figures.pendingDataBytes, 12);
  assert.equal(picked.figures.onDiskPendingBytes, 3);
  assert.equal(picked.queuePaths.length, 2);
});
