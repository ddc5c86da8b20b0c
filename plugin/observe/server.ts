// The request handler of the observe endpoint: /metrics (Prometheus text), /healthz, /status (JSON), on node:http (a
// web framework cost each plugin process ~29 MiB for three GET routes: README.md, "Design notes"). Read-only, no
// request input is used beyond the method and path; errors answer 500 with a one-line message and never a stack trace.

import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ObserveMetrics, ObserveRole } from './metrics.ts';
import type { ZoneSnapshots } from './zone-snapshot.ts';

export interface ObserveAppOptions {
  role: ObserveRole;
  metrics: ObserveMetrics;
  /** The step role's zone states; the gates role has none. */
  zones: ZoneSnapshots | undefined;
  startedAt: Date;
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const sendJson = (res: ServerResponse, status: number, body: unknown) =>
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));

const sendText = (res: ServerResponse, status: number, body: string) =>
  send(res, status, 'text/plain; charset=utf-8', body);

export function createObserveApp(options: ObserveAppOptions): RequestListener {
  const routes: Record<string, (res: ServerResponse) => Promise<void> | void> = {
    '/healthz': (res) => sendText(res, 200, 'ok\n'),
    '/metrics': async (res) => {
      // List first, so that the Kubernetes request counters on this page include this scrape's listing.
      await options.zones?.get();
      const body = await options.metrics.registry.metrics();
      send(res, 200, options.metrics.registry.contentType, body);
    },
    '/status': async (res) => {
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
    },
  };
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
    if (route === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) {
      sendText(res, 404, 'not found: vmzones serves /metrics, /healthz and /status\n');
      return;
    }
    Promise.resolve()
      .then(() => route(res))
      .catch((err: unknown) => {
        if (res.headersSent) res.destroy();
        else sendText(res, 500, `${err instanceof Error ? err.message.split('\n')[0] : 'internal error'}\n`);
      });
  };
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
