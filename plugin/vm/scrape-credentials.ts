// TLS material and credentials for scraping, read from Secrets named in the configuration. Values never
// appear in errors or results: a problem names the Secret and key, not what they hold.

import { CodedError } from '../goplugin/failure-codes.ts';
import { KubeError, type KubeObjects, namespacedName } from '../kube/objects.ts';
import type { ScrapeAuth, ScrapeTls } from './scrape.ts';

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

/** One key of a Secret, as bytes (a gzip config stays gzip). */
export async function readSecretBytes(
  kube: KubeObjects,
  namespace: string,
  ref: SecretKeyRef,
): Promise<Buffer> {
  let secret: Awaited<ReturnType<KubeObjects['get']>>;
  try {
    secret = await kube.get({ apiVersion: 'v1', kind: 'Secret', namespace, name: ref.name });
  } catch (error) {
    if (error instanceof KubeError && error.kind === 'notFound') {
      throw new SecretRefError(namespace, ref, 'the Secret does not exist');
    }
    if (error instanceof KubeError && error.kind === 'forbidden') {
      throw new SecretRefError(namespace, ref, `the plugin may not read it (${error.message})`);
    }
    throw error;
  }
  const data = secret.data as Record<string, string> | undefined;
  const stringData = secret.stringData as Record<string, string> | undefined;
  const encoded = data?.[ref.key];
  if (encoded !== undefined) return Buffer.from(encoded, 'base64');
  const plain = stringData?.[ref.key];
  if (plain !== undefined) return Buffer.from(plain, 'utf8');
  throw new SecretRefError(namespace, ref, 'the Secret has no such key');
}

/** One key of a Secret, decoded as UTF-8 text. */
async function readSecretKey(kube: KubeObjects, namespace: string, ref: SecretKeyRef): Promise<string> {
  return (await readSecretBytes(kube, namespace, ref)).toString('utf8');
}

/** Reads what `refs` name; a Secret that is missing or lacks the key is a SecretRefError. */
export async function resolveScrapeAccess(
  kube: KubeObjects,
  namespace: string,
  scheme: 'http' | 'https',
  tlsRefs: ScrapeTlsRefs | undefined,
  authRefs: ScrapeAuthRefs | undefined,
): Promise<ScrapeAccess> {
  const read = (ref: SecretKeyRef | undefined) =>
    ref === undefined ? Promise.resolve(undefined) : readSecretKey(kube, namespace, ref);
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
    auth = { kind: 'bearer', token: (await readSecretKey(kube, namespace, authRefs.bearerToken)).trim() };
  } else if (authRefs !== undefined) {
    const { username, password } = authRefs.basicAuth;
    auth = {
      kind: 'basic',
      username: typeof username === 'string' ? username : await readSecretKey(kube, namespace, username),
      password: await readSecretKey(kube, namespace, password),
    };
  }
  return { scheme, ...(tls === undefined ? {} : { tls }), ...(auth === undefined ? {} : { auth }) };
}
