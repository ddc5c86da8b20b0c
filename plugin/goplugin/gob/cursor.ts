// Reading primitives inside the current gob message, plus the step to the next message of the stream.
// Everything inside a message is bounds-checked against the message end (GobError 'corrupt'); only the
// step to a message that is not fully buffered yet raises IncompleteInput, which the decoder turns into
// "try again after more bytes".

import { Buffer, isAscii } from 'node:buffer';
import { GobError } from './types.ts';

/** Thrown (not an Error: it is control flow) when a message needed next is not fully buffered yet. */
export class IncompleteInput {
  /** Absolute buffer offset up to which bytes must be available before another attempt can progress. */
  readonly neededEnd: number;
  constructor(neededEnd: number) {
    this.neededEnd = neededEnd;
  }
}

const maxSafe = Number.MAX_SAFE_INTEGER;
const two32 = 2 ** 32;
const floatBytes = new Uint8Array(8);
const floatView = new DataView(floatBytes.buffer);
// ignoreBOM: a leading U+FEFF is part of the Go string, not a marker to strip.
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
// Buffer's Latin-1 copy works on any Uint8Array (Buffer is one); there is no documented way without a Buffer.
const latin1Slice = Buffer.prototype.latin1Slice as (this: Uint8Array, start: number, end: number) => string;

export class MessageCursor {
  /** The decoder's whole buffer; messages are ranges of it. */
  bytes: Uint8Array = new Uint8Array(0);
  /** Read position inside the current message. */
  pos = 0;
  /** End of the current message (exclusive). The next message's length prefix starts here. */
  end = 0;
  /** End of the buffered stream bytes. */
  available = 0;
  maxMessageBytes = 0;

  remaining(): number {
    return this.end - this.pos;
  }

  /** Steps to the next message; the current one must be fully read (Go only reads a new one when empty). */
  nextMessage(): void {
    const bytes = this.bytes;
    const start = this.end;
    if (start >= this.available) throw new IncompleteInput(start + 1);
    const first = bytes[start]!;
    let length = first;
    let bodyStart = start + 1;
    if (first > 0x7f) {
      const n = 256 - first;
      if (n > 8) {
        throw new GobError('corrupt', `message length prefix byte 0x${first.toString(16)} is not a uint`);
      }
      if (start + 1 + n > this.available) throw new IncompleteInput(start + 1 + n);
      length = 0;
      for (let i = start + 1; i <= start + n; i++) length = length * 256 + bytes[i]!;
      bodyStart = start + 1 + n;
    }
    if (length > this.maxMessageBytes) {
      throw new GobError(
        'limit',
        `message of ${length} bytes exceeds the limit of ${this.maxMessageBytes} bytes`,
      );
    }
    // Go's decoder sees io.EOF in an empty message; on a stream that can only mean corruption.
    if (length === 0) throw new GobError('corrupt', 'empty message');
    if (bodyStart + length > this.available) throw new IncompleteInput(bodyStart + length);
    this.pos = bodyStart;
    this.end = bodyStart + length;
  }

  /** An unsigned integer as a number: exact up to 2^53, approximate (but huge) beyond; for counts and deltas. */
  readUint(): number {
    const pos = this.pos;
    if (pos >= this.end) throw new GobError('corrupt', 'unexpected end of message');
    const bytes = this.bytes;
    const first = bytes[pos]!;
    if (first <= 0x7f) {
      this.pos = pos + 1;
      return first;
    }
    const n = 256 - first;
    if (n > 8) throw new GobError('corrupt', `uint wider than 8 bytes (prefix 0x${first.toString(16)})`);
    const stop = pos + 1 + n;
    if (stop > this.end) throw new GobError('corrupt', `uint of ${n} bytes exceeds the message`);
    let x = 0;
    for (let i = pos + 1; i < stop; i++) x = x * 256 + bytes[i]!;
    this.pos = stop;
    return x;
  }

