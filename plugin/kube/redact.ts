// The one way vmzones shows text that may carry credentials: URLs of vmauth configs, VMUser targetRefs and
// VMAgent remote-write lists, and lines copied from a raw vmauth config. Everything that can hold a secret in
// the vmauth config format (docs/victoriametrics.md, "Credentials in a vmauth config") is replaced by `***`
// before it reaches a step message, a log line, an annotation or a gate error:
// - user info in a URL (`http://user:pass@host`), whatever the scheme;
// - query values whose name says they authenticate (`?authKey=`, `token`, `access_token`, `api_key`, `password`,
//   `secret`, `signature` ...);
// - values of the keys `bearer_token`, `auth_token`, `password`, `username` (with a password it is half of a
//   credential), `token`, `secret` and of `Authorization` headers (`headers: ["Authorization: Bearer ..."]`).
// Spec field values get the rules further down (redactFieldValue).
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

// The API server quotes a value it refuses: `spec.license.key: Invalid value: "…": …` (field.Invalid). Such a value
// is shown only as a spec field's value would be (redactFieldValue below), by its path.
const invalidValue = /([A-Za-z0-9_.[\]-]+): Invalid value: ("(?:[^"\\]|\\.)*"|[^\s:,]+)/g;

function redactInvalidValue(match: string, path: string, quoted: string): string {
  let value: unknown = quoted;
  try {
    value = JSON.parse(quoted);
  } catch {
    // not JSON: shown as the text it is, under the same rules
  }
  const segments = path.split(/[.[\]]+/).filter(Boolean);
  const marker = fieldValueMarker(segments, value);
  return marker === undefined ? match : `${path}: Invalid value: ${marker}`;
}

/** Free text (a config line, an error message) with every URL and credential field redacted. */
export function redactText(text: string): string {
  return text
    .replace(invalidValue, redactInvalidValue)
    .replace(urlInText, (url) => redactUrl(url))
    .replace(secretField, (_match, key: string, separator: string, quote: string, value: string) =>
      value === '' ? `${key}${separator}${quote}` : `${key}${separator}${quote}${redactedValue}`,
    );
}

// Spec field values (apply's step message, step status and Event, Abort's message, `vmzones diff`): the path is
// always shown, the value only when it is short and no path segment or nested key looks like a credential. A
// VMCluster spec holds license keys (`spec.license.key`) and flags such as `-httpAuth.password` or
// `-metricsAuthKey` in `extraArgs`, whose names are path segments here.
const secretFieldName = /key|licen[cs]e|pass|token|secret|auth|bearer|credential/i;

/** Longer values are shown as their length only: they are rarely readable in one line and may embed anything. */
export const longFieldValueChars = 64;

/** Whether a field name (a path segment, a map key such as an extraArgs flag name) says its value is a credential. */
export function isSecretFieldName(name: string): boolean {
  return secretFieldName.test(name);
}

/** A structure (object, list) shown with its leaves redacted is still cut to its length beyond this. */
const longStructureChars = 4 * longFieldValueChars;

/** The value with every nested value under a secret-looking key `***`, every long string `(N chars)` and every other
 *  string passed through redactText. */
function redactNested(value: unknown): unknown {
  if (typeof value === 'string') {
    return value.length > longFieldValueChars ? `(${value.length} chars)` : redactText(value);
  }
  if (Array.isArray(value)) return value.map(redactNested);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [
        key,
        isSecretFieldName(key) ? redactedValue : redactNested(inner),
      ]),
    );
  }
  return value;
}

/** What stands for the value when it is not shown: `***` under a secret-looking path, `(N chars)` when long. */
function fieldValueMarker(path: readonly string[], value: unknown): string | undefined {
  if (path.some(isSecretFieldName)) return redactedValue;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const structure = value !== null && typeof value === 'object';
  // A structure is shown with its leaves redacted (its keys are paths too), unless even that is long.
  const shownLength = structure ? JSON.stringify(redactNested(value)).length : text.length;
  return shownLength > (structure ? longStructureChars : longFieldValueChars)
    ? `(${text.length} chars)`
    : undefined;
}

/**
 * A spec field's value as a message or status may carry it: `***` under a secret-looking path; a string longer than
 * longFieldValueChars as `(N chars)`; a structure with those rules applied to its leaves and nested keys (or as
 * `(N chars)` when even that is longer than longStructureChars); other strings redacted as free text. `undefined` (an
 * unset field) stays undefined.
 */
export function redactFieldValue(path: readonly string[], value: unknown): unknown {
  if (value === undefined) return undefined;
  return fieldValueMarker(path, value) ?? redactNested(value);
}

/** redactFieldValue as text: `v1.2.3` (`"v1.2.3"` with quoteStrings), `{"a":1}`, `***`, `(120 chars)`, `(unset)`. */
export function showFieldValue(path: readonly string[], value: unknown, quoteStrings = false): string {
  if (value === undefined) return '(unset)';
  const marker = fieldValueMarker(path, value);
  if (marker !== undefined) return marker;
  const shown = redactNested(value);
  return typeof shown === 'string' && !quoteStrings ? shown : JSON.stringify(shown);
}
