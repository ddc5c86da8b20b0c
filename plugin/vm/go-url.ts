// The string vmagent hashes to name a remote-write queue directory: Go's `url.Parse(raw)` with RawQuery and
// Fragment cleared, then `URL.String()` (app/vmagent/remotewrite/remotewrite.go, newRemoteWriteCtx). Go
// re-encodes some parts on the way (lower-case scheme, user info and non-ASCII escaped), keeps a lone
// trailing `?` (ForceQuery survives the clearing), and keeps the path as written when it is validly escaped.
// This follows net/url as of Go 1.26 for http(s) URLs; anything vmagent itself would refuse, or that we do
// not model (escapes inside IPv6 zones), is a RemoteWriteUrlError rather than a guessed hash.

import { isIPv6 } from 'node:net';
import { CodedError } from '../goplugin/failure-codes.ts';
import { redactUrl } from '../kube/redact.ts';

export class RemoteWriteUrlError extends CodedError {
  constructor(url: string, problem: string) {
    super('VmagentSpecInvalid', `remote-write URL ${JSON.stringify(redactUrl(url))}: ${problem}`);
    this.name = 'RemoteWriteUrlError';
  }
}

// Go's net/url encoding modes, as far as we need them.
type Mode = 'path' | 'host' | 'userPassword';

function shouldEscape(c: number, mode: Mode): boolean {
  if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39)) return false;
  if (mode === 'host' && `!$&'()*+,;=:[]<>"`.includes(String.fromCharCode(c))) return false;
  const char = String.fromCharCode(c);
  if ('-_.~'.includes(char)) return false;
  if ('$&+,/:;=?@'.includes(char)) {
    if (mode === 'path') return char === '?';
    if (mode === 'userPassword') return '@/?:'.includes(char);
  }
  return true;
}

function isHex(c: number | undefined): boolean {
  return (
    c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46))
  );
}

function hexValue(c: number): number {
  return c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10;
}

/** Go's `unescape(s, mode)` over UTF-8 bytes; throws a message on what Go rejects. */
function percentDecode(bytes: Uint8Array, mode: Mode): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i] as number;
    if (c === 0x25) {
      const high = bytes[i + 1];
      const low = bytes[i + 2];
      if (!isHex(high) || !isHex(low)) throw new Error('invalid URL escape');
      // In a host, %-escapes may only stand for non-ASCII bytes (or %25 in IPv6 zones, which we refuse).
      if (mode === 'host' && hexValue(high as number) < 8) throw new Error('invalid URL escape in host');
      out.push((hexValue(high as number) << 4) | hexValue(low as number));
      i += 2;
    } else {
      if (mode === 'host' && c < 0x80 && shouldEscape(c, 'host')) {
        throw new Error(`invalid character ${JSON.stringify(String.fromCharCode(c))} in host name`);
      }
      out.push(c);
    }
  }
  return Uint8Array.from(out);
}

function percentEncode(bytes: Uint8Array, mode: Mode): string {
  let out = '';
  for (const c of bytes) {
    out += shouldEscape(c, mode)
      ? `%${c.toString(16).toUpperCase().padStart(2, '0')}`
      : String.fromCharCode(c);
  }
  return out;
}

/** Go's validEncoded(s, encodePath): true when the path may be printed as written. */
function validEncodedPath(bytes: Uint8Array): boolean {
  for (const c of bytes) {
    if (`!$&'()*+,;=:@[]%`.includes(String.fromCharCode(c))) continue;
    if (shouldEscape(c, 'path')) return false;
  }
  return true;
}

const utf8 = new TextEncoder();

