// When the operator's `updateStatus: failed` is final. The operator writes `failed` for any reconcile error it does
// not class as retryable (internal/controller/operator/controllers.go, v0.74.1) and requeues the object; the next
// pass writes `expanding` and, usually seconds later, `operational`. Such errors include races with
// kube-controller-manager on the storage StatefulSet's status ("cannot update statefulset … currentReplicas cannot
// be greater than status.replicas"), seen on the sandbox under load. A spec the operator cannot parse is written
// `failed` too, and no retry changes that. So: `failed` is final at once for a parsing error, and otherwise only once
// the operator has kept saying it for a grace period that vmzones measured itself (the status carries no time).

/** How long `failed` (other than a parsing error) must persist before vmzones takes it as final. */
export const operatorFailedGraceMs = 60_000;

/** The prefix of the reason the operator writes for a spec it could not parse (parsingError.Error()). */
const parsingReasonPrefix = 'parsing object error';

export interface OperatorFailureVerdict {
  /** The failure is final: fail now. */
  final: boolean;
  /** Since when vmzones has seen `failed` (to carry into the next reading while not final). */
  failingSince: number;
  /** Why it is or is not final, in words, for messages. */
  why: string;
}

/**
 * Decides on one reading of `failed`. `failingSince` is when an earlier reading first saw it (undefined: this is the
 * first); `now` is this reading's time (ms since the epoch).
 */
export function operatorFailure(
  reason: string | undefined,
  failingSince: number | undefined,
  now: number,
): OperatorFailureVerdict {
  const since = failingSince !== undefined && failingSince <= now ? failingSince : now;
  if (reason?.startsWith(parsingReasonPrefix) === true) {
    return { final: true, failingSince: since, why: 'the operator cannot parse the spec' };
  }
  const seconds = Math.round(operatorFailedGraceMs / 1000);
  if (now - since >= operatorFailedGraceMs) {
    return {
      final: true,
      failingSince: since,
      why: `the operator has reported failed for ${Math.round((now - since) / 1000)}s (more than ${seconds}s)`,
    };
  }
  return {
    final: false,
    failingSince: since,
    why: `the operator retries a failed reconcile; vmzones waits up to ${seconds}s for it to recover before failing`,
  };
}
