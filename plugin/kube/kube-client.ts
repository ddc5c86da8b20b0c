// The project's own HTTP client for the Kubernetes API: requests and watches on node:https with ONE keep-alive Agent
// per cluster, bearer tokens (a token file re-read as it rotates, an exec credential plugin's token until it
// expires), client certificates, and discovery of a kind's REST path. It replaces @kubernetes/client-node, which cost
// each plugin process ~50 MiB of memory for the four calls vmzones makes (README.md, "Design notes").
// Errors carry the HTTP status and the API server's body (plugin/kube/objects.ts turns them into KubeErrors with
// the credentials redacted); nothing here puts a token, key or certificate into a message.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { z } from 'zod';
import { CodedError, type FailureCode } from '../goplugin/failure-codes.ts';
import type { ExecConfig, KubeConnection } from './kube-config.ts';

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

/** How often file material (token, CA, client certificate) is read again: kubelet rotates tokens well before
 *  they expire, and client-go re-reads them once a minute too. */
const rereadMs = 60_000;
/** A watch without a byte for this long is closed and opened again (the previous Kubernetes client's figure;
 *  docs/scale.md, "Reconnects"). */
export const watchInactivityMs = 30_000;
/** How long discovery's "no such kind" is believed before the group/version is asked again. */
const unknownKindRecheckMs = 60_000;
/** An exec plugin's answer is trusted until this long before its expirationTimestamp. */
const execEarlyMs = 10_000;
const execTimeoutMs = 60_000;
/** At most this much of a response is kept (the largest list of ours is far below it). */
const maxBodyBytes = 64 * 1024 * 1024;

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

const execCredentialSchema = z.object({
  status: z.object({
    token: z.string().optional(),
    clientCertificateData: z.string().optional(),
    clientKeyData: z.string().optional(),
    expirationTimestamp: z.string().optional(),
  }),
});

const resourceListSchema = z.object({
  resources: z.array(z.object({ name: z.string(), kind: z.string(), namespaced: z.boolean() })),
});

export interface Resource {
  plural: string;
  namespaced: boolean;
}

interface Credentials {
  token: string | undefined;
  cert: string | undefined;
  key: string | undefined;
}

// No cap on sockets: a watch holds its socket for minutes, and a capped pool would queue every other call behind the
// watches. Idle sockets beyond a few are closed: 50 walks' concurrent calls must not stay open after their burst.
const pool = { keepAlive: true, maxFreeSockets: 4 };

const decode = (base64: string) => Buffer.from(base64.replace(/\s/g, ''), 'base64').toString('utf8');

export interface KubeClientOptions {
  now?: () => number;
  /** Runs an exec credential plugin (tests give their own); default: execFile. */
  runExec?: (exec: ExecConfig) => Promise<string>;
}

function runExecFile(exec: ExecConfig): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      exec.command,
      [...exec.args],
      {
        env: {
          ...process.env,
          ...Object.fromEntries(exec.env.map((e) => [e.name, e.value])),
          KUBERNETES_EXEC_INFO: JSON.stringify({
            apiVersion: exec.apiVersion,
            kind: 'ExecCredential',
            spec: { interactive: false },
          }),
        },
        timeout: execTimeoutMs,
        maxBuffer: 1024 * 1024,
      },
      (err, stdout) => {
        // The plugin's output is the credential and its arguments may carry one: neither is part of the message.
        if (err) {
          const how =
            typeof err.code === 'number'
              ? `exit code ${err.code}`
              : err.killed
                ? `stopped after ${execTimeoutMs / 1000} s`
                : String(err.code ?? 'failed to start');
          reject(new Error(`exec credential plugin ${exec.command} failed (${how})`));
        } else resolve(stdout);
      },
    );
  });
}

export class KubeClient {
  readonly connection: KubeConnection;
  readonly #base: URL;
  readonly #now: () => number;
  readonly #runExec: (exec: ExecConfig) => Promise<string>;
  #agent: { key: string; agent: HttpsAgent | HttpAgent } | undefined;
  #files: { at: number; ca?: string; cert?: string; key?: string; token?: string } | undefined;
  #exec: { until: number; credentials: Promise<Credentials> } | undefined;
  readonly #resources = new Map<string, { at: number; byKind: Promise<Map<string, Resource>> }>();

