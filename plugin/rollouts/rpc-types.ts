import type { GobSchema, GobValue } from '../goplugin/gob/index.ts';

/** A reply body and the Go type it must be encoded as. */
export interface RpcReply {
  schema: GobSchema;
  value: unknown;
}

export type RpcHandler = (body: GobValue) => Promise<RpcReply>;

/** Methods of one net/rpc service, by method name (without the service prefix). */
export type RpcService = Record<string, RpcHandler>;
