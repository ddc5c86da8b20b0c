// A yamux session in the server role, wire-compatible with hashicorp/yamux v0.1.2 (the multiplexer
// go-plugin puts on the plugin connection). The peer (go-plugin's client) opens every stream; we ACK
// each at once, honour both flow-control windows, answer pings, and treat any protocol violation as
// fatal for the session (GoAway with the protocol-error code, then close), because a half-working
// multiplexer would wedge the host's calls.

import type { Duplex } from 'node:stream';
import { CodedError } from './failure-codes.ts';
import type { Logger } from './hclog.ts';
import { silentLogger } from './hclog.ts';

export const YAMUX_VERSION = 0;
export const HEADER_SIZE = 12;
/** Initial per-stream window in each direction; hashicorp/yamux never advertises more by default. */
export const INITIAL_STREAM_WINDOW = 256 * 1024;
/** Streams open at once before new ones are refused. go-plugin's controller keeps one or two (net/rpc on one, the
 *  broker's rare extra); hashicorp/yamux's own accept backlog is 256. */
export const DEFAULT_MAX_STREAMS = 128;
const MAX_UINT32 = 0xffff_ffff;

export const FrameType = { Data: 0, WindowUpdate: 1, Ping: 2, GoAway: 3 } as const;
export const Flag = { SYN: 0x1, ACK: 0x2, FIN: 0x4, RST: 0x8 } as const;
export const GoAwayCode = { Normal: 0, ProtocolError: 1, InternalError: 2 } as const;

export interface FrameHeader {
  readonly version: number;
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  /** Data: payload size; WindowUpdate: window delta; Ping: opaque id; GoAway: error code. */
  readonly length: number;
}

export function encodeFrameHeader(type: number, flags: number, streamId: number, length: number): Uint8Array {
  const bytes = new Uint8Array(HEADER_SIZE);
  const view = new DataView(bytes.buffer);
  view.setUint8(0, YAMUX_VERSION);
  view.setUint8(1, type);
  view.setUint16(2, flags);
  view.setUint32(4, streamId);
  view.setUint32(8, length);
  return bytes;
}

