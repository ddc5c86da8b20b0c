// TLS material and credentials for scraping, read from Secrets named in the configuration. Values never
// appear in errors or results: a problem names the Secret and key, not what they hold.
//
// A scrape credential's Secret is read once per `scrapeSecretTtlMs` per (cluster, namespace, name), not on every
// scrape (issue 38): a gate's rounds and a wave's zones share one GET. The plugin keeps get-only RBAC on the named
// Secrets (docs/deploy.md) — a watch would need list/watch on Secrets in that namespace — so a rotated Secret is
// picked up when the TTL runs out or at once when a scrape with it is refused (HTTP 401/403, or a TLS connection
// that fails): the refusal drops the cached Secret and the next scrape reads it again (docs/scale.md).

import { CodedError } from '../goplugin/failure-codes.ts';
import { KubeError, type KubeObject, type KubeObjects, namespacedName } from '../kube/objects.ts';
import { clusterIdentity, SharedReads } from '../kube/shared-reads.ts';
import { onScrapeRefused, type ScrapeAuth, type ScrapeTls } from './scrape.ts';

export interface SecretKeyRef {
  readonly name: string;
  readonly key: string;
}

export interface ScrapeTlsRefs {
  readonly ca?: SecretKeyRef;
  readonly cert?: SecretKeyRef;
  readonly key?: SecretKeyRef;
  readonly insecureSkipVerify?: boolean;
  readonly serverName?: string;
}

export type ScrapeAuthRefs =
  | { readonly bearerToken: SecretKeyRef }
  | { readonly basicAuth: { readonly username: SecretKeyRef | string; readonly password: SecretKeyRef } };

export interface ScrapeAccess {
  readonly scheme: 'http' | 'https';
  readonly tls?: ScrapeTls;
  readonly auth?: ScrapeAuth;
}

export class SecretRefError extends CodedError {
  readonly ref: SecretKeyRef;
  readonly namespace: string;
  constructor(namespace: string, ref: SecretKeyRef, problem: string) {
    super(
      'SecretRefInvalid',
      `Secret ${namespacedName({ namespace, name: ref.name })} key ${JSON.stringify(ref.key)}: ${problem}`,
    );
    this.name = 'SecretRefError';
    this.ref = ref;
    this.namespace = namespace;
  }
}

/** How long a scrape credential's Secret is used without reading it again (a refused scrape ends it at once). */
export const scrapeSecretTtlMs = 60_000;
/** Secrets kept at most; the oldest read goes first (a process scrapes with a handful). */
const maxCachedSecrets = 256;

/** The scrape credentials' Secrets as last read, per (cluster, namespace, name); values stay in private fields. */
export class ScrapeSecretCache {
  /** A read in flight is shared too: the zones of a wave resolving the same credentials make one GET. */
  readonly #reads: SharedReads;

  constructor(options: { ttlMs?: number; now?: () => number } = {}) {
    this.#reads = new SharedReads({
      windowMs: options.ttlMs ?? scrapeSecretTtlMs,
      maxEntries: maxCachedSecrets,
      ...(options.now === undefined ? {} : { now: options.now }),
    });
  }

  /** The key of Secret `name` in `namespace` of the cluster `kube` talks to. */
  static key(kube: KubeObjects, namespace: string, name: string): string {
    return JSON.stringify([clusterIdentity(kube), namespace, name]);
  }

  /** The Secret, read from the API server unless a read of it younger than the TTL is kept (a failed one is not). */
  read(kube: KubeObjects, namespace: string, name: string): Promise<KubeObject> {
    return this.#reads.share(ScrapeSecretCache.key(kube, namespace, name), () =>
      kube.get({ apiVersion: 'v1', kind: 'Secret', namespace, name }),
    );
  }

  /** Reads the Secret behind `key` again at its next use (a scrape with it was refused). */
  forget(key: string): void {
    this.#reads.forget(key);
  }

  get size(): number {
    return this.#reads.size;
  }
}

/** The step and gates processes' cache: one per process, as the Secrets are the cluster's. */
export const processScrapeSecrets = new ScrapeSecretCache();

function secretRefFailure(namespace: string, ref: SecretKeyRef, error: unknown): unknown {
  if (error instanceof KubeError && error.kind === 'notFound') {
    return new SecretRefError(namespace, ref, 'the Secret does not exist');
  }
  if (error instanceof KubeError && error.kind === 'forbidden') {
    return new SecretRefError(namespace, ref, `the plugin may not read it (${error.message})`);
  }
  return error;
}

