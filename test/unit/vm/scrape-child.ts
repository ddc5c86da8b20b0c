// Child process for the bounded-memory scrape test: scrapes the URL in argv[2] under a small V8 heap limit
// (set by the parent) and prints what it kept. Holding the page would exceed the limit and kill it.

import { queueMetricNameList } from '../../../plugin/vm/remote-write.ts';
import { scrapeMetrics } from '../../../plugin/vm/scrape.ts';

const result = await scrapeMetrics({ url: process.argv[2] ?? '' }, queueMetricNameList, {
  timeoutMs: 120_000,
});
process.stdout.write(
  `${JSON.stringify({
    bytes: result.bytes,
    samples: result.samples,
    maxBufferedBytes: result.maxBufferedBytes,
  })}\n`,
);