  /** An unsigned integer, exactly: a number when ≤ 2^53 − 1, else a bigint. */
  readUintExact(): number | bigint {
    const pos = this.pos;
    if (pos >= this.end) throw new GobError('corrupt', 'unexpected end of message');
    const bytes = this.bytes;
    const first = bytes[pos]!;
    if (first <= 0x7f) {
      this.pos = pos + 1;
      return first;
    }
    const n = 256 - first;
    if (n > 8) throw new GobError('corrupt', `uint wider than 8 bytes (prefix 0x${first.toString(16)})`);
    const stop = pos + 1 + n;
    if (stop > this.end) throw new GobError('corrupt', `uint of ${n} bytes exceeds the message`);
    this.pos = stop;
    if (n <= 6) {
      let x = 0;
      for (let i = pos + 1; i < stop; i++) x = x * 256 + bytes[i]!;
      return x;
    }
    // 7 or 8 bytes: split into the low 32 bits and the rest.
    let hi = 0;
    for (let i = pos + 1; i < stop - 4; i++) hi = hi * 256 + bytes[i]!;
    const lo =
      ((bytes[stop - 4]! << 24) | (bytes[stop - 3]! << 16) | (bytes[stop - 2]! << 8) | bytes[stop - 1]!) >>>
      0;
    if (hi < 0x200000) return hi * two32 + lo; // < 2^53
    return (BigInt(hi) << 32n) | BigInt(lo);
  }

  /** A signed integer, exactly: a number when within ±(2^53 − 1), else a bigint. */
  readIntExact(): number | bigint {
    const u = this.readUintExact();
    if (typeof u === 'number') {
      const half = Math.floor(u / 2);
      return u % 2 === 1 ? -half - 1 : half;
    }
    const half = u >> 1n;
    const i = (u & 1n) === 1n ? ~half : half;
    return i >= -maxSafe && i <= maxSafe ? Number(i) : i;
  }

  /** A type id: a gob int that must fit Go's int32 typeId. */
  readTypeId(): number {
    const u = this.readUint();
    if (u > 0xffffffff) throw new GobError('corrupt', 'type id out of the int32 range');
    const half = Math.floor(u / 2);
    return u % 2 === 1 ? -half - 1 : half;
  }

  /** A float64: a uint holding the IEEE bits byte-reversed. */
  readFloat(): number {
    const pos = this.pos;
    if (pos >= this.end) throw new GobError('corrupt', 'unexpected end of message');
    const bytes = this.bytes;
    const first = bytes[pos]!;
    floatBytes.fill(0);
    if (first <= 0x7f) {
      floatBytes[0] = first;
      this.pos = pos + 1;
    } else {
      const n = 256 - first;
      if (n > 8) throw new GobError('corrupt', `uint wider than 8 bytes (prefix 0x${first.toString(16)})`);
      const stop = pos + 1 + n;
      if (stop > this.end) throw new GobError('corrupt', `uint of ${n} bytes exceeds the message`);
      // The uint's last byte is the float's first (most significant) byte.
      for (let k = 0; k < n; k++) floatBytes[k] = bytes[stop - 1 - k]!;
      this.pos = stop;
    }
    return floatView.getFloat64(0, false);
  }

  /** A byte count for data that must lie inside the current message (Go's getLength). */
  readLength(what: string): number {
    const n = this.readUint();
    if (n > this.end - this.pos) {
      throw new GobError(
        'corrupt',
        `${what} length ${n} exceeds the ${this.end - this.pos} bytes left in the message`,
      );
    }
    return n;
  }

  /** A copy of the next n bytes (n already checked against the message). */
  takeBytes(n: number): Uint8Array {
    const pos = this.pos;
    this.pos = pos + n;
    // One ArrayBuffer per copy. Views into a shared slab instead were no faster and cost ~12 MiB of peak
    // RSS under the RPC benchmark (measured side by side; the cause was not pinned down).
    return this.bytes.slice(pos, pos + n);
  }

  /** The next n bytes as a Go string (invalid UTF-8 becomes U+FFFD, as Go's JSON encoder would do). */
  takeString(n: number): string {
    const bytes = this.bytes;
    const pos = this.pos;
    const stop = pos + n;
    this.pos = stop;
    if (n <= 12) {
      // Short ASCII strings (field values, keys) are far cheaper to build directly.
      let s = '';
      for (let i = pos; i < stop; i++) {
        const b = bytes[i]!;
        if (b > 0x7f) return utf8.decode(bytes.subarray(pos, stop));
        s += String.fromCharCode(b);
      }
      return s;
    }
    // ASCII (nearly every string in a Kubernetes object) is copied as Latin-1, which is the same bytes and
    // several times cheaper than a UTF-8 decode; anything else goes through the UTF-8 decoder.
    if (n <= 64) {
      for (let i = pos; i < stop; i++) if (bytes[i]! > 0x7f) return utf8.decode(bytes.subarray(pos, stop));
      return latin1Slice.call(bytes, pos, stop);
    }
    const view = bytes.subarray(pos, stop);
    return isAscii(view) ? latin1Slice.call(bytes, pos, stop) : utf8.decode(view);
  }

  skip(n: number): void {
    this.pos += n;
  }
}
