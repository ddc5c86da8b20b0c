// Go's time.Time binary layout (Time.MarshalBinary / GobEncode, time.go):
//   byte 0       version 1, or 2 when the zone offset has a seconds part
//   bytes 1..8   seconds since 0001-01-01T00:00:00Z, int64 big-endian
//   bytes 9..12  nanoseconds, int32 big-endian
//   bytes 13..14 zone offset in minutes east of UTC, int16 big-endian; -1 means the UTC location
//   byte 15      (version 2) seconds of the offset, int8
// Go's MarshalBinary writes a negative sub-minute offset as a truncated minute count plus a negative seconds
// byte, which its own UnmarshalBinary then misreads (it adds the byte as 0..255). decodeGoTime reads the byte
// as the signed value MarshalBinary wrote, so it returns the offset the sender had (the value the controller
// holds, which is what the adapters must expose); encodeGoTime writes floor(minutes) plus 0..59 seconds, which
// Go reads back as the intended offset.

import { GobError } from './types.ts';

export interface GoTime {
  readonly unixSeconds: bigint;
  readonly nanos: number;
  /** Seconds east of UTC; null = Go's time.UTC location (offset bytes FF FF). */
  readonly offsetSeconds: number | null;
}

/** Seconds from 0001-01-01 to 1970-01-01 (Go's unixToInternal). */
const unixToInternal = 62135596800n;
const int64Min = -(1n << 63n);
const int64Max = (1n << 63n) - 1n;

export function decodeGoTime(bytes: Uint8Array): GoTime {
  if (bytes.length === 0) throw new GobError('corrupt', 'time: no data');
  const version = bytes[0];
  if (version !== 1 && version !== 2) throw new GobError('corrupt', `time: unsupported version ${version}`);
  const want = version === 2 ? 16 : 15;
  if (bytes.length !== want) {
    throw new GobError('corrupt', `time: invalid length ${bytes.length} for version ${version}`);
  }
  // Read with integer arithmetic: a DataView and a BigInt read per time cost more than the rest of a
  // Rollout's step status (a field-heavy Rollout carries hundreds of times).
  const hi = (bytes[1]! << 24) | (bytes[2]! << 16) | (bytes[3]! << 8) | bytes[4]!; // signed
  const lo = ((bytes[5]! << 24) | (bytes[6]! << 16) | (bytes[7]! << 8) | bytes[8]!) >>> 0;
  const nanos = (bytes[9]! << 24) | (bytes[10]! << 16) | (bytes[11]! << 8) | bytes[12]!;
  // Go does not check this; a value outside a second is not a time anyone sent on purpose.
  if (nanos < 0 || nanos > 999_999_999) {
    throw new GobError('corrupt', `time: nanoseconds ${nanos} out of range`);
  }
  const minutes = ((bytes[13]! << 24) >> 16) | bytes[14]!; // int16
  let offset = minutes * 60;
  if (version === 2) offset += (bytes[15]! << 24) >> 24; // int8
  // |hi| < 2^20 keeps hi·2^32 + lo exact in a double (years up to ~±142 000).
  const sec =
    hi > -0x100000 && hi < 0x100000 ? BigInt(hi * 4294967296 + lo) : (BigInt(hi) << 32n) | BigInt(lo);
  return { unixSeconds: sec - unixToInternal, nanos, offsetSeconds: offset === -60 ? null : offset };
}

