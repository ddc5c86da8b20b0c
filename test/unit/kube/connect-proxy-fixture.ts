// A forward proxy on loopback that speaks HTTP CONNECT only (what a kubeconfig's `proxy-url` points kubectl at): it
// opens a TCP tunnel to the host:port asked for and counts the tunnels, so that a test sees its requests went through
// it. Only loopback targets are allowed (tests send no traffic elsewhere).

import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';

export class ConnectProxyFixture {
  /** `host:port` of each tunnel asked for, in order. */
  readonly tunnels: string[] = [];
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  constructor() {
    this.#server = createServer((_req, res) => {
      res.writeHead(405).end('CONNECT only');
    });
    this.#server.on('connect', (req, client: Socket, head: Buffer) => {
      const target = req.url ?? '';
      const [host, port] = [
        target.slice(0, target.lastIndexOf(':')),
        Number(target.slice(target.lastIndexOf(':') + 1)),
      ];
      if (host !== '127.0.0.1' && host !== 'localhost') {
        client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
        return;
      }
      this.tunnels.push(target);
      const upstream = connect(port, host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
