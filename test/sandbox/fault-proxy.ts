// A fault-injecting HTTPS proxy in front of the sandbox's kube-apiserver, for the plugin processes only
// (docs/testing.md, "Fault injection"). It terminates TLS with the API server's own serving certificate (same
// CA, SAN 127.0.0.1) and re-originates every request to the API server with the admin client certificate, so
// it sees verbs, resources and bodies: it can answer 500/503/429/409 with a Kubernetes Status, hang, or reset
// the connection, either instead of forwarding ("before": nothing reached the API server) or after the API
// server applied the request ("after": the write happened, the client sees a failure). Which requests get a
// fault is decided by rules (verb/resource/namespace/name/user agent, a rate drawn from a seeded generator,
// an optional limit); rules change at run time through the control API. It counts requests and injected
// faults by verb and resource, and logs every PATCH that touches a `spec` (for counting duplicate patches).

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { seededRandom } from '../fixtures/seeded-random.ts';
import { fetchFrom } from './http.ts';

export const faultKinds = ['status500', 'status503', 'status429', 'status409', 'hang', 'reset'] as const;
export type FaultKind = (typeof faultKinds)[number];

export interface FaultRule {
  /** The faults to pick from (uniformly, from the seeded generator) when the rule fires. */
  faults: FaultKind[];
  /** Probability per matching request, 0..1 (1: every matching request). */
  rate: number;
  /** Kubernetes verbs: get, list, watch, create, update, patch, delete, deletecollection, discovery. */
  verbs?: string[];
  /** Resources as in the URL, optionally with subresource: vmclusters, vmclusters/status, pods. */
  resources?: string[];
  namespaces?: string[];
  names?: string[];
  /** Substring of the User-Agent header. */
  userAgent?: string;
  /** before (default): instead of forwarding; after: forward, then replace the answer; either: pick one. */
  when?: 'before' | 'after' | 'either';
  /** Stop firing after this many faults. */
  limit?: number;
}

export interface FaultConfig {
  /** Seed of the generator that draws rates, fault kinds and before/after (same seed, same draws). */
  seed: number;
  rules: FaultRule[];
  /** How long a hang lasts before the proxy drops the connection (default 60 s). */
  hangMs?: number;
}

export interface RequestInfo {
  verb: string;
  /** resource or resource/subresource; '' for discovery and other non-resource paths. */
  resource: string;
  namespace: string;
  name: string;
  dryRun: boolean;
}

/** One PATCH whose body has a `spec`, as the API server answered it. */
export interface SpecPatch {
  at: string;
  resource: string;
  namespace: string;
  name: string;
  /** sha256 of the canonical JSON of the body's `spec`. */
  specHash: string;
  spec: unknown;
  /** The API server's status code; 0 when the proxy answered instead (fault before forwarding). */
  status: number;
  /** metadata.generation the API server returned (2xx only). */
  generation?: number;
  /** The fault injected on this request, if any. */
  fault?: string;
}

export interface ProxyStats {
  requestsTotal: number;
  faultsTotal: number;
  /** By "<verb> <resource>". */
  requests: Record<string, number>;
  /** By "<fault>/<before|after> <verb> <resource>". */
  faults: Record<string, number>;
  userAgents: Record<string, number>;
  specPatches: SpecPatch[];
}

function emptyStats(): ProxyStats {
  return { requestsTotal: 0, faultsTotal: 0, requests: {}, faults: {}, userAgents: {}, specPatches: [] };
}

const verbByMethod: Record<string, string> = {
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/** Parses a kube-apiserver URL (/api/v1/..., /apis/<group>/<version>/...) into verb and resource. */
export function classify(method: string, rawUrl: string): RequestInfo {
  const url = new URL(rawUrl, 'https://proxy.invalid');
  const parts = url.pathname.split('/').filter(Boolean);
  const dryRun = url.searchParams.get('dryRun') === 'All';
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 2) rest = parts.slice(2);
  else if (parts[0] === 'apis' && parts.length >= 3) rest = parts.slice(3);
  else return { verb: 'discovery', resource: '', namespace: '', name: '', dryRun };
  let namespace = '';
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1] ?? '';
    rest = rest.slice(2);
  }
  if (rest.length === 0) return { verb: 'discovery', resource: '', namespace, name: '', dryRun };
  const [resource = '', name = '', sub] = rest;
  const full = sub === undefined ? resource : `${resource}/${sub}`;
  let verb: string;
  if (method === 'GET' || method === 'HEAD') {
    verb =
      url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1'
        ? 'watch'
        : name
          ? 'get'
          : 'list';
  } else if (method === 'DELETE' && name === '') {
    verb = 'deletecollection';
  } else {
    verb = verbByMethod[method] ?? method.toLowerCase();
  }
  return { verb, resource: full, namespace, name, dryRun };
}

