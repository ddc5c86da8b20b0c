// HTTP to the Kubernetes API on top of @kubernetes/client-node: its KubeConfig authenticates (client certificates,
// tokens and rotating token files, exec credential plugins, OIDC, basic auth) and builds the connection for the
// cluster (TLS, proxy-url); its Watch streams watches. What vmzones adds around it (README.md, "Design notes"):
//   - ONE connection pool per cluster, kept while the TLS material stays the same. client-node 2.0.1 builds a new
//     undici Agent for every request (KubeConfig.applySecurityAuthentication), so every call opened a TLS connection
//     of its own (docs/deploy.md, "Memory"); here the Agent the library builds is kept and reused.
//   - requests through undici with deadlines and a cap on the answer's size; discovery of a kind's REST path
//     (the library's KubernetesObjectApi would bring its ~750 generated model classes for it);
//   - errors that carry the HTTP status and the API server's body (plugin/kube/objects.ts turns them into KubeErrors
//     with the credentials redacted); nothing here puts a token, key or certificate into a message.

import type { AgentOptions, RequestOptions as HttpsRequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { Cluster } from '@kubernetes/client-node/dist/config_types.js';
import type { RequestContext } from '@kubernetes/client-node/dist/gen/http/http.js';
import { Agent, type Dispatcher } from 'undici';
import { z } from 'zod';
import { CodedError, type FailureCode } from '../goplugin/failure-codes.ts';
import type { KubeConnection } from './kube-config.ts';

/** A response outside 2xx: `status` is the HTTP status, `body` the API server's text (a Status object, usually).
 *  plugin/kube/objects.ts makes a KubeError of it; its code here is the same one. */
export class KubeApiError extends CodedError {
  readonly status: number;
  readonly body: string;
  constructor(status: number, body: string, what: string) {
    super(failureCodeOfStatus(status), `${what}: HTTP ${status}`);
    this.name = 'KubeApiError';
    this.status = status;
    this.body = body;
  }
}

function failureCodeOfStatus(status: number): FailureCode {
  if (status === 404) return 'ObjectMissing';
  if (status === 401 || status === 403) return 'Forbidden';
  if (status === 400 || status === 422) return 'ApiRejected';
  return 'ApiTransient';
}

/** No byte came on a watch for its inactivity timeout: the connection may have died without a word. */
export class WatchInactiveError extends CodedError {
  constructor(path: string, inactivityMs: number) {
    super('ApiTransient', `watch ${path}: no data for ${inactivityMs / 1000} s`);
    this.name = 'WatchInactiveError';
  }
}

/** Discovery found no such kind in its group/version (its CRD is not installed). */
export class UnknownKindError extends CodedError {
  constructor(apiVersion: string, kind: string) {
    super('ObjectMissing', `Unrecognized API version and kind: ${apiVersion} ${kind}`);
    this.name = 'UnknownKindError';
  }
}

/** A watch without a byte for this long is closed and opened again (docs/scale.md, "Reconnects"). */
export const watchInactivityMs = 30_000;
/** How long discovery's "no such kind" is believed before the group/version is asked again. */
const unknownKindRecheckMs = 60_000;
/** At most this much of a response is kept (the largest list of ours is far below it). */
const maxBodyBytes = 64 * 1024 * 1024;
/** Idle pooled connections close after this long (the API server keeps them open far longer). */
const idleConnectionMs = 30_000;

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** Abandons the request after this long, failing with "no answer from the API server within N s". */
  timeoutMs?: number;
  /** Abandons the request when aborted (the caller's own deadline: plugin/kube/objects.ts). */
  signal?: AbortSignal;
}

export interface WatchHandle {
  abort(): void;
}

/** `(type, object)` of each watch event; `done` once when the stream ends: null when it ended normally. */
export type WatchCallback = (type: string, object: unknown) => void;

const resourceListSchema = z.object({
  resources: z.array(z.object({ name: z.string(), kind: z.string(), namespaced: z.boolean() })),
});

export interface Resource {
  plural: string;
  namespaced: boolean;
}

/** What the library's KubeConfig says one request needs: headers (the credential) and the TLS material. */
interface Authenticated {
  headers: Record<string, string>;
  dispatcher: Dispatcher;
}

