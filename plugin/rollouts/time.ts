// RFC 3339 text ↔ Go time.Time binary, for the times plugins return (Measurement.StartedAt, ...).

import { CodedError } from '../goplugin/failure-codes.ts';
import { encodeGoTime } from '../goplugin/gob/index.ts';

const rfc3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Parses an RFC 3339 timestamp (up to nanoseconds) into Go's MarshalBinary bytes, in UTC. */
export function rfc3339ToGoTimeBytes(text: string): Uint8Array {
  const m = rfc3339.exec(text);
  if (!m) throw new CodedError('ProtocolError', `not an RFC 3339 time: ${JSON.stringify(text)}`);
  const [, y, mo, d, h, mi, s, frac = '', z, sign, oh = '0', om = '0'] = m;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (Number.isNaN(ms))
    throw new CodedError('ProtocolError', `not an RFC 3339 time: ${JSON.stringify(text)}`);
  const offset = z ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 3600 + Number(om) * 60);
  const unixSeconds = BigInt(ms / 1000 - offset);
  const nanos = frac === '' ? 0 : Number(frac.padEnd(9, '0'));
  return encodeGoTime({ unixSeconds, nanos, offsetSeconds: null });
}

/** Now, as RFC 3339 with milliseconds, UTC. */
export function nowRfc3339(): string {
  return new Date().toISOString();
}