function matches(rule: FaultRule, info: RequestInfo, userAgent: string): boolean {
  if (rule.verbs !== undefined && !rule.verbs.includes(info.verb)) return false;
  if (rule.resources !== undefined && !rule.resources.includes(info.resource)) return false;
  if (rule.namespaces !== undefined && !rule.namespaces.includes(info.namespace)) return false;
  if (rule.names !== undefined && !rule.names.includes(info.name)) return false;
  if (rule.userAgent !== undefined && !userAgent.includes(rule.userAgent)) return false;
  return true;
}

/** Checks a config received on the control API; the message names the field. */
export function parseFaultConfig(value: unknown): FaultConfig {
  const fail = (message: string): never => {
    throw new Error(`fault config: ${message}`);
  };
  if (typeof value !== 'object' || value === null) fail('must be a JSON object');
  const v = value as Record<string, unknown>;
  const seed = v.seed ?? 1;
  if (typeof seed !== 'number' || !Number.isInteger(seed)) fail('seed must be an integer');
  if (v.hangMs !== undefined && (typeof v.hangMs !== 'number' || v.hangMs < 0)) fail('hangMs must be ≥ 0');
  if (!Array.isArray(v.rules)) fail('rules must be an array');
  const rules = (v.rules as unknown[]).map((r, i) => {
    if (typeof r !== 'object' || r === null) fail(`rules[${i}] must be an object`);
    const rule = r as Record<string, unknown>;
    if (!Array.isArray(rule.faults) || rule.faults.length === 0)
      fail(`rules[${i}].faults must be a non-empty array`);
    for (const f of rule.faults as unknown[]) {
      if (!faultKinds.includes(f as FaultKind))
        fail(`rules[${i}].faults: ${JSON.stringify(f)} is not one of ${faultKinds.join(', ')}`);
    }
    if (typeof rule.rate !== 'number' || rule.rate < 0 || rule.rate > 1)
      fail(`rules[${i}].rate must be in 0..1`);
    for (const key of ['verbs', 'resources', 'namespaces', 'names'] as const) {
      const list = rule[key];
      if (list !== undefined && (!Array.isArray(list) || list.some((x) => typeof x !== 'string')))
        fail(`rules[${i}].${key} must be an array of strings`);
    }
    if (rule.when !== undefined && !['before', 'after', 'either'].includes(rule.when as string))
      fail(`rules[${i}].when must be before, after or either`);
    if (rule.limit !== undefined && (typeof rule.limit !== 'number' || rule.limit < 0))
      fail(`rules[${i}].limit must be ≥ 0`);
    return rule as unknown as FaultRule;
  });
  return { seed: seed as number, rules, ...(v.hangMs === undefined ? {} : { hangMs: v.hangMs as number }) };
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Applied spec patches (2xx, not dry-run) that repeat the spec of the previous applied spec patch on the same
 * object: a write replayed after its answer was lost, or one the caller did not know it had already made.
 */
export function duplicateSpecPatches(patches: readonly SpecPatch[], resource = 'vmclusters'): SpecPatch[] {
  const last = new Map<string, string>();
  const duplicates: SpecPatch[] = [];
  for (const p of patches) {
    if (p.resource !== resource || p.status < 200 || p.status >= 300) continue;
    const key = `${p.namespace}/${p.name}`;
    if (last.get(key) === p.specHash) duplicates.push(p);
    last.set(key, p.specHash);
  }
  return duplicates;
}

const statusReasons: Record<number, string> = {
  409: 'Conflict',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

function statusBody(code: number, info: RequestInfo): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `injected by the sandbox fault proxy: ${code} on ${info.verb} ${info.resource || 'discovery'}`,
    reason: statusReasons[code],
    details: { name: info.name, kind: info.resource },
    code,
  });
}

export interface FaultProxyOptions {
  /** The API server, e.g. https://127.0.0.1:6443. */
  upstream: string;
  /** Folder with ca.crt, apiserver.{crt,key} (served) and admin.{crt,key} (sent upstream). */
  pkiDir: string;
  port?: number;
  controlPort?: number;
  config?: FaultConfig;
}