export function encodeGoTime(t: GoTime): Uint8Array {
  const sec = t.unixSeconds + unixToInternal;
  if (typeof t.unixSeconds !== 'bigint' || sec < int64Min || sec > int64Max) {
    throw new GobError('encode', `time: seconds ${String(t.unixSeconds)} out of range`);
  }
  if (!Number.isInteger(t.nanos) || t.nanos < 0 || t.nanos > 999_999_999) {
    throw new GobError('encode', `time: nanoseconds ${t.nanos} out of range`);
  }
  let minutes = -1;
  let seconds = 0;
  const offset = t.offsetSeconds;
  if (offset !== null) {
    if (!Number.isInteger(offset)) {
      throw new GobError('encode', `time: zone offset ${offset} is not whole seconds`);
    }
    minutes = Math.floor(offset / 60);
    seconds = offset - minutes * 60;
    // -60 s is indistinguishable from the UTC marker in Go's layout; Go refuses it too.
    if (offset === -60 || minutes < -32768 || minutes > 32767) {
      throw new GobError('encode', `time: zone offset ${offset} s cannot be represented`);
    }
  }
  const out = new Uint8Array(seconds === 0 ? 15 : 16);
  const view = new DataView(out.buffer);
  out[0] = seconds === 0 ? 1 : 2;
  view.setBigInt64(1, sec, false);
  view.setInt32(9, t.nanos, false);
  view.setInt16(13, minutes, false);
  if (seconds !== 0) out[15] = seconds;
  return out;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** Days since 1970-01-01 → proleptic Gregorian date (H. Hinnant's civil_from_days). */
export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** Formats like Go's t.Format(time.RFC3339Nano) in the time's own zone. */
export function goTimeToRFC3339(t: GoTime): string {
  const offset = t.offsetSeconds ?? 0;
  const local = t.unixSeconds + BigInt(offset);
  let days = local / 86400n;
  if (local < 0n && days * 86400n !== local) days -= 1n;
  const secOfDay = Number(local - days * 86400n);
  const { year, month, day } = civilFromDays(Number(days));
  // Go's appendInt(year, 4): a sign, then at least four digits.
  const yyyy = year < 0 ? `-${pad(-year, 4)}` : pad(year, 4);
  const hh = pad(Math.floor(secOfDay / 3600), 2);
  const mm = pad(Math.floor((secOfDay % 3600) / 60), 2);
  const ss = pad(secOfDay % 60, 2);
  const fraction = t.nanos === 0 ? '' : `.${pad(t.nanos, 9).replace(/0+$/, '')}`;
  let zone = 'Z';
  if (offset !== 0) {
    const minutes = Math.trunc(offset / 60); // Go drops the seconds of the offset here
    const abs = Math.abs(minutes);
    zone = `${minutes < 0 ? '-' : '+'}${pad(Math.floor(abs / 60), 2)}:${pad(abs % 60, 2)}`;
  }
  return `${yyyy}-${pad(month, 2)}-${pad(day, 2)}T${hh}:${mm}:${ss}${fraction}${zone}`;
}

/** A JavaScript Date as a Go time in UTC (millisecond precision). */
export function goTimeFromDate(d: Date): GoTime {
  const ms = d.getTime();
  if (Number.isNaN(ms)) throw new GobError('encode', 'time: invalid Date');
  const sec = Math.floor(ms / 1000);
  return { unixSeconds: BigInt(sec), nanos: (ms - sec * 1000) * 1_000_000, offsetSeconds: null };
}

// The wall clock only has milliseconds; a monotonic high-resolution clock anchored to it adds the rest.
// The anchor is renewed whenever the two drift apart (clock steps, NTP), keeping the wall clock authoritative.
let anchorWallNs = 0n;
let anchorHr = 0n;
const maxDriftNs = 2_000_000n;

/** The current time in UTC, with sub-millisecond precision where the platform provides it. */
export function goTimeNow(): GoTime {
  const wallMs = Date.now();
  const hr = process.hrtime.bigint();
  let ns = anchorWallNs + (hr - anchorHr);
  const wallNs = BigInt(wallMs) * 1_000_000n;
  if (anchorHr === 0n || ns - wallNs > maxDriftNs || wallNs - ns > maxDriftNs) {
    anchorWallNs = wallNs;
    anchorHr = hr;
    ns = wallNs;
  }
  const unixSeconds = ns >= 0n ? ns / 1_000_000_000n : -((-ns + 999_999_999n) / 1_000_000_000n);
  return { unixSeconds, nanos: Number(ns - unixSeconds * 1_000_000_000n), offsetSeconds: null };
}
