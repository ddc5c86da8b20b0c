// A fixed page (a vmauth or reloader /metrics page) served on loopback for the vm unit tests; every server one test
// file started is closed after its tests.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';

export const pageServers: Server[] = [];
after(async () => {
  await Promise.all(pageServers.map((server) => new Promise((resolve) => server.close(resolve))));
});

/** Serves `page` to every request; returns its port. */
export async function servePage(page: string): Promise<number> {
  const server = createServer((_request, response) => response.end(page));
  pageServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Serves what `page()` returns at each request (a page that changes between readings); returns its port. */
export async function serveChangingPage(page: () => string): Promise<number> {
  const server = createServer((_request, response) => response.end(page()));
  pageServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}