export interface FaultProxy {
  /** https://127.0.0.1:<port>: what the plugin's kubeconfig points at. */
  readonly url: string;
  /** http://127.0.0.1:<port>: GET /stats, PUT /config, DELETE /config, POST /reset. */
  readonly controlUrl: string;
  setConfig(config: FaultConfig): void;
  stats(): ProxyStats;
  resetStats(): void;
  close(): Promise<void>;
}

function listen(
  server: { listen(port: number, host: string, cb: () => void): unknown; address(): unknown },
  port: number,
): Promise<number> {
  return new Promise((resolve) =>
    server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = new URL(options.upstream);
  const agent = new Agent({
    keepAlive: true,
    ca: readFileSync(join(options.pkiDir, 'ca.crt')),
    cert: readFileSync(join(options.pkiDir, 'admin.crt')),
    key: readFileSync(join(options.pkiDir, 'admin.key')),
  });
  let config: FaultConfig = options.config ?? { seed: 1, rules: [] };
  let random = seededRandom(config.seed);
  const fired = new Map<FaultRule, number>();
  let stats = emptyStats();
  const hanging = new Set<Socket>();
  const bump = (map: Record<string, number>, key: string) => {
    map[key] = (map[key] ?? 0) + 1;
  };

  /** Draws for every rule that matches, in order; the first that fires decides. */
  const decide = (info: RequestInfo, userAgent: string): { kind: FaultKind; after: boolean } | undefined => {
    for (const rule of config.rules) {
      if (!matches(rule, info, userAgent)) continue;
      if (rule.limit !== undefined && (fired.get(rule) ?? 0) >= rule.limit) continue;
      if (random() >= rule.rate) continue;
      fired.set(rule, (fired.get(rule) ?? 0) + 1);
      const kind = rule.faults[Math.floor(random() * rule.faults.length)] ?? 'status500';
      const when = rule.when ?? 'before';
      const after = when === 'after' || (when === 'either' && random() < 0.5);
      return { kind, after };
    }
    return undefined;
  };

  const inject = (kind: FaultKind, info: RequestInfo, req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket;
    if (kind === 'reset') {
      try {
        socket.resetAndDestroy();
      } catch {
        socket.destroy();
      }
      return;
    }
    if (kind === 'hang') {
      hanging.add(socket);
      const timer = setTimeout(() => socket.destroy(), config.hangMs ?? 60_000);
      socket.once('close', () => {
        clearTimeout(timer);
        hanging.delete(socket);
      });
      return;
    }
    const code = Number(kind.slice('status'.length));
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (code === 429) headers['retry-after'] = '1';
    res.writeHead(code, headers).end(statusBody(code, info));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const info = classify(method, req.url ?? '/');
    const userAgent = req.headers['user-agent'] ?? '';
    const label = `${info.verb} ${info.resource}`.trim();
    stats.requestsTotal++;
    bump(stats.requests, label);
    bump(stats.userAgents, userAgent.split(' ')[0] || '(none)');
    const body = await readBody(req);
    const fault = decide(info, userAgent);
    const faultLabel = fault === undefined ? undefined : `${fault.kind}/${fault.after ? 'after' : 'before'}`;
    if (fault !== undefined) {
      stats.faultsTotal++;
      bump(stats.faults, `${faultLabel} ${label}`);
    }
    let patch: SpecPatch | undefined;
    if (info.verb === 'patch' && !info.dryRun && body.length > 0) {
      try {
        const parsed = JSON.parse(body.toString('utf8')) as { spec?: unknown };
        if (parsed.spec !== undefined) {
          const canonical = canonicalJson(parsed.spec);
          patch = {
            at: new Date().toISOString(),
            resource: info.resource,
            namespace: info.namespace,
            name: info.name,
            specHash: createHash('sha256').update(canonical).digest('hex').slice(0, 16),
            spec: parsed.spec,
            status: 0,
            ...(faultLabel === undefined ? {} : { fault: faultLabel }),
          };
          stats.specPatches.push(patch);
        }
      } catch {
        // Not JSON (e.g. apply YAML): not a merge patch the duplicate count looks at.
      }
    }
    if (fault !== undefined && !fault.after) {
      inject(fault.kind, info, req, res);
      return;
    }
    const headers = { ...req.headers, host: upstream.host };
    const forwarded = httpsRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method,
        path: req.url,
        headers,
        agent,
      },
      (up) => {
        // An answer cut off upstream (the API server closed, or the client left and we destroyed the request)
        // ends the client's answer too; unhandled, its 'error' would end the whole proxy.
        up.on('error', () => res.destroy());
        const cutOff = () => res.destroy();
        if (patch !== undefined) patch.status = up.statusCode ?? 0;
        if (fault !== undefined) {
          // The API server did the work; the client gets the fault instead of the answer.
          void readBody(up).then(() => inject(fault.kind, info, req, res), cutOff);
          return;
        }
        if (patch !== undefined && (up.statusCode ?? 0) < 300) {
          void readBody(up).then((answer) => {
            try {
              const generation = (
                JSON.parse(answer.toString('utf8')) as { metadata?: { generation?: number } }
              ).metadata?.generation;
              if (patch !== undefined && generation !== undefined) patch.generation = generation;
            } catch {
              // Not JSON: nothing to record.
            }
            res.writeHead(up.statusCode ?? 502, up.headers).end(answer);
          }, cutOff);
          return;
        }
        res.writeHead(up.statusCode ?? 502, up.headers);
        // As the API server does: a watch's headers go out at once, not with its first event.
        res.flushHeaders();
        up.pipe(res);
      },
    );
    forwarded.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`fault proxy: upstream failed: ${error.message}`);
    });
    // A client that goes away (its own timeout) ends a watch or a slow call upstream too.
    res.on('close', () => {
      if (!res.writableFinished) forwarded.destroy();
    });
    forwarded.end(body);
  };

  const server = createHttpsServer(
    {
      cert: readFileSync(join(options.pkiDir, 'apiserver.crt')),
      key: readFileSync(join(options.pkiDir, 'apiserver.key')),
    },
    (req, res) => {
      handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`fault proxy bug: ${error instanceof Error ? error.message : String(error)}`);
      });
    },
  );
  const setConfig = (next: FaultConfig) => {
    config = next;
    random = seededRandom(next.seed);
    fired.clear();
  };
  const control = createHttpServer((req, res) => {
    const reply = (code: number, value: unknown) =>
      res.writeHead(code, { 'content-type': 'application/json' }).end(`${JSON.stringify(value)}\n`);
    const route = `${req.method} ${new URL(req.url ?? '/', 'http://control.invalid').pathname}`;
    void readBody(req).then((body) => {
      try {
        switch (route) {
          case 'GET /stats':
            return reply(200, stats);
          case 'GET /config':
            return reply(200, config);
          case 'PUT /config':
            setConfig(parseFaultConfig(JSON.parse(body.toString('utf8'))));
            return reply(200, config);
          case 'DELETE /config':
            setConfig({ seed: config.seed, rules: [] });
            return reply(200, config);
          case 'POST /reset':
            stats = emptyStats();
            return reply(200, stats);
          default:
            return reply(404, {
              error: `no route ${route}: GET /stats, GET|PUT|DELETE /config, POST /reset`,
            });
        }
      } catch (error) {
        return reply(400, { error: error instanceof Error ? error.message : String(error) });
      }
    });
  });
  const port = await listen(server, options.port ?? 0);
  const controlPort = await listen(control, options.controlPort ?? 0);
  return {
    url: `https://127.0.0.1:${port}`,
    controlUrl: `http://127.0.0.1:${controlPort}`,
    setConfig,
    stats: () => stats,
    resetStats: () => {
      stats = emptyStats();
    },
    close: async () => {
      for (const socket of hanging) socket.destroy();
      server.closeAllConnections();
      control.closeAllConnections();
      await Promise.all([
        new Promise((resolve) => server.close(resolve)),
        new Promise((resolve) => control.close(resolve)),
      ]);
      agent.destroy();
    },
  };
}

/** The test side of the control API of a proxy running as a sandbox daemon. */
export class FaultControl {
  readonly #url: string;
  constructor(controlUrl: string) {
    this.#url = controlUrl;
  }
  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetchFrom(
      `the fault proxy's control API (${method} ${path})`,
      `${this.#url}${path}`,
      {
        method,
        ...(body === undefined
          ? {}
          : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      },
    );
    const text = await response.text();
    if (!response.ok) throw new Error(`fault proxy ${method} ${path}: HTTP ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  }
  set(config: FaultConfig): Promise<FaultConfig> {
    return this.#call('PUT', '/config', config);
  }
  clear(): Promise<FaultConfig> {
    return this.#call('DELETE', '/config');
  }
  stats(): Promise<ProxyStats> {
    return this.#call('GET', '/stats');
  }
  reset(): Promise<ProxyStats> {
    return this.#call('POST', '/reset');
  }
}
