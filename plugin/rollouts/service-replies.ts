// What the step and metric services share: the hooks main.ts gives them, the text of an error, and the replies of
// Go type RpcError (InitPlugin, GarbageCollect).

import type { RpcReply } from '../goplugin/index.ts';
import { rpcErrorSchema } from './schemas.ts';

export interface ServiceHooks {
  /**
   * Called after InitPlugin failed, once its error reply is on the wire (or could not be delivered): the
   * controller never retries InitPlugin on the same process, so the hook may end the process.
   */
  onInitFailure(error: Error): void;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The RpcError reply of a failed InitPlugin; the hook runs only after the reply was written (netrpc afterSent). */
export function initFailureReply(err: unknown, hooks: ServiceHooks): RpcReply {
  const error = err instanceof Error ? err : new Error(String(err));
  const reply: RpcReply = {
    schema: rpcErrorSchema,
    value: { ErrorString: errorMessage(err) },
    afterSent: () => hooks.onInitFailure(error),
  };
  return reply;
}

/** A reply of Go type RpcError (InitPlugin, GarbageCollect) carries ErrorString only on failure. */
export function rpcErrorOutcome(reply: RpcReply): string {
  return (reply.value as { ErrorString?: string }).ErrorString === undefined ? 'ok' : 'error';
}
