// A Go net/rpc server (gob codec) on one byte channel. Each direction is one gob stream: requests arrive
// as Request{ServiceMethod, Seq} followed by the argument value; replies go out as
// Response{ServiceMethod, Seq, Error} followed by the reply value, header and body in a single write.
// Calls run concurrently and are answered as they finish (the client matches replies by Seq).
// A corrupt gob stream or a malformed header makes the whole channel unusable: onFatal is called and the
// server stops reading, because the host's rpc.Client for this channel is dead from then on anyway.

import { CodedError } from './failure-codes.ts';
import { GobDecoder, GobEncoder } from './gob/index.ts';
import type { GobIgnoredFields, GobSchema, GobValue } from './gob/types.ts';
import { GobInterface, GobOpaque } from './gob/types.ts';
import type { Logger } from './hclog.ts';
import { silentLogger } from './hclog.ts';

/** Thrown by a handler to answer with Response.Error = message (the Go method returned an error). */
export class RpcServerError extends CodedError {
  constructor(message: string) {
    super('ProtocolError', message);
    this.name = 'RpcServerError';
  }
}

/** The peer sent something that is valid gob but not a net/rpc request. */
export class RpcProtocolError extends CodedError {
  constructor(message: string) {
    super('ProtocolError', `net/rpc: ${message}`);
    this.name = 'RpcProtocolError';
  }
}

/** A reply body and the Go type it must be encoded as. */
export interface RpcReply {
  readonly schema: GobSchema;
  readonly value: unknown;
  /**
   * Runs once the reply's bytes were handed to the transport and its write completed (for a socket: in the
   * kernel, so they reach the peer even if the process exits next), or once the reply could not be
   * delivered. For work that must follow the answer, such as exiting after a failed init.
   */
  readonly afterSent?: () => void;
}

export type RpcHandler = (body: GobValue) => Promise<RpcReply>;

/** Methods of one service, by method name (without the "Service." prefix). */
export type RpcService = Readonly<Record<string, RpcHandler>>;

/** Services by name, e.g. { Control: {...}, Dispenser: {...} }. */
export type RpcServices = Readonly<Record<string, RpcService>>;

/** What the server needs from its transport (a yamux stream provides exactly this). */
export interface ByteChannel {
  setReceiver(receiver: { data(chunk: Uint8Array): void; end(): void; reset(): void }): void;
  write(data: Uint8Array): Promise<void>;
  close(): void;
}

/** net/rpc's Response header type. Kept apart from any reply type that happens to be named "Response". */
export const rpcResponseHeaderSchema: GobSchema = {
  kind: 'struct',
  name: 'Response',
  fields: [
    { name: 'ServiceMethod', type: { kind: 'string' } },
    { name: 'Seq', type: { kind: 'uint' } },
    { name: 'Error', type: { kind: 'string' } },
  ],
};

/** Go's struct{}: the placeholder body of error replies and the reply of Control.Ping/Quit. */
export const emptyStructSchema: GobSchema = { kind: 'struct', name: '', fields: [] };
export const emptyStructReply: RpcReply = { schema: emptyStructSchema, value: {} };

export interface NetRpcServerOptions {
  readonly services: RpcServices;
  /** The channel can no longer be served (corrupt gob, malformed header, unencodable reply). */
  readonly onFatal: (error: Error) => void;
  /** Called after a reply was handed to the transport (e.g. to exit after answering a Quit). */
  readonly onReplySent?: (serviceMethod: string) => void;
  /** The peer closed its side and all in-flight calls were answered. */
  readonly onDrained?: () => void;
  readonly logger?: Logger;
  /** Passed to the GobDecoder. */
  readonly decoderLimits?: ConstructorParameters<typeof GobDecoder>[0];
  /** Request fields no handler reads, passed to the GobDecoder (walked, never built). */
  readonly ignoredFields?: GobIgnoredFields;
}

interface RequestHeader {
  readonly serviceMethod: string;
  /** Echoed back exactly: a gob uint, so possibly a bigint. */
  readonly seq: number | bigint;
}

function isPlainStruct(value: GobValue): value is Readonly<Record<string, GobValue>> {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value) || value instanceof Map || value instanceof Uint8Array) return false;
  if (value instanceof GobInterface || value instanceof GobOpaque) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function parseRequestHeader(value: GobValue): RequestHeader {
  if (!isPlainStruct(value)) {
    throw new RpcProtocolError('request header is not a struct');
  }
  const serviceMethod = value.ServiceMethod ?? '';
  const seq = value.Seq ?? 0;
  if (typeof serviceMethod !== 'string') {
    throw new RpcProtocolError('request header field ServiceMethod is not a string');
  }
  if ((typeof seq !== 'number' && typeof seq !== 'bigint') || seq < 0 || !Number.isInteger(Number(seq))) {
    throw new RpcProtocolError('request header field Seq is not an unsigned integer');
  }
  return { serviceMethod, seq };
}

/** Finds the handler like Go's readRequestHeader, returning Go's exact error text when there is none. */
function lookup(services: RpcServices, serviceMethod: string): RpcHandler | string {
  const dot = serviceMethod.lastIndexOf('.');
  if (dot < 0) return `rpc: service/method request ill-formed: ${serviceMethod}`;
  const serviceName = serviceMethod.slice(0, dot);
  const methodName = serviceMethod.slice(dot + 1);
  const service = Object.hasOwn(services, serviceName) ? services[serviceName] : undefined;
  if (service === undefined) return `rpc: can't find service ${serviceMethod}`;
  const handler = Object.hasOwn(service, methodName) ? service[methodName] : undefined;
  if (handler === undefined) return `rpc: can't find method ${serviceMethod}`;
  return handler;
}

