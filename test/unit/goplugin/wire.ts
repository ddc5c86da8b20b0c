// Test helpers: a fake yamux peer on one end of an in-memory duplex pair. It writes raw frames and parses
// what the session under test sends back.

import type { Duplex } from 'node:stream';
import { duplexPair } from 'node:stream';
import {
  decodeFrameHeader,
  encodeFrameHeader,
  type FrameHeader,
  FrameType,
  HEADER_SIZE,
} from '../../../plugin/goplugin/yamux.ts';

export interface ReceivedFrame extends FrameHeader {
  readonly payload: Uint8Array;
}

/** The peer side of a session: sends frames, collects parsed frames, notices when the session ends. */
export class FakePeer {
  readonly socket: Duplex;
  readonly frames: ReceivedFrame[] = [];
  ended = false;
  #buffer = new Uint8Array(0);
  #waiters: Array<() => void> = [];

  constructor(socket: Duplex) {
    this.socket = socket;
    socket.on('data', (chunk: Uint8Array) => {
      const merged = new Uint8Array(this.#buffer.length + chunk.length);
      merged.set(this.#buffer);
      merged.set(chunk, this.#buffer.length);
      this.#buffer = merged;
      this.#parse();
    });
    socket.on('end', () => {
      this.ended = true;
      this.#wake();
    });
  }

  #parse(): void {
    for (;;) {
      if (this.#buffer.length < HEADER_SIZE) break;
      const header = decodeFrameHeader(this.#buffer);
      const payloadSize = header.type === FrameType.Data ? header.length : 0;
      if (this.#buffer.length < HEADER_SIZE + payloadSize) break;
      const payload = this.#buffer.slice(HEADER_SIZE, HEADER_SIZE + payloadSize);
      this.frames.push({ ...header, payload });
      this.#buffer = this.#buffer.slice(HEADER_SIZE + payloadSize);
    }
    this.#wake();
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  send(type: number, flags: number, streamId: number, length: number, payload?: Uint8Array): void {
    this.socket.write(encodeFrameHeader(type, flags, streamId, length));
    if (payload !== undefined && payload.length > 0) this.socket.write(payload);
  }

  sendRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  sendData(streamId: number, payload: Uint8Array, flags = 0): void {
    this.send(FrameType.Data, flags, streamId, payload.length, payload);
  }

  /** Waits until a frame matching `match` arrived (searching from `from`), or fails after a while. */
  async waitFor(match: (frame: ReceivedFrame) => boolean, from = 0, what = 'frame'): Promise<ReceivedFrame> {
    for (;;) {
      const found = this.frames.slice(from).find(match);
      if (found !== undefined) return found;
      if (this.ended) throw new Error(`connection ended while waiting for ${what}`);
      await this.#next(what);
    }
  }

  async waitForEnd(): Promise<void> {
    while (!this.ended) await this.#next('end of connection');
  }

  /** Lets queued I/O settle (several macrotask turns). */
  async settle(): Promise<void> {
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  }

  #next(what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 5000);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

export function socketPair(): { local: Duplex; peer: FakePeer } {
  const [local, remote] = duplexPair();
  return { local, peer: new FakePeer(remote) };
}

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
