// Load generator: pushes a known sample stream into vmagent, one batch per interval.
// Series vmzones_sandbox_seq{series="<i>"} has value <seq> at timestamp start + seq * interval,
// so any zone can be checked for gaps: every series must hold every seq from 1 to lastSeq.
// With --mode=logs it writes log lines to vlagent instead (VictoriaLogs zones): each batch is --series JSON lines
// on vlagent's /insert/jsonline, line n carrying field seq=n (1, 2, 3, ... across batches, lastSeq the last one
// accepted), so any zone can be checked for lost or doubled lines (loadgen-client.ts logLinesLost).
// Run: node test/sandbox/loadgen.ts --target http://127.0.0.1:P --series 50 --interval-ms 1000 --port Q [--mode logs]

import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { logStream } from './loadgen-client.ts';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    series: { type: 'string', default: '50' },
    'interval-ms': { type: 'string', default: '1000' },
    port: { type: 'string', default: '0' },
    mode: { type: 'string', default: 'metrics' },
  },
});

if (!values.target) {
  process.stderr.write('loadgen: --target <vmagent base URL> is required\n');
  process.exit(2);
}

const logs = values.mode === 'logs';
if (!logs && values.mode !== 'metrics') {
  process.stderr.write(`loadgen: --mode must be metrics or logs, not ${values.mode}\n`);
  process.exit(2);
}
const base = values.target.replace(/\/$/, '');
const target = logs
  ? `${base}/insert/jsonline?_stream_fields=app&_msg_field=_msg&_time_field=_time`
  : `${base}/api/v1/import/prometheus`;
const seriesCount = Number(values.series);
const intervalMs = Number(values['interval-ms']);
const startMs = Math.floor(Date.now() / intervalMs) * intervalMs;
const status = {
  target,
  series: seriesCount,
  intervalMs,
  startMs,
  lastSeq: 0,
  sent: 0,
  failed: 0,
  lastError: '',
};

function batch(seq: number, series: number, timestampMs: number): string {
  const lines: string[] = [];
  for (let i = 0; i < series; i++) lines.push(`vmzones_sandbox_seq{series="${i}"} ${seq} ${timestampMs}`);
  return `${lines.join('\n')}\n`;
}

/** Batch `seq`'s log lines: seq (batch-1)·lines+1 .. batch·lines, one per line. */
function logBatch(seq: number, lines: number, timestampMs: number): string {
  const out: string[] = [];
  for (let i = 1; i <= lines; i++) {
    const n = (seq - 1) * lines + i;
    out.push(
      JSON.stringify({
        _time: new Date(timestampMs).toISOString(),
        _msg: `line ${n}`,
        app: logStream,
        seq: n,
      }),
    );
  }
  return `${out.join('\n')}\n`;
}

async function push(seq: number): Promise<void> {
  try {
    const timestampMs = startMs + seq * intervalMs;
    const response = await fetch(target, {
      method: 'POST',
      // A form content type would make the server read the body as a form and find no lines.
      headers: logs ? { 'content-type': 'application/stream+json' } : {},
      body: logs ? logBatch(seq, seriesCount, timestampMs) : batch(seq, seriesCount, timestampMs),
      signal: AbortSignal.timeout(5000),
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    status.sent++;
    status.lastSeq = logs ? seq * seriesCount : seq;
  } catch (error) {
    // vmagent itself being down loses the batch; the status says so.
    status.failed++;
    status.lastError = error instanceof Error ? error.message : String(error);
  }
}

let seq = 0;
const timer = setInterval(() => {
  seq++;
  void push(seq);
}, intervalMs);

const server = createServer((req, res) => {
  if (req.url === '/health') {
    res.writeHead(200).end('ok');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(status));
});
server.listen(Number(values.port), '127.0.0.1');

const stop = () => {
  clearInterval(timer);
  server.close();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