/** KubeConfig's authentication step, private in its typings: TLS material into `ca`/`cert`/`key`/`servername`/
 *  `rejectUnauthorized`, the credential into `headers` (running an exec plugin or refreshing a token as needed). */
type Authenticator = { applyOptions(options: HttpsRequestOptions): Promise<void> };

/** KubeConfig's connection builder, which its typings keep private: the dispatcher for a cluster and its TLS material
 *  (a plain TLS Agent, an HTTP(S) proxy from proxy-url, or a SOCKS proxy). Pinned version: test/unit/kube covers each. */
type DispatcherBuilder = {
  createDispatcher(cluster: Cluster | null, options: AgentOptions): Dispatcher | undefined;
};

export class KubeClient {
  readonly connection: KubeConnection;
  readonly #config: KubeConfig;
  readonly #base: URL;
  readonly #now: () => number;
  #pool: { key: string; dispatcher: Dispatcher } | undefined;
  readonly #resources = new Map<string, { at: number; byKind: Promise<Map<string, Resource>> }>();

  constructor(connection: KubeConnection, options: { now?: () => number } = {}) {
    this.connection = connection;
    this.#config = connection.config;
    this.#base = new URL(connection.server);
    this.#now = options.now ?? Date.now;
  }

  /** The credential and connection pool of the next request: the library authenticates (running an exec plugin or
   *  refreshing an OIDC token when its credential expired, re-reading a rotated token file); the pool is kept
   *  unless the TLS material changed (a rotated client certificate), when a new one replaces it. */
  async #authenticate(): Promise<Authenticated> {
    const options: HttpsRequestOptions = { headers: {} };
    try {
      // What the public applyToHTTPSOptions does but for the node:https Agent it adds (unused here, and refused for
      // a plain-HTTP server): TLS material and the credential.
      await (this.#config as unknown as Authenticator).applyOptions(options);
    } catch (err) {
      throw credentialError(this.connection, err);
    }
    const headers: Record<string, string> = {};
    // A token file's trailing newline is no part of the token (kubectl trims it too).
    for (const [name, value] of Object.entries(options.headers ?? {}))
      if (value !== undefined) headers[name.toLowerCase()] = String(value).trim();
    const user = this.#config.getCurrentUser();
    if (user?.username)
      headers.authorization = `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`;
    const cluster = this.#config.getCurrentCluster();
    const tls: AgentOptions = {
      // Verified unless the kubeconfig (or the cluster's Secret) says insecure-skip-tls-verify.
      rejectUnauthorized: cluster?.skipTLSVerify !== true,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      ...(options.cert === undefined ? {} : { cert: options.cert }),
      ...(options.key === undefined ? {} : { key: options.key }),
      ...(options.servername === undefined ? {} : { servername: options.servername }),
    };
    const key = JSON.stringify([
      tls.rejectUnauthorized,
      tls.servername,
      pem(tls.ca),
      pem(tls.cert),
      pem(tls.key),
    ]);
    if (this.#pool?.key !== key) {
      let dispatcher: Dispatcher | undefined;
      try {
        // A plain-HTTP server without a proxy has no TLS to set up (kube-config.ts decided it may be used); the
        // library's builder would refuse it unless insecure-skip-tls-verify is set.
        dispatcher =
          this.#base.protocol === 'http:' && !cluster?.proxyUrl
            ? undefined
            : (this.#config as unknown as DispatcherBuilder).createDispatcher(cluster, tls);
      } catch (err) {
        throw credentialError(this.connection, err);
      }
      const old = this.#pool?.dispatcher;
      this.#pool = { key, dispatcher: dispatcher ?? new Agent({ keepAliveTimeout: idleConnectionMs }) };
      // Requests in flight on the old pool finish (watches included); it closes once they are done.
      void old?.close().catch(() => {});
    }
    return { headers, dispatcher: this.#pool.dispatcher };
  }

  #url(path: string, query: RequestOptions['query']): URL {
    const url = new URL(this.#base.href);
    url.pathname = `${this.#base.pathname.replace(/\/+$/, '')}${path}`;
    for (const [name, value] of Object.entries(query ?? {}))
      if (value !== undefined) url.searchParams.set(name, String(value));
    return url;
  }

  /** One request; the parsed JSON answer, or a KubeApiError for a status outside 2xx. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    const what = `${method} ${path}`;
    const timeout = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
    const signals = [timeout, options.signal].filter((x) => x !== undefined);
    const signal = signals.length === 0 ? undefined : AbortSignal.any(signals);
    try {
      return await this.#exchange(method, path, options, signal, what);
    } catch (err) {
      if (timeout?.aborted === true)
        throw new Error(`${what}: no answer from the API server within ${(options.timeoutMs ?? 0) / 1000} s`);
      throw err;
    }
  }

  async #exchange(
    method: string,
    path: string,
    options: RequestOptions,
    signal: AbortSignal | undefined,
    what: string,
  ): Promise<unknown> {
    const { headers, dispatcher } = await this.#authenticate();
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    headers.accept = 'application/json';
    if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    const url = this.#url(path, options.query);
    const response = await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: method as Dispatcher.HttpMethod,
      headers,
      ...(body === undefined ? {} : { body }),
      ...(signal === undefined ? {} : { signal }),
    });
    const text = await readCapped(
      response.body,
      maxBodyBytes,
      () => new Error(`${what}: the answer is larger than ${maxBodyBytes / 1024 / 1024} MiB`),
    );
    const status = response.statusCode;
    if (status < 200 || status > 299) throw new KubeApiError(status, text, what);
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`${what}: the answer is not JSON`);
    }
  }

  /**
   * A watch through the library's Watch, on this cluster's pool: each event to `onEvent`; `done(null)` when the
   * server ends the stream, `done(err)` on a failure (a KubeApiError with the status when the server refused the
   * watch, e.g. 410 Gone), or a WatchInactiveError when no byte came for `inactivityMs` (a quiet watch, or a
   * connection that died without a word: both look the same). Not called after `abort()`.
   */
  async watch(
    path: string,
    query: NonNullable<RequestOptions['query']>,
    onEvent: WatchCallback,
    done: (err: unknown) => void,
    inactivityMs = watchInactivityMs,
  ): Promise<WatchHandle> {
    let aborted = false;
    // The Watch asks its configuration for the cluster's address and for each request's credential and dispatcher:
    // this client answers with the pooled one instead of the Agent per request the library would build.
    const pooled = {
      getCurrentCluster: () => ({
        ...this.#config.getCurrentCluster(),
        server: `${this.#base.origin}${this.#base.pathname.replace(/\/+$/, '')}`,
      }),
      applySecurityAuthentication: async (context: RequestContext) => {
        const { headers, dispatcher } = await this.#authenticate();
        for (const [name, value] of Object.entries(headers)) context.setHeaderParam(name, value);
        context.setDispatcher(dispatcher);
      },
    };
    // Loaded with the first watch: a process that never watches (the gates role) never evaluates it or undici's fetch.
    const { Watch } = await import('@kubernetes/client-node/dist/watch.js');
    const watcher = new Watch(pooled as unknown as KubeConfig);
    // Its inactivity timeout (30 s by default), typed private in 2.0.1.
    (watcher as unknown as { requestTimeoutMs: number }).requestTimeoutMs = inactivityMs;
    const params: Record<string, string> = {};
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params[name] = String(value);
    let controller: AbortController | undefined;
    try {
      controller = await watcher.watch(
        path,
        params,
        (type: string, object: unknown) => {
          if (!aborted) onEvent(type, object);
        },
        (err: unknown) => {
          if (!aborted) done(watchFailure(err, path, inactivityMs));
        },
      );
    } catch (err) {
      if (!aborted) done(err);
    }
    return {
      abort: () => {
        aborted = true;
        controller?.abort();
      },
    };
  }

  /** The REST path part and scope of `kind` in `apiVersion`, from the API server's discovery (cached). */
  async resource(apiVersion: string, kind: string, timeoutMs?: number): Promise<Resource> {
    let cached = this.#resources.get(apiVersion);
    if (cached === undefined) {
      const byKind = this.request(
        'GET',
        groupVersionPath(apiVersion),
        timeoutMs === undefined ? {} : { timeoutMs },
      ).then(
        (answer) => {
          const parsed = resourceListSchema.safeParse(answer);
          if (!parsed.success) throw new Error(`discovery of ${apiVersion}: not an APIResourceList`);
          const found = new Map<string, Resource>();
          // Subresources (`pods/status`) share the kind: the plain resource is the one without a slash.
          for (const r of parsed.data.resources)
            if (!r.name.includes('/')) found.set(r.kind, { plural: r.name, namespaced: r.namespaced });
          return found;
        },
        (err: unknown) => {
          if (err instanceof KubeApiError && err.status === 404) return new Map<string, Resource>();
          throw err;
        },
      );
      const entry = { at: this.#now(), byKind };
      cached = entry;
      this.#resources.set(apiVersion, entry);
      // A failed discovery is asked again on the next call.
      byKind.catch(() => {
        if (this.#resources.get(apiVersion) === entry) this.#resources.delete(apiVersion);
      });
    }
    const found = (await cached.byKind).get(kind);
    if (found === undefined) {
      // A kind not served (its CRD not installed, e.g. a zone kind nobody uses) is asked again only after a while:
      // the reconciler lists every zone kind on each pass, and a CRD installed later is seen within a minute.
      if (this.#now() - cached.at >= unknownKindRecheckMs && this.#resources.get(apiVersion) === cached)
        this.#resources.delete(apiVersion);
      throw new UnknownKindError(apiVersion, kind);
    }
    return found;
  }

  /** The collection path of `kind` (in `namespace`, '' for all), or of one object with `name`. */
  async path(apiVersion: string, kind: string, namespace: string, name?: string, timeoutMs?: number) {
    const resource = await this.resource(apiVersion, kind, timeoutMs);
    return resourcePath(apiVersion, resource, namespace, name);
  }

  /** Closes idle connections (a client no longer used). */
  close(): void {
    void this.#pool?.dispatcher.destroy().catch(() => {});
    this.#pool = undefined;
  }
}

/** An answer's body as UTF-8 text, read up to `maxBytes`: beyond, the body is dropped and `tooLarge()` thrown. */
export async function readCapped(
  body: Dispatcher.ResponseData['body'],
  maxBytes: number,
  tooLarge: () => Error,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

export function resourcePath(
  apiVersion: string,
  resource: Resource,
  namespace: string,
  name?: string,
): string {
  const scope = resource.namespaced && namespace !== '' ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const object = name === undefined ? '' : `/${encodeURIComponent(name)}`;
  return `${groupVersionPath(apiVersion)}${scope}/${resource.plural}${object}`;
}

const pem = (material: unknown) =>
  material === undefined ? '' : Array.isArray(material) ? material.map(String).join('\n') : String(material);

/** How the library's Watch ended, in this client's terms: its timeout of inactivity, a refused watch (the Watch keeps
 *  only the status), or a failure. */
function watchFailure(err: unknown, path: string, inactivityMs: number): unknown {
  if (err === null || err === undefined) return null;
  if (err instanceof Error && err.name === 'TimeoutError') return new WatchInactiveError(path, inactivityMs);
  const status = (err as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number') return new KubeApiError(status, '', `watch ${path}`);
  if (err instanceof Error && err.name === 'AbortError') return null;
  return err;
}

/** A credential the library could not get (an exec plugin failed, a file it names is missing, an OIDC refresh was
 *  refused): said by where it came from, never by the library's message, which may quote the plugin's error output
 *  or a file's content. */
function credentialError(connection: KubeConnection, err: unknown): Error {
  const user = connection.config.getCurrentUser();
  const code = (err as NodeJS.ErrnoException).code;
  const path = (err as NodeJS.ErrnoException).path;
  if (typeof code === 'string' && typeof path === 'string')
    return new KubeCredentialError(`${connection.source}: cannot read ${path} (${code})`);
  if (user?.exec !== undefined && user.exec !== null) {
    const command = (user.exec as { command?: unknown }).command;
    return new KubeCredentialError(
      `${connection.source}: exec credential plugin ${String(command)} failed (its output is not shown: it may hold a credential)`,
    );
  }
  if (user?.authProvider !== undefined && user.authProvider !== null)
    return new KubeCredentialError(
      `${connection.source}: auth-provider ${String((user.authProvider as { name?: unknown }).name)} gave no credential`,
    );
  return new KubeCredentialError(
    `${connection.source}: no credential or connection could be built (${errName(err)})`,
  );
}

const errName = (err: unknown) => (err instanceof Error ? err.name : typeof err);

/** The kubeconfig's credential could not be had: retrying may help (an exec plugin's network), so it is transient. */
export class KubeCredentialError extends CodedError {
  constructor(message: string) {
    super('ApiTransient', message);
    this.name = 'KubeCredentialError';
  }
}
