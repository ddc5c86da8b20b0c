// The one way vmzones shows text that may carry credentials: URLs of vmauth configs, VMUser targetRefs and
// VMAgent remote-write lists, and lines copied from a raw vmauth config. Everything that can hold a secret in
// the vmauth config format (docs/victoriametrics.md, "Credentials in a vmauth config") is replaced by `***`
// before it reaches a step message, a log line, an annotation or a gate error:
// - user info in a URL (`http://user:pass@host`), whatever the scheme;
// - query values whose name says they authenticate (`?authKey=`, `token`, `access_token`, `api_key`, `password`,
//   `secret`, `signature` ...);
// - values of the keys `bearer_token`, `auth_token`, `password`, `username` (with a password it is half of a
//   credential), `token`, `secret` and of `Authorization` headers (`headers: ["Authorization: Bearer ..."]`).
// Over-redacting a harmless value is accepted; letting a secret through is not.

const redactedValue = '***';

const secretQueryName = /auth|token|key|pass|secret|sig|cred/i;

/** A URL with its user info and authenticating query values replaced; text that is no URL comes back as is. */
export function redactUrl(url: string): string {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)([^/?#]*)(.*)$/s.exec(url);
  if (scheme === null) return url;
  const [, prefix = '', authority = '', rest = ''] = scheme;
  const at = authority.lastIndexOf('@');
  const host = at < 0 ? authority : `${redactedValue}@${authority.slice(at + 1)}`;
  return `${prefix}${host}${redactQuery(rest)}`;
}

function redactQuery(rest: string): string {
  const query = rest.indexOf('?');
  if (query < 0) return rest;
  const hash = rest.indexOf('#', query);
  const end = hash < 0 ? rest.length : hash;
  const params = rest
    .slice(query + 1, end)
    .split('&')
    .map((param) => {
      const equals = param.indexOf('=');
      const name = equals < 0 ? param : param.slice(0, equals);
      return equals >= 0 && secretQueryName.test(decodeName(name)) ? `${name}=${redactedValue}` : param;
    });
  return `${rest.slice(0, query + 1)}${params.join('&')}${rest.slice(end)}`;
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

// A URL inside free text ends at white space, a quote, or a bracket/comma of a flow list.
const urlInText = /[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s"'<>`,\]}]+/g;
// `key: value`, `key=value`, `"key":"value"`; the value runs to its closing quote or the end of the line.
const secretField =
  /\b(bearer_token|auth_token|password|passwd|username|token|secret|api_key|authorization|proxy-authorization)(["']?[ \t]*[:=][ \t]*)(["']?)([^"'\r\n]*)/gi;

/** Free text (a config line, an error message) with every URL and credential field redacted. */
export function redactText(text: string): string {
  return text
    .replace(urlInText, (url) => redactUrl(url))
    .replace(secretField, (_match, key: string, separator: string, quote: string, value: string) =>
      value === '' ? `${key}${separator}${quote}` : `${key}${separator}${quote}${redactedValue}`,
    );
}