/** Go's `parseHost` for http(s) followed by Go's `escape(host, encodeHost)` as String() prints it. */
function hostString(host: string): string {
  if (host === '') throw new Error('the URL has no host');
  const bracket = host.lastIndexOf('[');
  if (bracket > 0) throw new Error('invalid IP-literal');
  if (bracket === 0) {
    const close = host.lastIndexOf(']');
    if (close < 0) throw new Error("missing ']' in host");
    const port = host.slice(close + 1);
    if (!/^(:\d*)?$/.test(port)) throw new Error(`invalid port ${JSON.stringify(port)} after host`);
    const literal = host.slice(1, close);
    const zoneStart = literal.indexOf('%25');
    const address = zoneStart < 0 ? literal : literal.slice(0, zoneStart);
    // A zone (`%25en0`) prints back as written when it holds only unreserved characters; others we refuse.
    if (zoneStart >= 0 && !/^[A-Za-z0-9._~-]+$/.test(literal.slice(zoneStart + 3))) {
      throw new Error('unsupported IPv6 zone identifier');
    }
    if (!isIPv6(address)) throw new Error('invalid IP-literal');
    return host;
  }
  const colon = host.indexOf(':');
  if (colon >= 0 && !/^:\d*$/.test(host.slice(colon))) {
    throw new Error(`invalid port ${JSON.stringify(host.slice(colon))} after host`);
  }
  return percentEncode(percentDecode(utf8.encode(host), 'host'), 'host');
}

function userinfoString(userinfo: string): string {
  // Go's validUserinfo: the characters allowed in user info as written.
  if (!/^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/.test(userinfo)) throw new Error('invalid userinfo');
  const colon = userinfo.indexOf(':');
  if (colon < 0) return percentEncode(percentDecode(utf8.encode(userinfo), 'userPassword'), 'userPassword');
  const user = percentEncode(
    percentDecode(utf8.encode(userinfo.slice(0, colon)), 'userPassword'),
    'userPassword',
  );
  const password = percentEncode(
    percentDecode(utf8.encode(userinfo.slice(colon + 1)), 'userPassword'),
    'userPassword',
  );
  return `${user}:${password}`;
}

function pathString(path: string): string {
  const bytes = utf8.encode(path);
  const decoded = percentDecode(bytes, 'path');
  return validEncodedPath(bytes) ? path : percentEncode(decoded, 'path');
}

/** The exact string vmagent passes to xxhash to name the queue of `rawUrl` (see the top of this file). */
export function vmagentQueueUrlString(rawUrl: string): string {
  try {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: Go rejects exactly these bytes.
    if (/[\u0000-\u001f\u007f]/.test(rawUrl)) throw new Error('invalid control character in URL');
    const hashIndex = rawUrl.indexOf('#');
    const withoutFragment = hashIndex < 0 ? rawUrl : rawUrl.slice(0, hashIndex);
    const schemeMatch = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(withoutFragment);
    if (schemeMatch === null) throw new Error('missing protocol scheme');
    const scheme = (schemeMatch[1] as string).toLowerCase();
    if (scheme !== 'http' && scheme !== 'https') {
      throw new Error(`unsupported scheme ${JSON.stringify(scheme)}; vmagent accepts http and https`);
    }
    let rest = withoutFragment.slice(schemeMatch[0].length);
    let forceQuery = false;
    if (rest.endsWith('?') && rest.indexOf('?') === rest.length - 1) {
      forceQuery = true;
      rest = rest.slice(0, -1);
    } else {
      rest = rest.split('?', 1)[0] as string;
    }
    if (!rest.startsWith('//')) throw new Error('the URL has no host');
    const authorityEnd = rest.indexOf('/', 2);
    const authority = authorityEnd < 0 ? rest.slice(2) : rest.slice(2, authorityEnd);
    const path = authorityEnd < 0 ? '' : rest.slice(authorityEnd);
    const at = authority.lastIndexOf('@');
    const host = hostString(at < 0 ? authority : authority.slice(at + 1));
    const userinfo = at < 0 ? '' : `${userinfoString(authority.slice(0, at))}@`;
    const result = `${scheme}://${userinfo}${host}${pathString(path)}${forceQuery ? '?' : ''}`;
    // Go also rejects a malformed %-escape in the fragment, although the fragment is not hashed.
    if (hashIndex >= 0) percentDecode(utf8.encode(rawUrl.slice(hashIndex + 1)), 'path');
    return result;
  } catch (error) {
    if (error instanceof RemoteWriteUrlError) throw error;
    throw new RemoteWriteUrlError(rawUrl, error instanceof Error ? error.message : String(error));
  }
}
