import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type MetricSample,
  MetricsTextError,
  type MetricsTextOptions,
  MetricsTextParser,
  parseMetricsText,
  parseSampleValue,
} from '../../../plugin/vm/metrics-text.ts';
import { streamGeneratedPage } from './vmagent-page.ts';

const encoder = new TextEncoder();

function parseChunks(chunks: Uint8Array[], options: MetricsTextOptions) {
  const parser = new MetricsTextParser(options);
  for (const chunk of chunks) parser.push(chunk);
  return parser.end();
}

function parseText(text: string, options: MetricsTextOptions) {
  return parseChunks([encoder.encode(text)], options);
}

function splitEvery(bytes: Uint8Array, size: number): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let start = 0; start < bytes.length; start += size) chunks.push(bytes.slice(start, start + size));
  return chunks;
}

const queueKeep = [
  'vmagent_remotewrite_pending_data_bytes',
  'vm_persistentqueue_bytes_pending',
  'vmagent_remotewrite_requests_total',
  'vmagent_remotewrite_retries_count_total',
];

// Lines as vmagent 1.151.0 and 1.79.5 print them (note the blank after the comma), plus HELP/TYPE lines
// that vmagent prints with -metrics.exposeMetadata.
const vmagentPage = [
  '# HELP vmagent_remotewrite_pending_data_bytes pending bytes',
  '# TYPE vmagent_remotewrite_pending_data_bytes gauge',
  'vmagent_remotewrite_pending_data_bytes{path="/q/persistent-queue/1_1C39D330F1670079", url="1:secret-url"} 0',
  'vmagent_remotewrite_pending_data_bytes{path="/q/persistent-queue/2_F38B25BE2996618E", url="2:secret-url"} 1.5e3',
  'vmagent_remotewrite_pending_data_bytes_total_not_this 7',
  'vm_persistentqueue_bytes_pending{path="/q/persistent-queue/1_1C39D330F1670079", name="1:secret-url"} 0',
  'vm_persistentqueue_bytes_pending{path="/q/persistent-queue/2_F38B25BE2996618E"} 4096',
  'go_gc_duration_seconds{quantile="0.5"} NaN',
  'vmagent_remotewrite_requests_total{url="1:secret-url", status_code="2XX"} 17 1700000000000',
  'vmagent_remotewrite_requests_total{url="1:secret-url", status_code="503"} 2',
  'vmagent_remotewrite_retries_count_total{url="1:secret-url"} +Inf',
  'vmagent_remotewrite_retries_count_total{url="2:secret-url"} -Inf',
  'flag{name="remoteWrite.url", value="secret"} 1',
  '',
].join('\n');

const expectedSamples: MetricSample[] = [
  {
    name: 'vmagent_remotewrite_pending_data_bytes',
    labels: { path: '/q/persistent-queue/1_1C39D330F1670079', url: '1:secret-url' },
    value: 0,
  },
  {
    name: 'vmagent_remotewrite_pending_data_bytes',
    labels: { path: '/q/persistent-queue/2_F38B25BE2996618E', url: '2:secret-url' },
    value: 1500,
  },
  {
    name: 'vm_persistentqueue_bytes_pending',
    labels: { path: '/q/persistent-queue/1_1C39D330F1670079', name: '1:secret-url' },
    value: 0,
  },
  {
    name: 'vm_persistentqueue_bytes_pending',
    labels: { path: '/q/persistent-queue/2_F38B25BE2996618E' },
    value: 4096,
  },
  {
    name: 'vmagent_remotewrite_requests_total',
    labels: { url: '1:secret-url', status_code: '2XX' },
    value: 17,
  },
  {
    name: 'vmagent_remotewrite_requests_total',
    labels: { url: '1:secret-url', status_code: '503' },
    value: 2,
  },
  { name: 'vmagent_remotewrite_retries_count_total', labels: { url: '1:secret-url' }, value: Infinity },
  { name: 'vmagent_remotewrite_retries_count_total', labels: { url: '2:secret-url' }, value: -Infinity },
];

test('keeps exactly the asked-for series of a vmagent page, values and timestamps as vmagent prints them', () => {
  const result = parseText(vmagentPage, { keep: queueKeep });
  assert.deepEqual(result.samples, expectedSamples);
  assert.equal(result.lines, 13);
  assert.equal(result.malformedSkippedLines, 0);
});

test('gives the same samples however the page is cut into chunks', () => {
  const bytes = encoder.encode(vmagentPage);
  const whole = parseChunks([bytes], { keep: queueKeep });
  for (let cut = 1; cut < bytes.length; cut++) {
    const result = parseChunks([bytes.slice(0, cut), bytes.slice(cut)], { keep: queueKeep });
    assert.deepEqual(result.samples, whole.samples, `cut at ${cut}`);
    assert.equal(result.lines, whole.lines, `cut at ${cut}`);
  }
  for (const size of [1, 2, 3, 7, 64]) {
    const result = parseChunks(splitEvery(bytes, size), { keep: queueKeep });
    assert.deepEqual(result.samples, whole.samples, `chunks of ${size}`);
  }
});