/** One key of a Secret, as bytes (a gzip config stays gzip). Always a fresh read: for Secrets that change often,
 *  such as a vmauth config. */
export async function readSecretBytes(
  kube: KubeObjects,
  namespace: string,
  ref: SecretKeyRef,
): Promise<Buffer> {
  let secret: KubeObject;
  try {
    secret = await kube.get({ apiVersion: 'v1', kind: 'Secret', namespace, name: ref.name });
  } catch (error) {
    throw secretRefFailure(namespace, ref, error);
  }
  return secretKeyBytes(secret, namespace, ref);
}

function secretKeyBytes(secret: KubeObject, namespace: string, ref: SecretKeyRef): Buffer {
  const data = secret.data as Record<string, string> | undefined;
  const stringData = secret.stringData as Record<string, string> | undefined;
  const encoded = data?.[ref.key];
  if (encoded !== undefined) return Buffer.from(encoded, 'base64');
  const plain = stringData?.[ref.key];
  if (plain !== undefined) return Buffer.from(plain, 'utf8');
  throw new SecretRefError(namespace, ref, 'the Secret has no such key');
}

/**
 * Reads what `refs` name, from `cache` (the process's by default); a Secret that is missing or lacks the key is a
 * SecretRefError. A scrape with the TLS material or credential returned that is refused drops their Secrets from
 * the cache, so the next call reads them again.
 */
export async function resolveScrapeAccess(
  kube: KubeObjects,
  namespace: string,
  scheme: 'http' | 'https',
  tlsRefs: ScrapeTlsRefs | undefined,
  authRefs: ScrapeAuthRefs | undefined,
  cache: ScrapeSecretCache = processScrapeSecrets,
): Promise<ScrapeAccess> {
  const tlsSecrets = new Set<string>();
  const authSecrets = new Set<string>();
  const readSecretKey = async (ref: SecretKeyRef, used: Set<string>): Promise<string> => {
    used.add(ScrapeSecretCache.key(kube, namespace, ref.name));
    let secret: KubeObject;
    try {
      secret = await cache.read(kube, namespace, ref.name);
    } catch (error) {
      throw secretRefFailure(namespace, ref, error);
    }
    try {
      return secretKeyBytes(secret, namespace, ref).toString('utf8');
    } catch (error) {
      // A Secret without the key is not kept either: the fix is seen at the next call.
      cache.forget(ScrapeSecretCache.key(kube, namespace, ref.name));
      throw error;
    }
  };
  const read = (ref: SecretKeyRef | undefined) =>
    ref === undefined ? Promise.resolve(undefined) : readSecretKey(ref, tlsSecrets);
  let tls: ScrapeTls | undefined;
  if (tlsRefs !== undefined) {
    const [ca, cert, key] = await Promise.all([read(tlsRefs.ca), read(tlsRefs.cert), read(tlsRefs.key)]);
    tls = {
      ...(ca === undefined ? {} : { ca }),
      ...(cert === undefined ? {} : { cert }),
      ...(key === undefined ? {} : { key }),
      ...(tlsRefs.insecureSkipVerify === undefined ? {} : { insecureSkipVerify: tlsRefs.insecureSkipVerify }),
      ...(tlsRefs.serverName === undefined ? {} : { serverName: tlsRefs.serverName }),
    };
  }
  let auth: ScrapeAuth | undefined;
  if (authRefs !== undefined && 'bearerToken' in authRefs) {
    auth = { kind: 'bearer', token: (await readSecretKey(authRefs.bearerToken, authSecrets)).trim() };
  } else if (authRefs !== undefined) {
    const { username, password } = authRefs.basicAuth;
    auth = {
      kind: 'basic',
      username: typeof username === 'string' ? username : await readSecretKey(username, authSecrets),
      password: await readSecretKey(password, authSecrets),
    };
  }
  const forget = (keys: Set<string>) => () => {
    for (const key of keys) cache.forget(key);
  };
  if (tls !== undefined && tlsSecrets.size > 0) onScrapeRefused(tls, forget(tlsSecrets));
  if (auth !== undefined && authSecrets.size > 0) onScrapeRefused(auth, forget(authSecrets));
  return { scheme, ...(tls === undefined ? {} : { tls }), ...(auth === undefined ? {} : { auth }) };
}
