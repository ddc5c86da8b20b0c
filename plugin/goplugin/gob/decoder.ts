// A push-fed decoder for one gob stream (one direction of one connection). Bytes arrive in arbitrary chunks;
// next() decodes a top-level value once every message it needs is buffered. An attempt that runs out of
// messages consumes nothing and adds no definition to the stream's type table; it is retried only once
// enough bytes arrived to get past the point where it stopped, and the retry skips the definitions the
// earlier attempt already parsed (see value-reader.ts), so a value split into many chunks costs little more
// than one that arrives whole.

import { IncompleteInput } from './cursor.ts';
import { GobError, type GobIgnoredFields, type GobValue } from './types.ts';
import { ValueReader } from './value-reader.ts';

export interface GobDecoderLimits {
  /** Largest message accepted; a bigger length prefix is GobError('limit'). Default 64 MiB. */
  maxMessageBytes: number;
  /** Deepest nesting of structs, slices, arrays, maps and interfaces. Default 64. */
  maxDepth: number;
  /** Most type definitions per stream. Default 10000. */
  maxTypes: number;
}

export const defaultGobDecoderLimits: Readonly<GobDecoderLimits> = {
  maxMessageBytes: 64 * 1024 * 1024,
  maxDepth: 64,
  maxTypes: 10000,
};

const initialCapacity = 64 * 1024;
/** An empty buffer bigger than this is released instead of kept for the next value. */
const retainedCapacity = 1024 * 1024;

export class GobDecoder {
  private readonly reader: ValueReader;
  private readonly maxMessageBytes: number;
  private buffer = new Uint8Array(initialCapacity);
  private start = 0;
  private available = 0;
  /** Bytes (counted from `start`) that must be buffered before another attempt can get further. */
  private needed = 1;
  private failure: GobError | undefined;

  constructor(limits?: Partial<GobDecoderLimits>, ignored?: GobIgnoredFields) {
    const l = { ...defaultGobDecoderLimits, ...limits };
    for (const [name, v] of Object.entries(l)) {
      if (!Number.isSafeInteger(v) || v < 1) {
        throw new RangeError(`gob decoder limit ${name} must be a positive integer`);
      }
    }
    this.maxMessageBytes = l.maxMessageBytes;
    this.reader = new ValueReader(l.maxDepth, l.maxTypes, ignored);
  }

  /** Bytes pushed but not yet consumed by a decoded value (tells a clean EOF from a truncated one). */
  get bufferedBytes(): number {
    return this.available - this.start;
  }

  /** Appends raw bytes of the stream; chunks may be split anywhere. The bytes are copied. */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    if (this.available + chunk.length > this.buffer.length) this.makeRoom(chunk.length);
    this.buffer.set(chunk, this.available);
    this.available += chunk.length;
  }

  /**
   * Decodes the next top-level value (after any type definitions before it). Returns undefined while the
   * buffered bytes do not hold a complete value, without consuming or registering anything. Throws GobError
   * on corrupt input or an exceeded limit; after that the stream is dead and every call throws again.
   */
  next(): GobValue | undefined {
    if (this.failure !== undefined) throw this.failure;
    if (this.available - this.start < this.needed) return undefined;
    const c = this.reader.cursor;
    c.bytes = this.buffer;
    c.pos = this.start;
    c.end = this.start;
    c.available = this.available;
    c.maxMessageBytes = this.maxMessageBytes;
    this.reader.begin(this.start);
    try {
      const value = this.reader.readTopLevel();
      this.reader.commit();
      // Like Go, whatever is left in the value's last message is dropped.
      this.consume(c.end);
      return value;
    } catch (err) {
      if (err instanceof IncompleteInput) {
        this.needed = err.neededEnd - this.start;
        return undefined;
      }
      this.failure = asGobError(err);
      throw this.failure;
    }
  }

  private consume(end: number): void {
    this.start = end;
    this.needed = 1;
    if (this.start === this.available) {
      this.start = 0;
      this.available = 0;
      if (this.buffer.length > retainedCapacity) this.buffer = new Uint8Array(initialCapacity);
    }
  }

  private makeRoom(extra: number): void {
    const live = this.available - this.start;
    const required = live + extra;
    // Compact only when that frees at least half the buffer, so small pushes never copy repeatedly.
    if (required <= this.buffer.length >>> 1) {
      this.buffer.copyWithin(0, this.start, this.available);
    } else {
      const grown = new Uint8Array(Math.max(required, this.buffer.length * 2));
      grown.set(this.buffer.subarray(this.start, this.available));
      this.buffer = grown;
    }
    this.start = 0;
    this.available = live;
  }
}

function asGobError(err: unknown): GobError {
  if (err instanceof GobError) return err;
  // Only reachable with a maxDepth far above the default: the JavaScript stack ran out first.
  if (err instanceof RangeError) return new GobError('limit', `nesting too deep to decode (${err.message})`);
  // Callers rely on GobError only; a bug here still kills the stream, with a message that says so.
  return new GobError(
    'corrupt',
    `internal decoder error: ${err instanceof Error ? err.message : String(err)}`,
  );
}
