// One bounded GET of a VictoriaMetrics component's /metrics page, streamed into the text parser so that only
// the asked-for families are kept: a bounded total time, a bounded body size, TLS (CA, client certificate,
// insecureSkipVerify, server name) and bearer-token or basic auth. Errors say what failed and where, and
// never carry a credential: the URL is built from a pod address and holds none, and headers are not echoed.
// HTTP is undici's: one pooled dispatcher per TLS setting, so that a gate's rounds (1.5 s apart) reuse their
// connections to a pod instead of a TCP (and TLS) handshake per scrape; idle ones close after a few seconds.

import { Agent, type Dispatcher } from 'undici';
import { CodedError } from '../goplugin/failure-codes.ts';
import {
  MetricsTextError,
  type MetricsTextOptions,
  MetricsTextParser,
  type MetricsTextResult,
} from './metrics-text.ts';
import { maxScrapeBytesCap, processScrapeBudget, type ScrapeBudget } from './scrape-budget.ts';

export interface ScrapeTls {
  /** PEM CA bundle that signs the server certificate; without it the system roots are used. */
  readonly ca?: string;
  /** PEM client certificate and key, for servers that require one. */
  readonly cert?: string;
  readonly key?: string;
  readonly insecureSkipVerify?: boolean;
  /** Name the server certificate must carry (pods are addressed by IP). */
  readonly serverName?: string;
}

export type ScrapeAuth =
  | { readonly kind: 'bearer'; readonly token: string }
  | { readonly kind: 'basic'; readonly username: string; readonly password: string };

export interface ScrapeTarget {
  /** e.g. http://10.1.2.3:8429/metrics */
  readonly url: string;
  readonly tls?: ScrapeTls;
  readonly auth?: ScrapeAuth;
}

export interface ScrapeLimits {
  /** Whole request, headers and body. Default 10 s. */
  readonly timeoutMs?: number;
  /** Largest page accepted. Default 128 MiB (vmagent pages of tens of MB exist), at most maxScrapeBytesCap. */
  readonly maxBodyBytes?: number;
  readonly maxLineBytes?: number;
  readonly maxSamples?: number;
  /** The slots and kept-bytes budget shared with other scrapes; default the process's own (scrape-budget.ts). */
  readonly budget?: ScrapeBudget;
}

const defaultScrapeTimeoutMs = 10_000;
const defaultMaxBodyBytes = 128 * 1024 * 1024;

/** connect: no TCP/TLS connection; timeout: too slow (or no scrape slot in time); status: not HTTP 200; tooLarge: page
 *  or its kept lines over a limit;
 *  malformed: a kept line is not valid text format. */
export type ScrapeErrorKind = 'connect' | 'timeout' | 'status' | 'tooLarge' | 'malformed';

export class ScrapeError extends CodedError {
  readonly kind: ScrapeErrorKind;
  readonly url: string;
  readonly status: number | undefined;
  constructor(kind: ScrapeErrorKind, url: string, detail: string, status?: number, verb = 'scraping') {
    super(kind === 'malformed' ? 'MetricsMalformed' : 'ScrapeFailed', `${verb} ${url}: ${detail}`);
    this.name = 'ScrapeError';
    this.kind = kind;
    this.url = url;
    this.status = status;
  }
}

/** What to do when a scrape with this TLS material or credential is refused (scrape-credentials.ts: read its
 *  Secret again). Keyed by the object, so a credential of another origin (a cluster's) has none. */
const refusalListeners = new WeakMap<ScrapeTls | ScrapeAuth, () => void>();

export function onScrapeRefused(material: ScrapeTls | ScrapeAuth, listener: () => void): void {
  refusalListeners.set(material, listener);
}

function scrapeRefused(material: ScrapeTls | ScrapeAuth | undefined): void {
  if (material !== undefined) refusalListeners.get(material)?.();
}

function authorization(auth: ScrapeAuth | undefined): Record<string, string> {
  if (auth === undefined) return {};
  if (auth.kind === 'bearer') return { authorization: `Bearer ${auth.token}` };
  return {
    authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`, 'utf8').toString('base64')}`,
  };
}

