// The express app of the observe endpoint: /metrics (Prometheus text), /healthz, /status (JSON). Read-only, no
// request input is used beyond the path; errors answer 500 with a one-line message and never a stack trace.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { ObserveMetrics, ObserveRole } from './metrics.ts';
import type { ZoneSnapshots } from './zone-snapshot.ts';

export interface ObserveAppOptions {
  role: ObserveRole;
  metrics: ObserveMetrics;
  /** The step role's zone states; the gates role has none. */
  zones: ZoneSnapshots | undefined;
  startedAt: Date;
}

export function createObserveApp(options: ObserveAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');

  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });

  app.get('/metrics', async (_req, res) => {
    // List first, so that the Kubernetes request counters on this page include this scrape's listing.
    await options.zones?.get();
    const body = await options.metrics.registry.metrics();
    res.type(options.metrics.registry.contentType).send(body);
  });

  app.get('/status', async (_req, res) => {
    const base = {
      role: options.role,
      pid: process.pid,
      startedAt: options.startedAt.toISOString(),
    };
    if (options.zones === undefined) {
      res.json({ ...base, zones: null, note: 'zone states are served by the vmzones/step process' });
      return;
    }
    const snapshot = await options.zones.get();
    const kubernetes = { ok: snapshot.ok, listedAt: snapshot.takenAt.toISOString() };
    if (!snapshot.ok) {
      res.status(503).json({ ...base, kubernetes: { ...kubernetes, error: snapshot.error }, zones: null });
      return;
    }
    res.json({ ...base, kubernetes, zones: snapshot.zones, problems: snapshot.problems });
  });

  app.use((_req, res) => {
    res.status(404).type('text/plain').send('not found: vmzones serves /metrics, /healthz and /status\n');
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    res
      .status(500)
      .type('text/plain')
      .send(`${err instanceof Error ? err.message.split('\n')[0] : 'internal error'}\n`);
  });
  return app;
}

/** Listens on host:port; resolves once bound (with the port actually bound), rejects on e.g. EADDRINUSE. */
export function listen(
  app: express.Express,
  host: string,
  port: number,
): Promise<{ server: Server; port: number }> {
  const server = createServer(app);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      // Scrapes are short; do not keep the plugin process alive for an idle keep-alive connection.
      server.unref();
      resolve({ server, port: (server.address() as AddressInfo).port });
    });
  });
}
