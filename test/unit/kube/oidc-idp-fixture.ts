// An OpenID Connect identity provider on loopback for the OIDC `auth-provider` tests: HTTPS with the test's CA
// (test/unit/vm/tls-fixture.ts), the discovery document at /.well-known/openid-configuration and a token endpoint that
// takes a refresh_token grant for one client and answers with a new id-token and refresh token. It records the
// grants it was asked for. The id-tokens are unsigned-looking JWTs (the token endpoint's answer comes straight over
// TLS, so the client checks its claims, not a signature; the API server fixture accepts a token by its value).

import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TlsFixture } from '../vm/tls-fixture.ts';

/** An id-token for `issuer` and `audience`, valid from `nowS` for `lifetimeS` seconds (epoch seconds). */
export function idToken(
  issuer: string,
  audience: string,
  nowS: number,
  lifetimeS: number,
  subject = 'oidc-user',
) {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const claims = { iss: issuer, aud: audience, sub: subject, iat: nowS, exp: nowS + lifetimeS };
  return `${part({ alg: 'RS256', typ: 'JWT' })}.${part(claims)}.c2lnbmF0dXJl`;
}

export class OidcIdpFixture {
  readonly clientId: string;
  /** The refresh tokens the token endpoint was given, in order. */
  readonly grants: string[] = [];
  /** The refresh token it accepts next; each grant replaces it (refresh-token rotation). */
  refreshToken: string;
  /** Seconds each issued id-token is valid for. */
  lifetimeS = 600;
  issuer = '';
  readonly #server: Server;
  #issued = 0;

  /** `issue` is told each new id-token (the API server fixture's tokens to accept). */
  constructor(tls: TlsFixture, clientId: string, refreshToken: string, issue: (token: string) => void) {
    this.clientId = clientId;
    this.refreshToken = refreshToken;
    this.#server = createServer({ cert: tls.serverCert, key: tls.serverKey }, (req, res) => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET' && req.url === '/.well-known/openid-configuration')
        return send(200, {
          issuer: this.issuer,
          token_endpoint: `${this.issuer}/token`,
          authorization_endpoint: `${this.issuer}/authorize`,
          jwks_uri: `${this.issuer}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        });
      if (req.method !== 'POST' || req.url !== '/token') return send(404, { error: 'not_found' });
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        const given = form.get('refresh_token') ?? '';
        this.grants.push(given);
        if (form.get('grant_type') !== 'refresh_token' || form.get('client_id') !== this.clientId)
          return send(400, { error: 'invalid_request' });
        if (given !== this.refreshToken) return send(400, { error: 'invalid_grant' });
        this.#issued++;
        const token = idToken(this.issuer, this.clientId, Math.floor(Date.now() / 1000), this.lifetimeS);
        this.refreshToken = `r3fresh-${this.#issued}`;
        issue(token);
        send(200, {
          access_token: `access-${this.#issued}`,
          token_type: 'Bearer',
          expires_in: this.lifetimeS,
          id_token: token,
          refresh_token: this.refreshToken,
        });
      });
    });
  }

  /** Listens on 127.0.0.1; returns the issuer URL. */
  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.issuer = `https://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this.issuer;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