test('reads CRLF line ends, a last line without newline, blank lines and leading blanks', () => {
  const text = 'a 1\r\n\r\n  \t a{x="y"} 2\r\n\nb 3\na 4';
  const result = parseText(text, { keep: ['a'] });
  assert.deepEqual(
    result.samples.map((sample) => [sample.labels, sample.value]),
    [
      [{}, 1],
      [{ x: 'y' }, 2],
      [{}, 4],
    ],
  );
  assert.equal(result.lines, 6);
  for (let cut = 1; cut < text.length; cut++) {
    const split = parseChunks([encoder.encode(text.slice(0, cut)), encoder.encode(text.slice(cut))], {
      keep: ['a'],
    });
    assert.deepEqual(split.samples, result.samples, `cut at ${cut}`);
  }
});

test('decodes the label escapes of the text format and keeps separators inside values', () => {
  const line = String.raw`m{a="back\\slash",b="quote\"d",c="new\nline",d="{,} =",e="",f="ünï"} 1`;
  const [sample] = parseText(`${line}\n`, { keep: ['m'] }).samples;
  assert.deepEqual(sample?.labels, {
    a: 'back\\slash',
    b: 'quote"d',
    c: 'new\nline',
    d: '{,} =',
    e: '',
    f: 'ünï',
  });
});

test('accepts the optional parts of the label syntax: blanks, a trailing comma, an empty set', () => {
  const text = 'm {a="1",} 1\nm{ a = "2" , b="3" }2\nm{} 3\n';
  const result = parseText(text, { keep: ['m'] });
  assert.deepEqual(
    result.samples.map((sample) => [sample.labels, sample.value]),
    [
      [{ a: '1' }, 1],
      [{ a: '2', b: '3' }, 2],
      [{}, 3],
    ],
  );
});

test('parses every value form Go prints and rejects others', () => {
  const good: [string, number][] = [
    ['0', 0],
    ['-1', -1],
    ['1.5', 1.5],
    ['.5', 0.5],
    ['5.', 5],
    ['1e3', 1000],
    ['1.5E-3', 0.0015],
    ['+2e+2', 200],
    ['1.8446744073709552e+19', 18446744073709552000],
    ['+Inf', Infinity],
    ['-Inf', -Infinity],
    ['Inf', Infinity],
  ];
  for (const [token, value] of good) assert.equal(parseSampleValue(token), value, token);
  assert.ok(Number.isNaN(parseSampleValue('NaN')));
  for (const bad of ['', 'abc', '1e', '0x10', '1,5', '--1', 'e5', '1 2', 'NaNa', 'Infinite']) {
    assert.equal(parseSampleValue(bad), undefined, bad);
  }
});

test('names a malformed line of a kept metric by number and problem', () => {
  const cases: [string, RegExp][] = [
    ['m', /missing sample value/],
    ['m{a="1"}', /missing sample value/],
    ['m abc', /invalid sample value "abc"/],
    ['m{a="1" 5', /expected ',' or '}' after the value of label a/],
    ['m{a="1', /unterminated value of label a/],
    ['m{a 1', /expected '=' after label name a/],
    ['m{a=1} 1', /expected '"' to open the value of label a/],
    ['m{1a="x"} 1', /invalid label name/],
    ['m{a="x",a="y"} 1', /duplicate label a/],
    ['m{a="\\t"} 1', /invalid escape "\\\\t" in the value of label a/],
    ['m 1 12.5', /invalid timestamp "12.5"/],
    ['m 1 2 3', /unexpected text after the timestamp/],
    ['m-x 1', /unexpected character "-" after the metric name/],
    ['m{', /unterminated label set/],
  ];
  for (const [line, problem] of cases) {
    const text = `# TYPE m gauge\nother 1\n${line}\nm 2\n`;
    assert.throws(
      () => parseText(text, { keep: ['m'] }),
      (error: unknown) => {
        assert.ok(error instanceof MetricsTextError, line);
        assert.equal(error.line, 3, line);
        assert.equal(error.metric, 'm', line);
        assert.match(error.problem, problem, line);
        assert.match(error.message, /^metrics text line 3 \(m\): /);
        return true;
      },
    );
  }
});

test('skips malformed lines of other metrics and counts those it can tell', () => {
  const text = 'other{a="unterminated 1\n!!! 2\n-5 3\n{"utf8.name"} 4\nm 1\n9lives 5\n';
  const result = parseText(text, { keep: ['m'] });
  assert.deepEqual(result.samples, [{ name: 'm', labels: {}, value: 1 }]);
  assert.equal(result.malformedSkippedLines, 3);
  assert.equal(result.firstMalformedSkippedLine, 2);
});