/** Network errors carry a code (ECONNREFUSED, CERT_HAS_EXPIRED…); the message alone is often vague. */
function describeCause(error: unknown): string {
  const seen = new Set<unknown>();
  const parts: string[] = [];
  let current: unknown = error;
  while (current instanceof Error && !seen.has(current)) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    const text = typeof code === 'string' && !current.message.includes(code) ? `${code}: ` : '';
    parts.push(`${text}${current.message}`);
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(': ') || String(error);
}

/** A page over a size limit is too large (an error for that pod); anything else wrong with it is malformed. */
function pageError(url: string, error: MetricsTextError): ScrapeError {
  return new ScrapeError(error.overLimit ? 'tooLarge' : 'malformed', url, error.message);
}

/** Fetches `target.url` and parses the page, keeping only the metric names in `keep`. */
export async function scrapeMetrics(
  target: ScrapeTarget,
  keep: MetricsTextOptions['keep'],
  limits: ScrapeLimits = {},
): Promise<MetricsTextResult> {
  const timeoutMs = limits.timeoutMs ?? defaultScrapeTimeoutMs;
  const maxBodyBytes = limits.maxBodyBytes ?? defaultMaxBodyBytes;
  if (!(maxBodyBytes <= maxScrapeBytesCap)) {
    // Configs are validated against the cap (plugin/gates/config.ts); a caller passing more is a bug.
    throw new RangeError(`maxBodyBytes ${maxBodyBytes} is above the cap of ${maxScrapeBytesCap} bytes`);
  }
  const budget = limits.budget ?? processScrapeBudget;
  const url = target.url;
  const releaseSlot = await budget.acquire(timeoutMs);
  if (releaseSlot === undefined) {
    throw new ScrapeError(
      'timeout',
      url,
      `no scrape slot came free within ${timeoutMs} ms (this process scrapes at most ` +
        `${budget.limits.concurrentScrapes} pages at once)`,
    );
  }
  try {
    return await scrapeInSlot(target, keep, { timeoutMs, maxBodyBytes, limits, budget });
  } finally {
    releaseSlot();
  }
}

async function scrapeInSlot(
  target: ScrapeTarget,
  keep: MetricsTextOptions['keep'],
  settings: { timeoutMs: number; maxBodyBytes: number; limits: ScrapeLimits; budget: ScrapeBudget },
): Promise<MetricsTextResult> {
  const { timeoutMs, maxBodyBytes, limits, budget } = settings;
  const parser = new MetricsTextParser({
    keep,
    maxLineBytes: limits.maxLineBytes,
    maxSamples: limits.maxSamples,
    maxKeptBytes: budget.limits.keptBytesPerScrape,
  });
  const url = target.url;
  try {
    await fetchBounded(target, { timeoutMs, maxBodyBytes, accept: 'text/plain', what: 'page' }, (bytes) =>
      parser.push(bytes),
    );
    return parser.end();
  } catch (error) {
    if (error instanceof MetricsTextError) throw pageError(url, error);
    throw error;
  }
}

/**
 * One bounded GET of `target.url` (a pod's page or API answer): the body is handed to `onChunk` as it arrives, never
 * more than `maxBodyBytes` of it, all within `timeoutMs`. Anything but HTTP 200 is a ScrapeError with the first
 * 200 characters of the answer; an error thrown by `onChunk` ends the request and is thrown as it is.
 */