  constructor(connection: KubeConnection, options: KubeClientOptions = {}) {
    this.connection = connection;
    this.#base = new URL(connection.server);
    this.#now = options.now ?? Date.now;
    this.#runExec = options.runExec ?? runExecFile;
  }

  /** File material as it is now, read again at most every rereadMs. */
  #fileMaterial() {
    const c = this.connection;
    if (this.#files !== undefined && this.#now() - this.#files.at < rereadMs) return this.#files;
    const read = (file: string | undefined) => {
      if (file === undefined) return undefined;
      try {
        return readFileSync(file, 'utf8');
      } catch (err) {
        throw new Error(
          `${c.source}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        );
      }
    };
    this.#files = {
      at: this.#now(),
      ...(c.caFile === undefined ? {} : { ca: read(c.caFile) }),
      ...(c.certFile === undefined ? {} : { cert: read(c.certFile) }),
      ...(c.keyFile === undefined ? {} : { key: read(c.keyFile) }),
      ...(c.tokenFile === undefined ? {} : { token: read(c.tokenFile)?.trim() }),
    };
    return this.#files;
  }

  async #execCredentials(exec: ExecConfig): Promise<Credentials> {
    if (this.#exec !== undefined && this.#now() < this.#exec.until) return this.#exec.credentials;
    const credentials = this.#runExec(exec).then((out) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(out);
      } catch {
        throw new Error(`exec credential plugin ${exec.command}: its output is not JSON`);
      }
      const result = execCredentialSchema.safeParse(parsed);
      if (!result.success)
        throw new Error(
          `exec credential plugin ${exec.command}: its output is no ExecCredential with a status`,
        );
      const status = result.data.status;
      if (status.expirationTimestamp !== undefined && this.#exec !== undefined) {
        this.#exec.until = Date.parse(status.expirationTimestamp) - execEarlyMs;
      }
      return { token: status.token, cert: status.clientCertificateData, key: status.clientKeyData };
    });
    this.#exec = { until: Number.POSITIVE_INFINITY, credentials };
    credentials.catch(() => {
      this.#exec = undefined;
    });
    return credentials;
  }

  /** Forgets an exec plugin's credential (the API server said 401: it may have been revoked early). */
  #forgetExec(): void {
    this.#exec = undefined;
  }

  async #credentials(): Promise<Credentials & { ca: string | undefined }> {
    const c = this.connection;
    const files = this.#fileMaterial();
    const exec = c.exec === undefined ? undefined : await this.#execCredentials(c.exec);
    return {
      ca: c.caData !== undefined ? decode(c.caData) : files.ca,
      cert: exec?.cert ?? (c.certData !== undefined ? decode(c.certData) : files.cert),
      key: exec?.key ?? (c.keyData !== undefined ? decode(c.keyData) : files.key),
      token: exec?.token ?? c.token ?? files.token,
    };
  }

  /** The one Agent of this cluster; rebuilt (the old one closed) only when its TLS material changed. */
  #agentFor(material: { ca: string | undefined; cert: string | undefined; key: string | undefined }) {
    const key = `${material.ca ?? ''}\0${material.cert ?? ''}\0${material.key ?? ''}`;
    if (this.#agent?.key === key) return this.#agent.agent;
    const old = this.#agent?.agent;
    const c = this.connection;
    const agent =
      this.#base.protocol === 'http:'
        ? new HttpAgent(pool)
        : new HttpsAgent({
            ...pool,
            rejectUnauthorized: !c.skipTLSVerify,
            ...(material.ca === undefined ? {} : { ca: material.ca }),
            ...(material.cert === undefined ? {} : { cert: material.cert }),
            ...(material.key === undefined ? {} : { key: material.key }),
            ...(c.tlsServerName === undefined ? {} : { servername: c.tlsServerName }),
          });
    this.#agent = { key, agent };
    if (old !== undefined) {
      // Requests in flight on the old Agent finish (watches included); its idle sockets close now, the others
      // once their request is done.
      old.maxFreeSockets = 0;
      for (const sockets of Object.values(old.freeSockets))
        for (const socket of sockets ?? []) socket.destroy();
    }
    return agent;
  }

  #url(path: string, query: RequestOptions['query']): URL {
    const url = new URL(this.#base.href);
    url.pathname = `${this.#base.pathname.replace(/\/+$/, '')}${path}`;
    for (const [name, value] of Object.entries(query ?? {}))
      if (value !== undefined) url.searchParams.set(name, String(value));
    return url;
  }

  async #open(
    method: string,
    path: string,
    options: RequestOptions,
    signal: AbortSignal | undefined,
  ): Promise<IncomingMessage> {
    const material = await this.#credentials();
    const agent = this.#agentFor(material);
    const url = this.#url(path, options.query);
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (material.token !== undefined) headers.authorization = `Bearer ${material.token}`;
    if (body !== undefined) {
      headers['content-type'] = options.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, { method, headers, agent, ...(signal === undefined ? {} : { signal }) }, resolve);
      req.on('error', reject);
      req.end(body);
    });
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
    const response = await this.#open(method, path, options, signal);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBodyBytes) {
        response.destroy();
        throw new Error(`${what}: the answer is larger than ${maxBodyBytes / 1024 / 1024} MiB`);
      }
      chunks.push(chunk);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const status = response.statusCode ?? 0;
    if (status < 200 || status > 299) {
      if (status === 401) this.#forgetExec();
      throw new KubeApiError(status, text, what);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`${what}: the answer is not JSON`);
    }
  }

  /**
   * A watch: each event line to `onEvent`; `done(null)` when the server ends the stream, `done(err)` on a failure
   * (a KubeApiError with the status when the server refused the watch, e.g. 410 Gone), or a WatchInactiveError when
   * no byte came for `inactivityMs` (a quiet watch, or a connection that died without a word: both look the same).
   */
  async watch(
    path: string,
    query: NonNullable<RequestOptions['query']>,
    onEvent: WatchCallback,
    done: (err: unknown) => void,
    inactivityMs = watchInactivityMs,
  ): Promise<WatchHandle> {
    const controller = new AbortController();
    let finished = false;
    const finish = (err: unknown) => {
      if (finished) return;
      finished = true;
      clearTimeout(idle);
      done(err);
    };
    let idle: NodeJS.Timeout | undefined;
    const resetIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        controller.abort();
        finish(new WatchInactiveError(path, inactivityMs));
      }, inactivityMs);
      idle.unref();
    };
    resetIdle();
    const handle = {
      abort: () => {
        finished = true;
        clearTimeout(idle);
        controller.abort();
      },
    };
    let response: IncomingMessage;
    try {
      response = await this.#open('GET', path, { query: { ...query, watch: true } }, controller.signal);
    } catch (err) {
      finish(err);
      return handle;
    }
    const status = response.statusCode ?? 0;
    if (status < 200 || status > 299) {
      const chunks: Buffer[] = [];
      response.on('data', (c: Buffer) => chunks.push(c));
      response.on('end', () =>
        finish(new KubeApiError(status, Buffer.concat(chunks).toString('utf8'), `watch ${path}`)),
      );
      response.on('error', finish);
      return handle;
    }
    let pending = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      resetIdle();
      pending += chunk;
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        newline = pending.indexOf('\n');
        if (line === '' || finished) continue;
        let event: { type?: unknown; object?: unknown };
        try {
          event = JSON.parse(line) as { type?: unknown; object?: unknown };
        } catch {
          controller.abort();
          finish(new Error(`watch ${path}: an event is not JSON`));
          return;
        }
        if (typeof event.type === 'string') onEvent(event.type, event.object);
      }
    });
    response.on('end', () => finish(null));
    response.on('error', (err) => finish(err));
    response.on('close', () => finish(null));
    return handle;
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
    this.#agent?.agent.destroy();
    this.#agent = undefined;
  }
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