export class NetRpcServer {
  readonly #channel: ByteChannel;
  readonly #options: NetRpcServerOptions;
  readonly #logger: Logger;
  readonly #decoder: GobDecoder;
  readonly #encoder = new GobEncoder();
  /** Header read, waiting for its body. */
  #pendingHeader: RequestHeader | undefined;
  #inFlight = 0;
  #peerEnded = false;
  #stopped = false;

  constructor(channel: ByteChannel, options: NetRpcServerOptions) {
    this.#channel = channel;
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#decoder = new GobDecoder(options.decoderLimits, options.ignoredFields);
    channel.setReceiver({
      data: (chunk) => this.push(chunk),
      end: () => this.#onPeerEnd(),
      reset: () => this.#stop(),
    });
  }

  /** Calls started and not yet answered. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Feeds request bytes. Normally called by the channel; public for channels that pre-read bytes. */
  push(chunk: Uint8Array): void {
    if (this.#stopped) return;
    try {
      this.#decoder.push(chunk);
      this.#drainDecoder();
    } catch (error) {
      this.#fatal(error);
    }
  }

  #drainDecoder(): void {
    while (!this.#stopped) {
      const value = this.#decoder.next();
      if (value === undefined) return;
      const header = this.#pendingHeader;
      if (header === undefined) {
        this.#pendingHeader = parseRequestHeader(value);
        continue;
      }
      this.#pendingHeader = undefined;
      this.#dispatch(header, value);
    }
  }

  #dispatch(header: RequestHeader, body: GobValue): void {
    const handler = lookup(this.#options.services, header.serviceMethod);
    if (typeof handler === 'string') {
      // Like Go: the body was read and dropped, the error goes back at once.
      this.#logger.debug('net/rpc: rejecting call', { method: header.serviceMethod, error: handler });
      this.#reply(header, emptyStructReply, handler);
      return;
    }
    this.#inFlight++;
    void this.#call(header, handler, body);
  }

  async #call(header: RequestHeader, handler: RpcHandler, body: GobValue): Promise<void> {
    let reply: RpcReply = emptyStructReply;
    let errorText = '';
    try {
      reply = await handler(body);
    } catch (error) {
      errorText = error instanceof Error ? error.message : String(error);
      if (errorText === '') errorText = 'unknown error';
      if (!(error instanceof RpcServerError)) {
        // Not a deliberate error reply: a bug. The call still gets an answer so the host is not blocked.
        this.#logger.error('net/rpc: handler failed', {
          method: header.serviceMethod,
          error: errorText,
          stack: error instanceof Error ? error.stack : undefined,
        });
      }
      reply = emptyStructReply;
    } finally {
      this.#inFlight--;
    }
    this.#reply(header, reply, errorText);
    this.#maybeDrained();
  }

  #reply(header: RequestHeader, reply: RpcReply, errorText: string): void {
    if (this.#stopped) {
      reply.afterSent?.();
      return;
    }
    let bytes: Uint8Array;
    try {
      // The body is encoded first: a reply that does not fit its schema must not leave a header (and
      // maybe its type definition) half-committed. The encoder is transactional per call, and gob only
      // needs a type defined before its first use, not ids in ascending order.
      let payload: Uint8Array;
      try {
        payload = this.#encoder.encode(reply.schema, reply.value);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        this.#logger.error('net/rpc: reply does not fit its schema', {
          method: header.serviceMethod,
          error: message,
        });
        errorText = `plugin could not encode its reply: ${message}`;
        payload = this.#encoder.encode(emptyStructSchema, {});
      }
      const head = this.#encoder.encode(rpcResponseHeaderSchema, {
        ServiceMethod: header.serviceMethod,
        Seq: header.seq,
        Error: errorText,
      });
      bytes = new Uint8Array(head.length + payload.length);
      bytes.set(head);
      bytes.set(payload, head.length);
    } catch (error) {
      this.#fatal(error);
      reply.afterSent?.();
      return;
    }
    this.#channel.write(bytes).then(
      () => {
        this.#options.onReplySent?.(header.serviceMethod);
        reply.afterSent?.();
      },
      (error: unknown) => {
        this.#logger.debug('net/rpc: reply not delivered', {
          method: header.serviceMethod,
          error: error instanceof Error ? error.message : String(error),
        });
        reply.afterSent?.();
      },
    );
  }

  #onPeerEnd(): void {
    if (this.#stopped) return;
    this.#peerEnded = true;
    if (this.#pendingHeader !== undefined || this.#decoder.bufferedBytes > 0) {
      // Go's server treats this as io.ErrUnexpectedEOF and just stops reading.
      this.#logger.warn('net/rpc: peer closed the stream in the middle of a request');
    }
    this.#maybeDrained();
  }

  #maybeDrained(): void {
    if (!this.#peerEnded || this.#inFlight > 0 || this.#stopped) return;
    // Like Go's ServeCodec: once the client is gone and every reply is out, close our side.
    this.#stopped = true;
    this.#channel.close();
    this.#options.onDrained?.();
  }

  #stop(): void {
    this.#stopped = true;
  }

  #fatal(error: unknown): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#options.onFatal(error instanceof Error ? error : new Error(String(error)));
  }
}