export function decodeFrameHeader(bytes: Uint8Array): FrameHeader {
  if (bytes.length < HEADER_SIZE) {
    throw new RangeError(`a yamux header needs ${HEADER_SIZE} bytes, got ${bytes.length}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, HEADER_SIZE);
  return {
    version: view.getUint8(0),
    type: view.getUint8(1),
    flags: view.getUint16(2),
    streamId: view.getUint32(4),
    length: view.getUint32(8),
  };
}

/** The peer broke the yamux protocol; the session answers with GoAway(protocol error) and closes. */
export class YamuxProtocolError extends CodedError {
  constructor(message: string) {
    super('ProtocolError', `yamux: ${message}`);
    this.name = 'YamuxProtocolError';
  }
}

/** A write or read on a stream or session that is no longer usable. */
export class YamuxClosedError extends CodedError {
  constructor(message: string) {
    super('ConnectionClosed', `yamux: ${message}`);
    this.name = 'YamuxClosedError';
  }
}

export type SessionCloseReason =
  /** The peer closed the connection. */
  | { readonly kind: 'eof' }
  /** close() was called. */
  | { readonly kind: 'local' }
  /** The peer violated the protocol; we sent GoAway(protocol error). */
  | { readonly kind: 'protocol'; readonly error: YamuxProtocolError }
  /** The peer sent GoAway with an error code. */
  | { readonly kind: 'remote-goaway'; readonly code: number }
  /** A stream consumer threw; we sent GoAway(internal error). */
  | { readonly kind: 'internal'; readonly error: Error }
  | { readonly kind: 'transport'; readonly error: Error };

/** Receives a stream's inbound bytes. Bytes handed over count as consumed for flow control. */
export interface StreamReceiver {
  data(chunk: Uint8Array): void;
  /** The peer half-closed the stream (FIN); no more data will come. */
  end(): void;
  /** The stream was reset by the peer or the session ended; nothing more will happen on it. */
  reset(): void;
}

export interface YamuxSessionOptions {
  /** Called for every stream the peer opens, right after we ACKed it. */
  readonly onStream: (stream: YamuxStream) => void;
  readonly onClose?: (reason: SessionCloseReason) => void;
  readonly logger?: Logger;
  /** Receive window per stream; the peer starts at 256 KiB regardless, so smaller values are invalid. */
  readonly maxStreamWindow?: number;
  /** Streams open at once; one more is refused with RST and the session goes on. Default DEFAULT_MAX_STREAMS. */
  readonly maxStreams?: number;
}

interface PendingWrite {
  readonly data: Uint8Array;
  offset: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

interface PayloadInProgress {
  /** undefined: the payload of a frame for an already closed stream, read and dropped. */
  readonly stream: YamuxStream | undefined;
  remaining: number;
  /** FIN of a data frame takes effect after its payload, so the payload is still delivered. */
  readonly finAfter: boolean;
}

export class YamuxSession {
  readonly #transport: Duplex;
  readonly #options: YamuxSessionOptions;
  readonly #logger: Logger;
  readonly #maxWindow: number;
  readonly #maxStreams: number;
  /** Streams refused because too many were open (said in the log once per session, then counted). */
  #refusedStreams = 0;
  readonly #streams = new Map<number, YamuxStream>();
  /** Highest stream id the peer opened: frames for lower ids that are gone are late, not bogus. */
  #highestInboundId = 0;
  #closeReason: SessionCloseReason | undefined;
  #remoteGoAway = false;
  readonly #header = new Uint8Array(HEADER_SIZE);
  #headerFill = 0;
  #payload: PayloadInProgress | undefined;

  constructor(transport: Duplex, options: YamuxSessionOptions) {
    this.#transport = transport;
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#maxWindow = options.maxStreamWindow ?? INITIAL_STREAM_WINDOW;
    this.#maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    if (!Number.isInteger(this.#maxStreams) || this.#maxStreams < 1) {
      throw new RangeError('maxStreams must be a positive integer');
    }
    if (
      !Number.isInteger(this.#maxWindow) ||
      this.#maxWindow < INITIAL_STREAM_WINDOW ||
      this.#maxWindow > MAX_UINT32
    ) {
      throw new RangeError(`maxStreamWindow must be an integer in [${INITIAL_STREAM_WINDOW}, ${MAX_UINT32}]`);
    }
    transport.on('data', (chunk: Uint8Array) => this.#receive(chunk));
    transport.on('end', () => {
      if (this.#terminate({ kind: 'eof' })) this.#transport.end();
    });
    transport.on('close', () => this.#terminate({ kind: 'eof' }));
    transport.on('error', (error: Error) => this.#terminate({ kind: 'transport', error }));
  }

  get closed(): boolean {
    return this.#closeReason !== undefined;
  }

  get closeReason(): SessionCloseReason | undefined {
    return this.#closeReason;
  }

  /** True once the peer said (GoAway normal) that it accepts no new streams; we never open any anyway. */
  get remoteGoAway(): boolean {
    return this.#remoteGoAway;
  }

  get openStreamCount(): number {
    return this.#streams.size;
  }

  /** Streams refused so far because maxStreams were open. */
  get refusedStreamCount(): number {
    return this.#refusedStreams;
  }

  /** Closes the connection after queued frames are written. Like Go's Session.Close, sends no GoAway. */
  close(): void {
    if (this.#terminate({ kind: 'local' })) this.#transport.end();
  }

  /** Sends GoAway(internal error) and closes: for failures on our side that leave the session unusable. */
  abort(error: Error): void {
    this.#failWith(GoAwayCode.InternalError, { kind: 'internal', error });
  }

  // ---- used by YamuxStream ----

  /** @internal */
  sendFrame(type: number, flags: number, streamId: number, length: number, payload?: Uint8Array): void {
    this.#writeFrame(encodeFrameHeader(type, flags, streamId, length), payload);
  }

  /** @internal Resolves when the transport accepted the bytes. */
  sendDataFrame(streamId: number, payload: Uint8Array, done: (error?: Error | null) => void): void {
    this.#writeFrame(encodeFrameHeader(FrameType.Data, 0, streamId, payload.length), payload, done);
  }

  /** @internal */
  forgetStream(id: number): void {
    this.#streams.delete(id);
  }

  /** @internal */
  get maxWindow(): number {
    return this.#maxWindow;
  }

  /** @internal */
  get logger(): Logger {
    return this.#logger;
  }

  // ---- receive path ----

  #writeFrame(header: Uint8Array, payload?: Uint8Array, done?: (error?: Error | null) => void): void {
    if (this.#transport.writableEnded || this.#transport.destroyed) {
      done?.(new YamuxClosedError('session closed'));
      return;
    }
    if (payload === undefined || payload.length === 0) {
      this.#transport.write(header, done);
      return;
    }
    this.#transport.cork();
    this.#transport.write(header);
    this.#transport.write(payload, done);
    this.#transport.uncork();
  }

  #receive(chunk: Uint8Array): void {
    try {
      this.#parse(chunk);
    } catch (error) {
      if (error instanceof YamuxProtocolError) {
        this.#failWith(GoAwayCode.ProtocolError, { kind: 'protocol', error });
      } else {
        const cause = error instanceof Error ? error : new Error(String(error));
        this.#failWith(GoAwayCode.InternalError, { kind: 'internal', error: cause });
      }
    }
  }

  #parse(chunk: Uint8Array): void {
    let offset = 0;
    while (offset < chunk.length && this.#closeReason === undefined) {
      const payload = this.#payload;
      if (payload !== undefined) {
        const take = Math.min(payload.remaining, chunk.length - offset);
        const part = chunk.subarray(offset, offset + take);
        offset += take;
        payload.remaining -= take;
        if (payload.remaining === 0) this.#payload = undefined;
        payload.stream?.receivePayload(part);
        if (payload.remaining === 0 && payload.finAfter) payload.stream?.receiveFin();
        continue;
      }
      const take = Math.min(HEADER_SIZE - this.#headerFill, chunk.length - offset);
      this.#header.set(chunk.subarray(offset, offset + take), this.#headerFill);
      this.#headerFill += take;
      offset += take;
      if (this.#headerFill < HEADER_SIZE) return;
      this.#headerFill = 0;
      this.#handleFrame(decodeFrameHeader(this.#header));
    }
  }

  #handleFrame(header: FrameHeader): void {
    if (header.version !== YAMUX_VERSION) {
      throw new YamuxProtocolError(`invalid protocol version ${header.version}`);
    }
    switch (header.type) {
      case FrameType.Data:
      case FrameType.WindowUpdate:
        this.#handleStreamFrame(header);
        return;
      case FrameType.Ping:
        if ((header.flags & Flag.SYN) !== 0) {
          this.sendFrame(FrameType.Ping, Flag.ACK, 0, header.length);
        }
        // A Ping ACK would answer a ping of ours; we send none, so there is nothing to match.
        return;
      case FrameType.GoAway:
        this.#handleGoAway(header.length);
        return;
      default:
        throw new YamuxProtocolError(`invalid message type ${header.type}`);
    }
  }

  #handleGoAway(code: number): void {
    if (code === GoAwayCode.Normal) {
      this.#remoteGoAway = true;
      this.#logger.debug('yamux: peer sent GoAway (normal)');
      return;
    }
    this.#logger.warn('yamux: peer sent GoAway with an error code', { code });
    if (this.#terminate({ kind: 'remote-goaway', code })) this.#transport.end();
  }

  #handleStreamFrame(header: FrameHeader): void {
    const { streamId: id, flags, type, length } = header;
    let stream = this.#streams.get(id);
    if ((flags & Flag.SYN) !== 0) {
      if (stream !== undefined) throw new YamuxProtocolError(`duplicate stream ${id} opened`);
      if (id % 2 === 0) {
        throw new YamuxProtocolError(`peer opened stream ${id}, which is not a client (odd) stream id`);
      }
      if (this.#streams.size >= this.#maxStreams) {
        this.#refuseStream(header);
        return;
      }
      stream = new YamuxStream(this, id);
      this.#streams.set(id, stream);
      this.#highestInboundId = Math.max(this.#highestInboundId, id);
      // ACK at once: the peer closes the whole session if a stream stays un-ACKed for 75 s.
      stream.acknowledge();
      this.#options.onStream(stream);
    }
    if (stream === undefined) {
      if (id % 2 === 1 && id <= this.#highestInboundId) {
        // Late frame for a stream that was closed or reset (e.g. a window update racing our FIN):
        // Go drops these too.
        this.#logger.trace('yamux: dropping frame for closed stream', { stream: id, type });
        if (type === FrameType.Data && length > 0) {
          this.#payload = { stream: undefined, remaining: length, finAfter: false };
        }
        return;
      }
      throw new YamuxProtocolError(`frame (type ${type}) for unknown stream ${id}`);
    }
    if (type === FrameType.WindowUpdate) {
      stream.receiveWindowUpdate(length, flags);
      return;
    }
    const finAfter = stream.receiveDataHeader(length, flags);
    if (length > 0) {
      this.#payload = { stream, remaining: length, finAfter };
    } else if (finAfter) {
      stream.receiveFin();
    }
  }

  /**
   * Refuses a stream the peer opens while maxStreams are open, as hashicorp/yamux refuses one over its accept
   * backlog: a WindowUpdate with RST for that id, never an ACK. The session and its other streams go on; the
   * stream's payload (within the initial window) is read and dropped, and its later frames are late frames.
   */
  #refuseStream(header: FrameHeader): void {
    const { streamId: id, type, length } = header;
    if (type === FrameType.Data && length > INITIAL_STREAM_WINDOW) {
      throw new YamuxProtocolError(
        `stream ${id} sent ${length} bytes, more than its window of ${INITIAL_STREAM_WINDOW}`,
      );
    }
    this.#highestInboundId = Math.max(this.#highestInboundId, id);
    this.#refusedStreams++;
    (this.#refusedStreams === 1 ? this.#logger.warn : this.#logger.debug).call(
      this.#logger,
      'yamux: refusing a stream: too many open',
      { stream: id, open: this.#streams.size, limit: this.#maxStreams, refused: this.#refusedStreams },
    );
    this.sendFrame(FrameType.WindowUpdate, Flag.RST, id, 0);
    if (type === FrameType.Data && length > 0)
      this.#payload = { stream: undefined, remaining: length, finAfter: false };
  }

  #failWith(code: number, reason: SessionCloseReason): void {
    if (this.#closeReason !== undefined) return;
    this.#logger.error('yamux: closing session', {
      reason: reason.kind,
      error: 'error' in reason ? reason.error.message : undefined,
    });
    this.sendFrame(FrameType.GoAway, 0, 0, code);
    this.#terminate(reason);
    this.#transport.end();
  }

  /** Marks the session closed once; returns whether this call closed it. */
  #terminate(reason: SessionCloseReason): boolean {
    if (this.#closeReason !== undefined) return false;
    this.#closeReason = reason;
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    for (const stream of streams) stream.sessionClosed();
    this.#options.onClose?.(reason);
    return true;
  }
}

export class YamuxStream {
  readonly id: number;
  readonly #session: YamuxSession;
  /** How many more payload bytes the peer may send. */
  #recvWindow: number;
  /** Bytes handed to the receiver but not yet returned to the peer through a WindowUpdate. */
  #unacknowledgedConsumed = 0;
  /** How many payload bytes we may still send. */
  #sendWindow = INITIAL_STREAM_WINDOW;
  #receiver: StreamReceiver | undefined;
  /** Bytes (and a FIN) that arrived before a receiver was attached. */
  readonly #early: Uint8Array[] = [];
  readonly #writes: PendingWrite[] = [];
  #remoteClosed = false;
  #endDelivered = false;
  #finRequested = false;
  #finSent = false;
  #dead = false;

  /** @internal Streams are created by the session when the peer opens them. */
  constructor(session: YamuxSession, id: number) {
    this.#session = session;
    this.id = id;
    this.#recvWindow = INITIAL_STREAM_WINDOW;
  }

  /** Attaches the consumer; bytes that arrived earlier are delivered now. */
  setReceiver(receiver: StreamReceiver): void {
    if (this.#receiver !== undefined) throw new Error(`yamux stream ${this.id} already has a receiver`);
    this.#receiver = receiver;
    for (const chunk of this.#early.splice(0)) this.#deliver(chunk);
    if (this.#dead) {
      receiver.reset();
    } else if (this.#remoteClosed) {
      this.#deliverEnd();
    }
  }

  /** The peer's remaining send credit on this stream (for tests and diagnostics). */
  get receiveWindow(): number {
    return this.#recvWindow;
  }

  /** Our remaining send credit. */
  get sendWindow(): number {
    return this.#sendWindow;
  }

  get writable(): boolean {
    return !this.#dead && !this.#finRequested;
  }

  /**
   * Queues bytes; they go out in order, split into frames that fit the peer's window. The promise
   * resolves once the last byte was handed to the transport and rejects (YamuxClosedError) if the
   * stream or session dies first. Callers must handle the rejection.
   */
  write(data: Uint8Array): Promise<void> {
    if (!this.writable) {
      return Promise.reject(new YamuxClosedError(`stream ${this.id} is closed for writing`));
    }
    if (data.length === 0) return Promise.resolve();
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    this.#writes.push({ data, offset: 0, resolve, reject });
    this.#pump();
    return promise;
  }

  /** Half-closes our direction (FIN) once queued writes are out. */
  close(): void {
    if (this.#dead || this.#finRequested) return;
    this.#finRequested = true;
    this.#pump();
  }

  /** Resets the stream (RST) and drops queued writes. */
  reset(): void {
    if (this.#dead) return;
    this.#session.sendFrame(FrameType.WindowUpdate, Flag.RST, this.id, 0);
    this.#die(new YamuxClosedError(`stream ${this.id} was reset locally`));
  }

  // ---- called by the session ----

  /** @internal Sends the ACK, granting any window beyond the protocol's initial 256 KiB (as Go does). */
  acknowledge(): void {
    const extra = this.#session.maxWindow - INITIAL_STREAM_WINDOW;
    this.#recvWindow += extra;
    this.#session.sendFrame(FrameType.WindowUpdate, Flag.ACK, this.id, extra);
  }

  /** @internal Validates a data frame header; returns whether a FIN follows the payload. */
  receiveDataHeader(length: number, flags: number): boolean {
    if ((flags & Flag.RST) !== 0) {
      this.#remoteReset();
      return false;
    }
    if (length > this.#recvWindow) {
      throw new YamuxProtocolError(
        `recv window exceeded on stream ${this.id} (window ${this.#recvWindow}, frame ${length})`,
      );
    }
    this.#recvWindow -= length;
    return (flags & Flag.FIN) !== 0;
  }

  /** @internal */
  receivePayload(chunk: Uint8Array): void {
    if (this.#dead) return;
    if (this.#endDelivered) {
      // Go can race a write past its own FIN; the bytes have no reader any more.
      this.#session.logger.debug('yamux: dropping data after FIN', { stream: this.id, bytes: chunk.length });
      return;
    }
    if (this.#receiver === undefined) {
      this.#early.push(chunk);
      return;
    }
    this.#deliver(chunk);
  }

  /** @internal */
  receiveFin(): void {
    if (this.#remoteClosed) throw new YamuxProtocolError(`unexpected FIN on stream ${this.id}`);
    this.#remoteClosed = true;
    if (this.#receiver !== undefined) this.#deliverEnd();
    this.#forgetIfDone();
  }

  /** @internal */
  receiveWindowUpdate(delta: number, flags: number): void {
    if ((flags & Flag.RST) !== 0) {
      this.#remoteReset();
      return;
    }
    if (this.#sendWindow + delta > MAX_UINT32) {
      throw new YamuxProtocolError(`window update overflows the send window of stream ${this.id}`);
    }
    this.#sendWindow += delta;
    if ((flags & Flag.FIN) !== 0) this.receiveFin();
    this.#pump();
  }

  /** @internal */
  sessionClosed(): void {
    this.#die(new YamuxClosedError('session closed'));
  }

  // ---- internals ----

  #deliver(chunk: Uint8Array): void {
    this.#receiver?.data(chunk);
    this.#credit(chunk.length);
  }

  #credit(consumed: number): void {
    // After the peer's FIN no more data comes, so credit would only produce a frame it may have forgotten.
    if (this.#dead || this.#remoteClosed) return;
    this.#unacknowledgedConsumed += consumed;
    // Same threshold as Go: return credit once half the window was consumed.
    if (this.#unacknowledgedConsumed >= this.#session.maxWindow / 2) {
      const delta = this.#unacknowledgedConsumed;
      this.#unacknowledgedConsumed = 0;
      this.#recvWindow += delta;
      this.#session.sendFrame(FrameType.WindowUpdate, 0, this.id, delta);
    }
  }

  #deliverEnd(): void {
    if (this.#endDelivered) return;
    this.#endDelivered = true;
    this.#receiver?.end();
  }

  #pump(): void {
    while (!this.#dead && this.#sendWindow > 0) {
      const next = this.#writes[0];
      if (next === undefined) break;
      const size = Math.min(this.#sendWindow, next.data.length - next.offset);
      const payload = next.data.subarray(next.offset, next.offset + size);
      next.offset += size;
      this.#sendWindow -= size;
      const finished = next.offset === next.data.length;
      if (finished) this.#writes.shift();
      this.#session.sendDataFrame(this.id, payload, (error) => {
        if (!finished) return;
        if (error) next.reject(new YamuxClosedError(`write on stream ${this.id} failed: ${error.message}`));
        else next.resolve();
      });
    }
    if (this.#finRequested && !this.#finSent && !this.#dead && this.#writes.length === 0) {
      this.#finSent = true;
      this.#session.sendFrame(FrameType.WindowUpdate, Flag.FIN, this.id, 0);
      this.#forgetIfDone();
    }
  }

  #forgetIfDone(): void {
    if (this.#finSent && this.#remoteClosed) {
      this.#session.forgetStream(this.id);
    }
  }

  #remoteReset(): void {
    this.#die(new YamuxClosedError(`stream ${this.id} was reset by the peer`));
  }

  #die(error: YamuxClosedError): void {
    if (this.#dead) return;
    this.#dead = true;
    this.#session.forgetStream(this.id);
    for (const pending of this.#writes.splice(0)) pending.reject(error);
    this.#early.length = 0;
    this.#receiver?.reset();
  }
}
