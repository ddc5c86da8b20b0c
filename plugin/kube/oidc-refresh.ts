// The refresh of a kubeconfig's OIDC `auth-provider` id-token, given to @kubernetes/client-node's OpenIDConnectAuth
// through the override client its applyAuthentication takes. The library decides when (its id-token expired), keeps
// the new tokens in the user's config and sends the bearer token; this file only asks the IdP. Why: client-node 2.0.1
// and 2.0.2 cannot refresh at all (they pass the issuer to openid-client 6's discovery as a string, which it refuses
// with a TypeError), and would keep `expires_in` (seconds from now) as the expiry instant, refreshing on every request
// after the first refresh (README.md, "Design notes"). What kubectl does: discovery at the issuer, then a
// refresh_token grant at its token endpoint, the new id-token's `exp` its expiry.

import { readFileSync } from 'node:fs';
import type { User } from '@kubernetes/client-node/dist/config_types.js';
import { Agent, type Dispatcher } from 'undici';
import { z } from 'zod';
import { CodedError } from '../goplugin/failure-codes.ts';
import { readCapped } from './kube-client.ts';

/** What the library's OpenIDConnectAuth takes as its override client (oidc_auth.js, `OidcClient`). */
interface RefreshClient {
  refresh(refreshToken: string): Promise<{ id_token: string; refresh_token: string; expires_at: number }>;
}

type Authenticator = {
  isAuthProvider(user: User): boolean;
  applyAuthentication(user: User, options: object, overrideClient?: RefreshClient): Promise<void>;
};

/** Each call to the IdP is abandoned after this long. */
const idpTimeoutMs = 30_000;
/** At most this much of an IdP's answer is read. */
const maxAnswerBytes = 1024 * 1024;

const discoverySchema = z.object({ issuer: z.string(), token_endpoint: z.string() });
const tokenAnswerSchema = z.object({
  id_token: z.string().min(1),
  refresh_token: z.string().min(1).optional(),
});
const idTokenClaimsSchema = z.object({ exp: z.number() });

/** The OIDC refresh failed: says where and how, never a token (the IdP's answer is not quoted). Transient, as a
 *  credential the kubeconfig could not give (kube-client.ts's KubeCredentialError wraps it). */
export class OidcRefreshError extends CodedError {
  constructor(message: string) {
    super('ApiTransient', message);
    this.name = 'OidcRefreshError';
  }
}

/** Makes `config`'s OIDC authenticator refresh through vmzones' client (a KubeConfig's private `authenticators`,
 *  the one that takes an `oidc` auth-provider; pinned version, test/unit/kube/kubeconfig-forms.test.ts). */
export function refreshOidcThroughIdp(config: object): void {
  const probe = { name: '', authProvider: { name: 'oidc', config: {} } } as unknown as User;
  for (const authenticator of (config as { authenticators?: Authenticator[] }).authenticators ?? []) {
    if (!authenticator.isAuthProvider(probe)) continue;
    const apply = authenticator.applyAuthentication.bind(authenticator);
    authenticator.applyAuthentication = (user, options) =>
      apply(user, options, idpClient((user.authProvider?.config ?? {}) as Record<string, unknown>));
  }
}

/** The refresh_token grant at the issuer of a user's `auth-provider` config (its kubeconfig field names). */
function idpClient(fields: Record<string, unknown>): RefreshClient {
  const text = (name: string) => (typeof fields[name] === 'string' ? (fields[name] as string) : '');
  return {
    async refresh(refreshToken) {
      const issuer = text('idp-issuer-url').replace(/\/+$/, '');
      if (!/^https:\/\//i.test(issuer))
        throw new OidcRefreshError(`idp-issuer-url ${issuer || '(none)'} is not an https URL`);
      const caFile = text('idp-certificate-authority');
      const caData = text('idp-certificate-authority-data');
      const ca = caData
        ? Buffer.from(caData, 'base64').toString('utf8')
        : caFile
          ? readFileSync(caFile, 'utf8')
          : undefined;
      const dispatcher = new Agent(ca === undefined ? {} : { connect: { ca } });
      try {
        const discovery = discoverySchema.safeParse(
          await exchange(dispatcher, `${issuer}/.well-known/openid-configuration`, 'GET'),
        );
        if (!discovery.success)
          throw new OidcRefreshError(`${issuer}: its discovery document has no issuer or token_endpoint`);
        if (discovery.data.issuer.replace(/\/+$/, '') !== issuer)
          throw new OidcRefreshError(`${issuer}: its discovery document names another issuer`);
        if (!/^https:\/\//i.test(discovery.data.token_endpoint))
          throw new OidcRefreshError(`${issuer}: its token endpoint is not an https URL`);
        const clientId = text('client-id');
        const secret = text('client-secret');
        const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken });
        const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
        // RFC 6749 2.3.1: a confidential client authenticates with HTTP Basic; a public one names itself.
        if (secret !== '')
          headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
        else form.set('client_id', clientId);
        const answer = tokenAnswerSchema.safeParse(
          await exchange(dispatcher, discovery.data.token_endpoint, 'POST', headers, form.toString()),
        );
        if (!answer.success)
          throw new OidcRefreshError(`${issuer}: the token endpoint's answer has no id_token`);
        return {
          id_token: answer.data.id_token,
          // An IdP that does not rotate refresh tokens answers without one: the old one stays.
          refresh_token: answer.data.refresh_token ?? refreshToken,
          expires_at: expiryOf(answer.data.id_token, issuer),
        };
      } finally {
        void dispatcher.close().catch(() => {});
      }
    },
  };
}

/** The id-token's `exp` (epoch seconds): when the library asks for the next refresh. */
function expiryOf(idToken: string, issuer: string): number {
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(idToken.split('.')[1] ?? '', 'base64url').toString('utf8'));
  } catch {
    claims = undefined;
  }
  const parsed = idTokenClaimsSchema.safeParse(claims);
  if (!parsed.success)
    throw new OidcRefreshError(`${issuer}: the new id_token is not a JWT with an exp claim`);
  return parsed.data.exp;
}

/** One JSON exchange with the IdP under a deadline and a size cap; a status outside 2xx is an error by status. */
async function exchange(
  dispatcher: Dispatcher,
  href: string,
  method: 'GET' | 'POST',
  headers: Record<string, string> = {},
  body?: string,
): Promise<unknown> {
  const url = new URL(href);
  const what = `OIDC ${method === 'GET' ? 'discovery' : 'token refresh'} at ${url.origin}${url.pathname}`;
  try {
    const response = await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method,
      headers: { accept: 'application/json', ...headers },
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(idpTimeoutMs),
    });
    const text = await readCapped(
      response.body,
      maxAnswerBytes,
      () => new OidcRefreshError(`${what}: the answer is larger than 1 MiB`),
    );
    if (response.statusCode < 200 || response.statusCode > 299)
      throw new OidcRefreshError(`${what}: HTTP ${response.statusCode}`);
    return JSON.parse(text);
  } catch (err) {
    if (err instanceof OidcRefreshError) throw err;
    throw new OidcRefreshError(`${what}: ${err instanceof Error ? err.name : 'failed'}`);
  }
}
