// Load generator: pushes a known sample stream into vmagent, one batch per interval.
// Series vmzones_sandbox_seq{series="<i>"} has value <seq> at timestamp start + seq * interval,
// so any zone can be checked for gaps: every series must hold every seq from 1 to lastSeq.
// Run: node test/sandbox/loadgen.ts --target http://127.0.0.1:P --series 50 --interval-ms 1000 --port Q

import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    series: { type: 'string', default: '50' },
    'interval-ms': { type: 'string', default: '1000' },
    port: { type: 'string', default: '0' },
  },
});

if (!values.target) {
  process.stderr.write('loadgen: --target <vmagent base URL> is required\n');
  process.exit(2);
}

const target = `${values.target.replace(/\/$/, '')}/api/v1/import/prometheus`;
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

async function push(seq: number): Promise<void> {
  try {
    const response = await fetch(target, {
      method: 'POST',
      body: batch(seq, seriesCount, startMs + seq * intervalMs),
      signal: AbortSignal.timeout(5000),
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    status.sent++;
    status.lastSeq = seq;
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