test('tells names apart that share a prefix', () => {
  const text = 'a_b 1\na 2\na_bc 3\nab 4\na_b{x="1"} 5\n';
  const onlyA = parseText(text, { keep: ['a'] }).samples.map((sample) => sample.value);
  assert.deepEqual(onlyA, [2]);
  const both = parseText(text, { keep: ['a', 'a_b'] }).samples.map((sample) => [sample.name, sample.value]);
  assert.deepEqual(both, [
    ['a_b', 1],
    ['a', 2],
    ['a_b', 5],
  ]);
});

test('skips a line of several MiB of another metric without holding it', () => {
  const longValue = 'x'.repeat(5 * 1024 * 1024);
  for (const prefix of ['other_metric{a="', '# HELP m ', 'm_other{a="', 'mm{a="']) {
    const text = `m 1\n${prefix}${longValue}"} 1\nm 2\n`;
    for (const chunkSize of [64 * 1024, 4093]) {
      const result = parseChunks(splitEvery(encoder.encode(text), chunkSize), {
        keep: ['m'],
        maxLineBytes: 1024,
      });
      assert.deepEqual(
        result.samples.map((sample) => sample.value),
        [1, 2],
        prefix,
      );
      assert.equal(result.lines, 3);
      assert.ok(result.maxBufferedBytes < 64, `${prefix}: buffered ${result.maxBufferedBytes} bytes`);
    }
  }
});

test('decides a line cut inside its name without buffering the rest when it is not kept', () => {
  const name = 'vmagent_remotewrite_pending_data_bytes';
  const text = `${name}_other{a="${'y'.repeat(300_000)}"} 1\n${name}{a="b"} 2\n`;
  const bytes = encoder.encode(text);
  for (const cut of [1, 10, name.length - 1, name.length, name.length + 1]) {
    const chunks = [bytes.slice(0, cut), ...splitEvery(bytes.slice(cut), 8192)];
    const result = parseChunks(chunks, { keep: [name], maxLineBytes: 1024 });
    assert.deepEqual(result.samples, [{ name, labels: { a: 'b' }, value: 2 }], `cut at ${cut}`);
    assert.ok(result.maxBufferedBytes < 100, `cut at ${cut}: buffered ${result.maxBufferedBytes}`);
  }
});

test('rejects an over-long line of a kept metric, in one chunk or streamed', () => {
  const text = `m 1\nm{a="${'z'.repeat(5000)}"} 2\n`;
  for (const chunkSize of [text.length, 512, 1]) {
    assert.throws(
      () => parseChunks(splitEvery(encoder.encode(text), chunkSize), { keep: ['m'], maxLineBytes: 4096 }),
      (error: unknown) =>
        error instanceof MetricsTextError &&
        error.line === 2 &&
        /longer than the limit of 4096 bytes/.test(error.problem),
      `chunks of ${chunkSize}`,
    );
  }
});

test('rejects invalid UTF-8 in a kept line, and ignores it in a skipped one', () => {
  const bad = new Uint8Array([...encoder.encode('m{a="'), 0xff, 0xfe, ...encoder.encode('"} 1\n')]);
  assert.throws(() => parseChunks([bad], { keep: ['m'] }), {
    code: 'MetricsMalformed',
    message: /line 1 \(m\)/,
  });
  const skipped = new Uint8Array([...encoder.encode('o{a="'), 0xff, ...encoder.encode('"} 1\nm 2\n')]);
  assert.deepEqual(parseChunks([skipped], { keep: ['m'] }).samples, [{ name: 'm', labels: {}, value: 2 }]);
});

test('stops at maxSamples kept samples instead of growing without bound', () => {
  const text = 'm 1\nm 2\nm 3\n';
  assert.deepEqual(parseText(text, { keep: ['m'], maxSamples: 3 }).samples.length, 3);
  assert.throws(() => parseText(text, { keep: ['m'], maxSamples: 2 }), {
    code: 'MetricsMalformed',
    message: /line 3 \(m\)/,
  });
});

test('refuses a keep list entry that is not a metric name', () => {
  assert.throws(() => new MetricsTextParser({ keep: ['ok', 'not a name'] }), TypeError);
});

test('reads an async byte stream such as a response body', async () => {
  async function* body() {
    const bytes = encoder.encode(vmagentPage);
    for (const chunk of splitEvery(bytes, 100)) yield chunk;
  }
  const result = await parseMetricsText(body(), { keep: queueKeep });
  assert.deepEqual(result.samples, expectedSamples);
  assert.equal(result.bytes, encoder.encode(vmagentPage).length);
});

test('parses a generated 50 MB vmagent page holding only the kept samples and one short line', async () => {
  const page = streamGeneratedPage({ targetBytes: 50 * 1024 * 1024, remoteWriteUrls: 3 });
  const result = await parseMetricsText(page.chunks(), { keep: queueKeep });
  assert.ok(result.bytes >= 50 * 1024 * 1024, `page has ${result.bytes} bytes`);
  assert.equal(result.lines, page.lineCount());
  assert.deepEqual(result.samples, page.keptSamples(queueKeep));
  assert.ok(result.maxBufferedBytes <= 4096, `buffered ${result.maxBufferedBytes} bytes`);
  assert.equal(result.malformedSkippedLines, 0);
});
