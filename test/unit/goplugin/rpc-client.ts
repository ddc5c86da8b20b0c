// Test helper: the client half of Go's net/rpc gob codec, for driving NetRpcServer without Go.

import { GobDecoder, GobEncoder, type GobSchema, type GobValue } from '../../../plugin/goplugin/gob/index.ts';

/** net/rpc's Request header as Go's client encodes it. */
export const requestHeaderSchema: GobSchema = {
  kind: 'struct',
  name: 'Request',
  fields: [
    { name: 'ServiceMethod', type: { kind: 'string' } },
    { name: 'Seq', type: { kind: 'uint' } },
  ],
};

export interface DecodedReply {
  readonly serviceMethod: string;
  readonly seq: number | bigint;
  readonly error: string;
  readonly body: GobValue;
}

/** Encodes requests and decodes replies of one net/rpc stream. */
export class RpcWire {
  readonly #encoder = new GobEncoder();
  readonly #decoder = new GobDecoder();
  #header: GobValue | undefined;
  readonly replies: DecodedReply[] = [];

  request(serviceMethod: string, seq: number | bigint, schema: GobSchema, body: unknown): Uint8Array {
    const head = this.#encoder.encode(requestHeaderSchema, { ServiceMethod: serviceMethod, Seq: seq });
    const payload = this.#encoder.encode(schema, body);
    const out = new Uint8Array(head.length + payload.length);
    out.set(head);
    out.set(payload, head.length);
    return out;
  }

  /** Feeds reply bytes; complete replies are appended to `replies`. */
  push(chunk: Uint8Array): void {
    this.#decoder.push(chunk);
    for (;;) {
      const value = this.#decoder.next();
      if (value === undefined) return;
      if (this.#header === undefined) {
        this.#header = value;
        continue;
      }
      const header = this.#header as Record<string, GobValue>;
      this.#header = undefined;
      this.replies.push({
        serviceMethod: (header.ServiceMethod as string | undefined) ?? '',
        seq: (header.Seq as number | bigint | undefined) ?? 0,
        error: (header.Error as string | undefined) ?? '',
        body: value,
      });
    }
  }

  get bufferedBytes(): number {
    return this.#decoder.bufferedBytes;
  }
}

export const stringSchema: GobSchema = { kind: 'string' };
export const boolSchema: GobSchema = { kind: 'bool' };
