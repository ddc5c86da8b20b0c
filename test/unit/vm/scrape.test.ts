import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { queueMetricNameList } from '../../../plugin/vm/remote-write.ts';
import { ScrapeError, scrapeMetrics } from '../../../plugin/vm/scrape.ts';
import { resolveScrapeAccess, SecretRefError } from '../../../plugin/vm/scrape-credentials.ts';
import { MemoryKube, secret } from '../kube/memory-kube.ts';
import { makeTlsFixture, type TlsFixture } from './tls-fixture.ts';
import { streamGeneratedPage } from './vmagent-page.ts';

const page = [
  '# HELP vmagent_remotewrite_pending_data_bytes pending',
  'vmagent_remotewrite_pending_data_bytes{path="/q/1_ABC",url="1:secret-url"} 42',
  'vm_app_version{version="vmagent-v1.151.0",short_version="v1.151.0"} 1',
  '',
].join('\n');

type Handler = (request: IncomingMessage, response: ServerResponse) => void;
const servers: Server[] = [];
let tls: TlsFixture;

before(() => {
  tls = makeTlsFixture();
});

after(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function http(handler: Handler): Promise<number> {
  return listen(createHttpServer(handler));
}

const keep = ['vmagent_remotewrite_pending_data_bytes'];

test('keeps only the asked-for families of a page', async () => {
  const port = await http((_request, response) => response.end(page));
  const result = await scrapeMetrics({ url: `http://127.0.0.1:${port}/metrics` }, keep);
  assert.deepEqual(result.samples, [
    {
      name: 'vmagent_remotewrite_pending_data_bytes',
      labels: { path: '/q/1_ABC', url: '1:secret-url' },
      value: 42,
    },
  ]);
});

test('scrapes of one pod reuse a pooled connection (a gate scrapes every round)', async () => {
  const server = createHttpServer((_request, response) => response.end(page));
  let connections = 0;
  server.on('connection', () => connections++);
  const port = await listen(server);
  const scrape = () => scrapeMetrics({ url: `http://127.0.0.1:${port}/metrics` }, keep);
  // undici may open a second connection while the first one's end is still being processed.
  for (let i = 0; i < 3; i++) await scrape();
  const opened = connections;
  assert.ok(opened <= 2, `three scrapes opened ${opened} connections`);
  for (let i = 0; i < 10; i++) await scrape();
  assert.equal(connections, opened, 'ten more scrapes open no new connection');
  server.closeAllConnections();
});

test('a refused connection is a connect error naming the URL', async () => {
  const port = await http((_request, response) => response.end(page));
  const server = servers.pop() as Server;
  await new Promise((resolve) => server.close(resolve));
  await assert.rejects(scrapeMetrics({ url: `http://127.0.0.1:${port}/metrics` }, keep), (error) => {
    assert.ok(error instanceof ScrapeError);
    assert.equal(error.kind, 'connect');
    assert.match(error.message, new RegExp(`scraping http://127.0.0.1:${port}/metrics: .*ECONNREFUSED`));
    return true;
  });
});

test('a status other than 200 is an error with the status and the start of the body', async () => {
  const port = await http((_request, response) => {
    response.statusCode = 503;
    response.end('overloaded, try later');
  });
  await assert.rejects(scrapeMetrics({ url: `http://127.0.0.1:${port}/metrics` }, keep), (error) => {
    assert.ok(error instanceof ScrapeError);
    assert.equal(error.kind, 'status');
    assert.equal(error.status, 503);
    assert.match(error.message, /HTTP 503: overloaded, try later/);
    return true;
  });
});

test('a server that never finishes the page is a timeout, not a hang', async () => {
  const port = await http((_request, response) => {
    response.write('vmagent_remotewrite_pending_data_bytes{url="1:secret-url"} 1\n');
    // never ends
  });
  await assert.rejects(
    scrapeMetrics({ url: `http://127.0.0.1:${port}/metrics` }, keep, { timeoutMs: 300 }),
    (error) => error instanceof ScrapeError && error.kind === 'timeout' && /300 ms/.test(error.message),
  );
});

test('a page over the size limit is refused', async () => {
  const port = await http((_request, response) => response.end(`# ${'x'.repeat(20_000)}\n${page}`));
  await assert.rejects(
    scrapeMetrics({ url: `http://127.0.0.1:${port}/metrics` }, keep, { maxBodyBytes: 10_000 }),
    (error) => error instanceof ScrapeError && error.kind === 'tooLarge' && /10000 bytes/.test(error.message),
  );
});

test('a malformed line of a kept family is a malformed error naming the line', async () => {
  const port = await http((_request, response) =>
    response.end('up 1\nvmagent_remotewrite_pending_data_bytes{url="1:secret-url"} lots\n'),
  );
  await assert.rejects(scrapeMetrics({ url: `http://127.0.0.1:${port}/metrics` }, keep), (error) => {
    assert.ok(error instanceof ScrapeError);
    assert.equal(error.kind, 'malformed');
    assert.match(
      error.message,
      /line 2 \(vmagent_remotewrite_pending_data_bytes\): invalid sample value "lots"/,
    );
    return true;
  });
});

test('sends a bearer token or basic auth, and never puts them in an error', async () => {
  const seen: (string | undefined)[] = [];
  const port = await http((request, response) => {
    seen.push(request.headers.authorization);
    response.statusCode = 401;
    response.end('unauthorized');
  });
  const url = `http://127.0.0.1:${port}/metrics`;
  for (const auth of [
    { kind: 'bearer', token: 's3cr3t-token' } as const,
    { kind: 'basic', username: 'scraper', password: 'pa55word' } as const,
  ]) {
    await assert.rejects(scrapeMetrics({ url, auth }, keep), (error) => {
      assert.ok(error instanceof ScrapeError);
      assert.doesNotMatch(error.message, /s3cr3t|pa55word|c2NyYXBlcjpwYTU1d29yZA/);
      return true;
    });
  }
  assert.deepEqual(seen, [
    'Bearer s3cr3t-token',
    `Basic ${Buffer.from('scraper:pa55word').toString('base64')}`,
  ]);
});

test('TLS: trusts the configured CA, refuses an unknown one unless insecureSkipVerify, checks serverName', async () => {
  const server = createHttpsServer({ cert: tls.serverCert, key: tls.serverKey }, (_request, response) =>
    response.end(page),
  );
  const port = await listen(server);
  const url = `https://127.0.0.1:${port}/metrics`;
  assert.equal((await scrapeMetrics({ url, tls: { ca: tls.ca } }, keep)).samples.length, 1);
  assert.equal(
    (await scrapeMetrics({ url, tls: { ca: tls.ca, serverName: 'vmagent.test' } }, keep)).samples.length,
    1,
  );
  await assert.rejects(
    scrapeMetrics({ url, tls: { ca: tls.otherCa } }, keep),
    (error) => error instanceof ScrapeError && error.kind === 'connect' && /certificate/i.test(error.message),
  );
  await assert.rejects(
    scrapeMetrics({ url, tls: { ca: tls.ca, serverName: 'other.test' } }, keep),
    (error) => error instanceof ScrapeError && /other\.test|altnames/i.test(error.message),
  );
  assert.equal((await scrapeMetrics({ url, tls: { insecureSkipVerify: true } }, keep)).samples.length, 1);
});

test('TLS: presents the client certificate to a server that requires one', async () => {
  const server = createHttpsServer(
    { cert: tls.serverCert, key: tls.serverKey, ca: tls.ca, requestCert: true, rejectUnauthorized: true },
    (_request, response) => response.end(page),
  );
  const port = await listen(server);
  const url = `https://127.0.0.1:${port}/metrics`;
  const scraped = await scrapeMetrics(
    { url, tls: { ca: tls.ca, cert: tls.clientCert, key: tls.clientKey } },
    keep,
  );
  assert.equal(scraped.samples.length, 1);
  await assert.rejects(scrapeMetrics({ url, tls: { ca: tls.ca } }, keep), ScrapeError);
});

test('credentials and TLS material come from Secrets; a missing Secret or key is named, its value never', async () => {
  const kube = new MemoryKube()
    .put(
      secret('vm', 'scrape-tls', { 'ca.crt': tls.ca, 'tls.crt': tls.clientCert, 'tls.key': tls.clientKey }),
    )
    .put(secret('vm', 'scrape-auth', { token: 'tok-123\n', password: 'pw' }));
  const access = await resolveScrapeAccess(
    kube,
    'vm',
    'https',
    {
      ca: { name: 'scrape-tls', key: 'ca.crt' },
      cert: { name: 'scrape-tls', key: 'tls.crt' },
      key: { name: 'scrape-tls', key: 'tls.key' },
      serverName: 'vmagent.test',
    },
    { bearerToken: { name: 'scrape-auth', key: 'token' } },
  );
  assert.equal(access.tls?.ca, tls.ca);
  assert.equal(access.tls?.serverName, 'vmagent.test');
  assert.deepEqual(access.auth, { kind: 'bearer', token: 'tok-123' });

  const basic = await resolveScrapeAccess(kube, 'vm', 'http', undefined, {
    basicAuth: { username: 'scraper', password: { name: 'scrape-auth', key: 'password' } },
  });
  assert.deepEqual(basic.auth, { kind: 'basic', username: 'scraper', password: 'pw' });

  await assert.rejects(
    resolveScrapeAccess(kube, 'vm', 'http', undefined, { bearerToken: { name: 'scrape-auth', key: 'nope' } }),
    (error) =>
      error instanceof SecretRefError &&
      error.message === 'Secret vm/scrape-auth key "nope": the Secret has no such key' &&
      !error.message.includes('tok-123'),
  );
  await assert.rejects(
    resolveScrapeAccess(kube, 'vm', 'http', { ca: { name: 'absent', key: 'ca.crt' } }, undefined),
    /Secret vm\/absent key "ca.crt": the Secret does not exist/,
  );
});

test('a 50 MB vmagent page is scraped and parsed within a 20 MB heap (holding it needs more than 24 MB)', async () => {
  const generated = streamGeneratedPage({ targetBytes: 50 * 1024 * 1024, remoteWriteUrls: 3 });
  const port = await http(async (_request, response) => {
    for await (const chunk of generated.chunks()) {
      if (!response.write(chunk)) await new Promise((resolve) => response.once('drain', resolve));
    }
    response.end();
  });
  // The scraper runs in a child whose V8 heap cannot hold the page: buffering it would crash the child.
  const child = spawn(
    process.execPath,
    [
      '--max-old-space-size=20',
      '--max-semi-space-size=2',
      fileURLToPath(new URL('./scrape-child.ts', import.meta.url)),
      `http://127.0.0.1:${port}/metrics`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 0, `the scraper child failed: ${stderr.slice(-2000)}`);
  const result = JSON.parse(stdout) as {
    bytes: number;
    samples: unknown;
    maxBufferedBytes: number;
    maxRssBytes: number;
  };
  assert.ok(result.bytes >= 50 * 1024 * 1024, `page has ${result.bytes} bytes`);
  assert.deepEqual(result.samples, generated.keptSamples(queueMetricNameList));
  assert.ok(result.maxBufferedBytes <= 4096, `the parser held ${result.maxBufferedBytes} bytes of a line`);
});
