// A small Kubernetes API server on loopback for the client's tests (plugin/kube/kube-client.ts): HTTPS with a CA
// made for the test (test/unit/vm/tls-fixture.ts), a bearer token or a client certificate signed by that CA,
// discovery of a few kinds, get/list (label selector)/create/merge patch of objects kept in memory, and watches the
// test drives (send events, end them, refuse them with 410). It records every request and counts TLS connections.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import type { TlsFixture } from '../vm/tls-fixture.ts';

export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  auth: 'token' | 'basic' | 'cert' | 'none';
  token: string | undefined;
  contentType: string | undefined;
  body: unknown;
}

export interface OpenServerWatch {
  path: string;
  query: URLSearchParams;
  send(type: string, object: unknown): void;
  end(): void;
}

const discovery: Record<string, { name: string; kind: string; namespaced: boolean }[]> = {
  '/api/v1': [
    { name: 'pods', kind: 'Pod', namespaced: true },
    { name: 'pods/status', kind: 'Pod', namespaced: true },
    { name: 'namespaces', kind: 'Namespace', namespaced: false },
    { name: 'secrets', kind: 'Secret', namespaced: true },
  ],
  '/apis/operator.victoriametrics.com/v1beta1': [{ name: 'vmclusters', kind: 'VMCluster', namespaced: true }],
};

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

export class ApiServerFixture {
  readonly requests: Recorded[] = [];
  readonly watches: OpenServerWatch[] = [];
  /** Objects by `<collection path>/<name>`, e.g. `/api/v1/namespaces/vm/pods/a`. */
  readonly objects = new Map<string, KubeObject>();
  connections = 0;
  tokens = new Set<string>(['t0ken-one']);
  /** `user:password` pairs basic auth accepts. */
  basic = new Set<string>();
  /** Status codes to answer the next watch requests with (e.g. 410). */
  refuseWatches: number[] = [];
  /** Answers the next request with this status and body (e.g. a 422 quoting a credential). */
  failNext: { status: number; body: unknown } | undefined;
  /** Accepts requests and never answers them (a server that hangs). */
  silent = false;
  #resourceVersion = 100;
  #watchWaiters: (() => void)[] = [];
  readonly server: Server;

  constructor(tls: TlsFixture) {
    this.server = createServer(
      { cert: tls.serverCert, key: tls.serverKey, ca: tls.ca, requestCert: true, rejectUnauthorized: false },
      (req, res) => {
        void this.#handle(req, res);
      },
    );
    this.server.on('secureConnection', () => this.connections++);
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** Serves `resources` in the discovery of `groupVersionPath` from now on (a CRD installed). */
  serve(groupVersionPath: string, resources: { name: string; kind: string; namespaced: boolean }[]): void {
    discovery[groupVersionPath] = resources;
  }

  nextResourceVersion(): string {
    return String(++this.#resourceVersion);
  }

  put(collection: string, object: KubeObject): KubeObject {
    const stored = {
      ...object,
      metadata: { ...object.metadata, resourceVersion: this.nextResourceVersion() },
    };
    this.objects.set(`${collection}/${object.metadata.name}`, stored);
    return stored;
  }

  /** Resolves once `count` watches have been opened. */
  async watchOpened(count: number): Promise<OpenServerWatch> {
    while (this.watches.length < count) await new Promise<void>((r) => this.#watchWaiters.push(r));
    return this.watches[count - 1] as OpenServerWatch;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'https://fixture');
    const bearer = /^Bearer (.*)$/.exec(req.headers.authorization ?? '')?.[1];
    const socket = req.socket as TLSSocket;
    const basic = /^Basic (.*)$/.exec(req.headers.authorization ?? '')?.[1];
    const auth =
      bearer !== undefined ? 'token' : basic !== undefined ? 'basic' : socket.authorized ? 'cert' : 'none';
    this.requests.push({
      method: req.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      auth,
      token: bearer,
      contentType: req.headers['content-type'],
      body: text === '' ? undefined : JSON.parse(text),
    });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const status = (code: number, message: string) =>
      send(code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, message });
    if (this.silent) return;
    const basicPair = basic === undefined ? undefined : Buffer.from(basic, 'base64').toString('utf8');
    if (
      (auth === 'token' && !this.tokens.has(bearer ?? '')) ||
      (auth === 'basic' && !this.basic.has(basicPair ?? '')) ||
      auth === 'none'
    )
      return status(401, 'Unauthorized');
    if (this.failNext !== undefined) {
      const { status: code, body } = this.failNext;
      this.failNext = undefined;
      return send(code, body);
    }
    const resources = discovery[url.pathname];
    if (resources !== undefined) return send(200, { kind: 'APIResourceList', resources });
    if (url.pathname.startsWith('/apis/') && url.pathname.split('/').length === 4)
      return status(404, 'the server could not find the requested resource');
    if (url.searchParams.get('watch') === 'true') return this.#watch(url, res);
    const object = this.objects.get(url.pathname);
    if (req.method === 'GET' && object !== undefined) return send(200, object);
    if (req.method === 'GET') {
      const prefix = `${url.pathname}/`;
      const selector = url.searchParams.get('labelSelector');
      const [key, value] = selector?.split('=') ?? [];
      const items = [...this.objects.entries()]
        .filter(([path]) => path.startsWith(prefix) && !path.slice(prefix.length).includes('/'))
        .map(([, o]) => o)
        .filter((o) => key === undefined || o.metadata.labels?.[key] === value);
      if (items.length === 0 && !/\/(pods|vmclusters|secrets|widgets)$/.test(url.pathname))
        return status(404, `${url.pathname} not found`);
      return send(200, {
        kind: 'List',
        metadata: { resourceVersion: String(this.#resourceVersion) },
        items: items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest),
      });
    }
    if (req.method === 'POST') {
      const body = JSON.parse(text) as KubeObject;
      if (this.objects.has(`${url.pathname}/${body.metadata.name}`))
        return status(409, `${body.metadata.name} already exists`);
      return send(201, this.put(url.pathname, body));
    }
    if (req.method === 'PATCH') {
      if (object === undefined) return status(404, `${url.pathname} not found`);
      const patch = JSON.parse(text) as KubeObject;
      const wanted = patch.metadata.resourceVersion;
      if (wanted !== undefined && wanted !== object.metadata.resourceVersion)
        return status(409, 'the object has been modified; please apply your changes to the latest version');
      const patched = mergePatch(object, patch) as KubeObject;
      if (url.searchParams.get('dryRun') === 'All') return send(200, patched);
      const collection = url.pathname.slice(0, url.pathname.lastIndexOf('/'));
      return send(200, this.put(collection, patched));
    }
    return status(405, 'method not allowed');
  }

  #watch(url: URL, res: ServerResponse): void {
    const refused = this.refuseWatches.shift();
    if (refused !== undefined) {
      res.writeHead(refused, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: refused, message: 'too old resource version' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
    this.watches.push({
      path: url.pathname,
      query: url.searchParams,
      send: (type, object) => res.write(`${JSON.stringify({ type, object })}\n`),
      end: () => res.end(),
    });
    for (const wake of this.#watchWaiters.splice(0)) wake();
  }
}
