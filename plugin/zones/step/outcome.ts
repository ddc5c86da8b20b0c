// Step results as the actions return them, and the failures that end a step (Failed) as opposed to the faults
// that are worth retrying (thrown, so that the controller records Error and retries after 30 s).

import { CodedError, type FailureCode } from '../../goplugin/failure-codes.ts';
import { NamespaceAllowanceError } from '../../kube/allowed-namespaces.ts';
import { ClusterRegistryError } from '../../kube/cluster-registry.ts';
import { KubeError } from '../../kube/objects.ts';
import { LabelSelectorError } from '../../kube/selectors.ts';
import type { StepResult } from '../../rollouts/types.ts';
import { PodSelectionError } from '../../vm/pods.ts';
import { ReadRoutingError } from '../../vm/read-backends.ts';
import { SecretRefError } from '../../vm/scrape-credentials.ts';
import { SpecError } from '../spec.ts';
import { StateError } from '../state/zone-annotations.ts';

/** How long a waiting step sleeps; the controller turns anything at or below 10 s into 30 s. */
export const waitRequeueMs = 15_000;
const minimumRequeueMs = 11_000;

export type StatusDocument = Record<string, unknown>;

/** A real failure of the step: the rollout aborts with this message; `code` goes into the step status. */
export class StepFailure extends CodedError {
  constructor(code: FailureCode, message: string) {
    super(code, message);
    this.name = 'StepFailure';
  }
}

export function running(message: string, status: StatusDocument, requeueAfterMs = waitRequeueMs): StepResult {
  return { phase: 'Running', message, status, requeueAfterMs: Math.max(requeueAfterMs, minimumRequeueMs) };
}

export function successful(message: string, status: StatusDocument): StepResult {
  return { phase: 'Successful', message, status };
}

/** A failed step's status carries the failure's code (`code`, docs/step-plugin.md "Failure codes"), a field users
 *  can alert on, beside its words. */
export function failed(message: string, status: StatusDocument, code: FailureCode): StepResult {
  return { phase: 'Failed', message, status: { ...status, code } };
}

/** Errors that retrying will not fix: bad documents, refused edits, malformed state, missing objects we need,
 *  and API answers that say "never" (403 forbidden, 400/422 invalid or refused by admission) — their message
 *  names the verb, the resource and the namespace. */
export function isFinal(err: unknown): err is Error {
  return (
    err instanceof StepFailure ||
    err instanceof NamespaceAllowanceError ||
    err instanceof ClusterRegistryError ||
    (err instanceof KubeError && (err.kind === 'forbidden' || err.kind === 'invalid')) ||
    err instanceof SpecError ||
    err instanceof ReadRoutingError ||
    err instanceof StateError ||
    err instanceof LabelSelectorError ||
    err instanceof PodSelectionError ||
    err instanceof SecretRefError
  );
}

/** Runs `read`; a 404 becomes a StepFailure with `message`, anything else propagates. */
export async function required<T>(read: Promise<T>, message: string): Promise<T> {
  try {
    return await read;
  } catch (err) {
    if (err instanceof KubeError && err.kind === 'notFound') throw new StepFailure('ObjectMissing', message);
    throw err;
  }
}

/** Faults that a retry a moment later may not meet: 409, 429, 5xx, timeouts, resets (KubeError `unavailable`). */
export function isTransient(err: unknown): boolean {
  return err instanceof KubeError && (err.kind === 'conflict' || err.kind === 'unavailable');
}

/** Backoff between attempts: 0.2 s doubling, six attempts, about 6 s in all (plus each call's own timeout). */
const retryDelaysMs = [200, 400, 800, 1600, 3200];

/** Retries 409s, 429s, 5xx and timeouts here, each attempt re-reading what it needs: Abort and Terminate are
 *  never retried by the controller, and a failed Run waits about 30 s for its retry. Every action is idempotent. */
export async function withTransientRetries<T>(
  sleep: (ms: number) => Promise<void>,
  work: () => Promise<T>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      const delay = retryDelaysMs[attempt];
      if (!isTransient(err) || delay === undefined) throw err;
      await sleep(delay);
    }
  }
}
