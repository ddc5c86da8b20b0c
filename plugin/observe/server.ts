// The observe endpoint's routes on express: /metrics (Prometheus text), /healthz, /status (JSON). express is imported
// only when the endpoint is started (--observe-address: plugin/observe/start.ts), so a plugin without it never
// evaluates it. Read-only, no request input is used beyond the method and path; errors answer 500 with a one-line
// message and never a stack trace.

import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Request, RequestHandler, Response } from 'express';
import type { ObserveMetrics, ObserveRole } from './metrics.ts';
import type { ZoneSnapshots } from './zone-snapshot.ts';

export interface ObserveAppOptions {
  role: ObserveRole;
  metrics: ObserveMetrics;
  /** The step role's zone states; the gates role has none. */
  zones: ZoneSnapshots | undefined;
  startedAt: Date;
}

function send(res: Response, status: number, contentType: string, body: string): void {
  res.status(status).set('content-type', contentType).send(body);
}

const sendJson = (res: Response, status: number, body: unknown) =>
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));

const sendText = (res: Response, status: number, body: string) =>
  send(res, status, 'text/plain; charset=utf-8', body);

/** A route whose failure answers 500 with the error's first line (express 5 passes a rejected promise to `next`). */
const route =
  (handle: (res: Response) => Promise<void> | void): RequestHandler =>
  async (_req: Request, res: Response) => {
    try {
      await handle(res);
    } catch (err) {
      if (res.headersSent) res.destroy();
      else sendText(res, 500, `${err instanceof Error ? err.message.split('\n')[0] : 'internal error'}\n`);
    }
  };

export async function createObserveApp(options: ObserveAppOptions): Promise<RequestListener> {
  const { default: express } = await import('express');
  const app = express();
  // No framework banner, no ETag computation for pages that change on every scrape, no query-string parsing.
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', false);
  app.get(
    '/healthz',
    route((res) => sendText(res, 200, 'ok\n')),
  );
  app.get(
    '/metrics',
    route(async (res) => {
      // List first, so that the Kubernetes request counters on this page include this scrape's listing.
      await options.zones?.get();
      const body = await options.metrics.registry.metrics();
      send(res, 200, options.metrics.registry.contentType, body);
    }),
  );
  app.get(
    '/status',
    route(async (res) => {
      const base = {
        role: options.role,
        pid: process.pid,
        startedAt: options.startedAt.toISOString(),
      };
      if (options.zones === undefined) {
        sendJson(res, 200, {
          ...base,
          zones: null,
          note: 'zone states are served by the vmzones/step process',
        });
        return;
      }
      const snapshot = await options.zones.get();
      const kubernetes = { ok: snapshot.ok, listedAt: snapshot.takenAt.toISOString() };
      if (!snapshot.ok) {
        sendJson(res, 503, { ...base, kubernetes: { ...kubernetes, error: snapshot.error }, zones: null });
        return;
      }
      sendJson(res, 200, { ...base, kubernetes, zones: snapshot.zones, problems: snapshot.problems });
    }),
  );
  app.use((_req: Request, res: Response) =>
    sendText(res, 404, 'not found: vmzones serves /metrics, /healthz and /status\n'),
  );
  return app;
}

/** Listens on host:port; resolves once bound (with the port actually bound), rejects on e.g. EADDRINUSE. */
export function listen(
  app: RequestListener,
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
