// Issue 21 item 5: a hostile or huge /metrics page costs bounded memory. The page size has a cap no config can
// exceed, a process scrapes a bounded number of pages at once however many pods a gate names, and the kept lines
// of one page have a budget; a page over a limit is an error for that pod (tooLarge), never the process's.

import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { GateConfigError, parseGateConfig } from '../../../plugin/gates/config.ts';
import { ScrapeError, scrapeMetrics } from '../../../plugin/vm/scrape.ts';
import { maxScrapeBytesCap, ScrapeBudget } from '../../../plugin/vm/scrape-budget.ts';

const keep = ['vmagent_remotewrite_pending_data_bytes'];
const servers: Server[] = [];

after(async () => {
  for (const server of servers) server.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

async function serve(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
}

function keptLines(count: number, labelChars: number): string {
  const label = 'x'.repeat(labelChars);
  return Array.from(
    { length: count },
    (_, i) => `vmagent_remotewrite_pending_data_bytes{path="/q/${i}_${label}",url="${i}:u"} ${i}\n`,
  ).join('');
}

test('pods.maxScrapeBytes above the cap (1 TiB) is refused, naming the field and the cap', () => {
  for (const gate of ['vmagentQueueDrained', 'vmauthReloaded']) {
    assert.throws(
      () => parseGateConfig({ gate, vmagent: 'a', pods: { maxScrapeBytes: String(2 ** 40) } }),
      (error) => {
        assert.ok(error instanceof GateConfigError);
        assert.match(
          error.message,
          new RegExp(`pods\\.maxScrapeBytes: must be at most ${maxScrapeBytesCap}\\b`),
        );
        return true;
      },
      gate,
    );
  }
  const atCap = parseGateConfig({ gate: 'vmauthReloaded', pods: { maxScrapeBytes: maxScrapeBytesCap } });
  assert.equal('pods' in atCap ? atCap.pods?.maxScrapeBytes : undefined, maxScrapeBytesCap);
});

test('a scrape asked for more than the cap is refused before the pod is contacted', async () => {
  let requests = 0;
  const url = await serve((_request, response) => {
    requests++;
    response.end('');
  });
  await assert.rejects(scrapeMetrics({ url }, keep, { maxBodyBytes: 2 ** 40 }), /above the cap of/);
  assert.equal(requests, 0);
});

test('more pods than the slots: every page is read, never more than the slots at once', async () => {
  const slots = 2;
  const pods = 6;
  const held: ServerResponse[] = [];
  let arrived = 0;
  let open = 0;
  let mostOpen = 0;
  const answer = (response: ServerResponse) => {
    open--;
    response.end(keptLines(1, 4));
  };
  const url = await serve((_request, response) => {
    arrived++;
    open++;
    mostOpen = Math.max(mostOpen, open);
    held.push(response);
    // Once `slots` pages are asked for, answer the oldest a little later: a scrape not held back by the slots would
    // arrive in that window (all of them are started at once) and show in mostOpen.
    if (arrived === pods) for (const waiting of held.splice(0)) answer(waiting);
    else if (held.length >= slots) setTimeout(() => answer(held.shift() as ServerResponse), 30);
  });
  const budget = new ScrapeBudget({ concurrentScrapes: slots, keptBytesPerScrape: 1024 * 1024 });
  const pages = await Promise.all(
    Array.from({ length: pods }, () => scrapeMetrics({ url }, keep, { budget, timeoutMs: 30_000 })),
  );
  assert.equal(pages.length, pods);
  for (const page of pages) assert.equal(page.samples.length, 1);
  assert.equal(arrived, pods);
  assert.ok(mostOpen <= slots, `the server saw ${mostOpen} scrapes at once, more than the ${slots} slots`);
  assert.equal(budget.inFlight, 0);
});

test('a page whose kept lines exceed the per-scrape budget is tooLarge for that pod; another pod is read', async () => {
  const hostile = await serve((_request, response) => response.end(keptLines(1000, 200)));
  const honest = await serve((_request, response) => response.end(keptLines(3, 8)));
  const budget = new ScrapeBudget({ concurrentScrapes: 4, keptBytesPerScrape: 16 * 1024 });
  const [bad, good] = await Promise.allSettled([
    scrapeMetrics({ url: hostile }, keep, { budget }),
    scrapeMetrics({ url: honest }, keep, { budget }),
  ]);
  assert.equal(bad.status, 'rejected');
  const error = (bad as PromiseRejectedResult).reason;
  assert.ok(error instanceof ScrapeError, String(error));
  assert.equal(error.kind, 'tooLarge');
  assert.ok(error.message.startsWith(`scraping ${hostile}: `), error.message);
  assert.match(error.message, /kept lines take more than the limit of 16384 bytes/);
  assert.equal(good.status, 'fulfilled');
  assert.equal((good as PromiseFulfilledResult<{ samples: unknown[] }>).value.samples.length, 3);
  assert.equal(budget.inFlight, 0);
});

test('more kept samples than maxSamples is a too-large page (an error for that pod), not a malformed one', async () => {
  const url = await serve((_request, response) => response.end(keptLines(11, 1)));
  await assert.rejects(scrapeMetrics({ url }, keep, { maxSamples: 10 }), (error) => {
    assert.ok(error instanceof ScrapeError);
    assert.equal(error.kind, 'tooLarge');
    assert.match(error.message, /more than 10 samples/);
    return true;
  });
});

test('a scrape that finds no free slot within its timeout fails with a message naming the wait', async () => {
  const held: ServerResponse[] = [];
  const url = await serve((_request, response) => held.push(response));
  const budget = new ScrapeBudget({ concurrentScrapes: 1, keptBytesPerScrape: 1024 });
  const first = scrapeMetrics({ url }, keep, { budget, timeoutMs: 30_000 });
  await assert.rejects(scrapeMetrics({ url }, keep, { budget, timeoutMs: 100 }), (error) => {
    assert.ok(error instanceof ScrapeError);
    assert.equal(error.kind, 'timeout');
    assert.match(error.message, /no scrape slot came free within 100 ms .*at most 1 pages at once/);
    return true;
  });
  assert.equal(held.length, 1, 'the waiting scrape never reached the pod');
  for (const response of held) response.end('');
  assert.equal((await first).samples.length, 0);
  assert.equal(budget.inFlight, 0);
});
