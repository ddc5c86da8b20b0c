// What `kubectl proxy` is to a client: a plain-HTTP server on loopback that forwards every request to the API server
// with its own credential (here: to the loopback HTTPS API server fixture, with a bearer token), so that a kubeconfig
// of `server: http://127.0.0.1:PORT` and no user works. It counts the requests it forwarded.

import { createServer, type Server } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';

export class KubectlProxyFixture {
  forwarded = 0;
  readonly #server: Server;

  /** `upstream` is the API server fixture's https URL, `ca` its CA, `token` the credential the proxy adds. */
  constructor(upstream: string, ca: string, token: string) {
    const target = new URL(upstream);
    this.#server = createServer((req, res) => {
      this.forwarded++;
      const headers = { ...req.headers, host: target.host, authorization: `Bearer ${token}` };
      const forward = request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers, ca },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          // A watch's headers come before any event (kubectl proxy flushes streamed answers as they come).
          res.flushHeaders();
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      req.pipe(forward);
    });
  }

  /** Listens on 127.0.0.1 and returns `http://127.0.0.1:PORT`. */
  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
