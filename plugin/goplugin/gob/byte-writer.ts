// Growable output buffer with gob's primitive encodings. Callers validate ranges before writing.

const two32 = 2 ** 32;
const floatBytes = new Uint8Array(8);
const floatView = new DataView(floatBytes.buffer);
const utf8 = new TextEncoder();

export class ByteWriter {
  private buf = new Uint8Array(256);
  length = 0;

  private ensure(extra: number): void {
    if (this.length + extra <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.length + extra, this.buf.length * 2));
    grown.set(this.buf.subarray(0, this.length));
    this.buf = grown;
  }

  byte(b: number): void {
    this.ensure(1);
    this.buf[this.length++] = b;
  }

  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.length);
    this.length += bytes.length;
  }

  /** An unsigned integer in [0, 2^64): one byte below 128, else -(byte count) then big-endian bytes. */
  uint(x: number | bigint): void {
    if (typeof x === 'number' && x < 128) {
      this.byte(x);
      return;
    }
    let hi: number;
    let lo: number;
    if (typeof x === 'bigint') {
      hi = Number(x >> 32n);
      lo = Number(x & 0xffffffffn);
    } else {
      hi = Math.floor(x / two32);
      lo = x - hi * two32;
    }
    if (hi === 0 && lo < 128) {
      this.byte(lo);
      return;
    }
    const scratch = new Uint8Array(8);
    const view = new DataView(scratch.buffer);
    view.setUint32(0, hi);
    view.setUint32(4, lo);
    this.minimalBigEndian(scratch);
  }

  /** A signed integer in [-2^63, 2^63): zig-zag folded into a uint. */
  int(x: number | bigint): void {
    if (typeof x === 'number' && Math.abs(x) <= 2 ** 52) {
      this.uint(x < 0 ? -2 * x - 1 : 2 * x);
      return;
    }
    const b = BigInt(x);
    this.uint(b < 0n ? ((~b << 1n) | 1n) & 0xffffffffffffffffn : b << 1n);
  }

  /** A float64: its IEEE bits byte-reversed, sent as a uint (so small integers stay short). */
  float(f: number): void {
    floatView.setFloat64(0, f, false);
    const reversed = new Uint8Array(8);
    for (let i = 0; i < 8; i++) reversed[i] = floatBytes[7 - i]!;
    this.minimalBigEndian(reversed);
  }

  /** A uint given as 8 big-endian bytes, written in its shortest form. */
  private minimalBigEndian(be: Uint8Array): void {
    let first = 0;
    while (first < 8 && be[first] === 0) first++;
    if (first === 8) {
      this.byte(0);
      return;
    }
    if (first === 7 && be[7]! < 128) {
      this.byte(be[7]!);
      return;
    }
    this.byte(256 - (8 - first));
    this.raw(be.subarray(first));
  }

  string(s: string): void {
    const bytes = utf8.encode(s);
    this.uint(bytes.length);
    this.raw(bytes);
  }

  /** A length-prefixed gob message holding this writer's bytes, appended to `out`. */
  appendAsMessage(out: ByteWriter): void {
    out.uint(this.length);
    out.raw(this.buf.subarray(0, this.length));
  }

  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}