export async function fetchBounded(
  target: ScrapeTarget,
  settings: { timeoutMs: number; maxBodyBytes: number; accept: string; what: string; verb?: string },
  onChunk: (bytes: Uint8Array) => void,
): Promise<void> {
  const { timeoutMs, maxBodyBytes, what } = settings;
  const verb = settings.verb ?? 'scraping';
  const signal = AbortSignal.timeout(timeoutMs);
  const url = target.url;
  let response: Dispatcher.ResponseData | undefined;
  try {
    try {
      const parsed = new URL(url);
      response = await dispatcherFor(target.tls).request({
        origin: parsed.origin,
        path: `${parsed.pathname}${parsed.search}`,
        method: 'GET',
        signal,
        headers: { accept: settings.accept, ...authorization(target.auth) },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (error) {
      if (signal.aborted)
        throw new ScrapeError('timeout', url, `no answer within ${timeoutMs} ms`, undefined, verb);
      // The TLS material may have been rotated (a new CA or client certificate): read it again next time.
      scrapeRefused(target.tls);
      throw new ScrapeError('connect', url, describeCause(error), undefined, verb);
    }
    const { statusCode, body } = response;
    if (statusCode === 401 || statusCode === 403) {
      // A changed password or token (or client certificate): read the credentials again next time.
      scrapeRefused(target.auth);
      scrapeRefused(target.tls);
    }
    if (statusCode !== 200) {
      let excerpt = '';
      try {
        for await (const chunk of body) {
          excerpt += (chunk as Buffer).toString('utf8');
          if (excerpt.length >= 200) break;
        }
      } catch {
        // the status says enough
      }
      body.destroy();
      const shown = excerpt.trim().slice(0, 200);
      throw new ScrapeError(
        'status',
        url,
        `HTTP ${statusCode}${shown ? `: ${shown}` : ''}`,
        statusCode,
        verb,
      );
    }
    let received = 0;
    /** What the caller's handler threw, passed on as it is (e.g. the text parser's error). */
    let handlerError: unknown;
    try {
      for await (const chunk of body) {
        const bytes = chunk as Uint8Array;
        received += bytes.length;
        if (received > maxBodyBytes) {
          body.destroy();
          throw new ScrapeError(
            'tooLarge',
            url,
            `the ${what} is larger than the limit of ${maxBodyBytes} bytes`,
            undefined,
            verb,
          );
        }
        try {
          onChunk(bytes);
        } catch (error) {
          handlerError = error;
          throw error;
        }
      }
    } catch (error) {
      body.destroy();
      if (error instanceof ScrapeError || (handlerError !== undefined && error === handlerError)) throw error;
      if (signal.aborted) {
        throw new ScrapeError(
          'timeout',
          url,
          `the ${what} was not complete within ${timeoutMs} ms`,
          undefined,
          verb,
        );
      }
      throw new ScrapeError('connect', url, `reading the ${what}: ${describeCause(error)}`, undefined, verb);
    }
  } finally {
    response?.body.destroy();
  }
}

/** Idle connections to a pod are closed after this long (a gate's next round comes within a few seconds). */
const idleConnectionMs = 5_000;
/** Dispatchers kept, one per TLS setting (a gate's CA and client certificate, or none); the oldest goes first. */
const maxDispatchers = 16;
const dispatchers = new Map<string, Agent>();

/** The pooled dispatcher of one TLS setting. */
function dispatcherFor(tls: ScrapeTls | undefined): Agent {
  const key = JSON.stringify([
    tls?.ca,
    tls?.cert,
    tls?.key,
    tls?.serverName,
    tls?.insecureSkipVerify === true,
  ]);
  const found = dispatchers.get(key);
  if (found !== undefined) return found;
  const agent = new Agent({
    keepAliveTimeout: idleConnectionMs,
    keepAliveMaxTimeout: idleConnectionMs,
    connect: {
      rejectUnauthorized: tls?.insecureSkipVerify !== true,
      ...(tls?.ca === undefined ? {} : { ca: tls.ca }),
      ...(tls?.cert === undefined ? {} : { cert: tls.cert }),
      ...(tls?.key === undefined ? {} : { key: tls.key }),
      ...(tls?.serverName === undefined ? {} : { servername: tls.serverName }),
    },
  });
  dispatchers.set(key, agent);
  if (dispatchers.size > maxDispatchers) {
    const [oldestKey, oldest] = dispatchers.entries().next().value as [string, Agent];
    dispatchers.delete(oldestKey);
    // Scrapes in flight on it finish; it closes after them.
    void oldest.close().catch(() => {});
  }
  return agent;
}
