// successCondition / failureCondition as Argo Rollouts judges them for its own providers
// (utils/evaluate/evaluate.go EvaluateResult), which the controller leaves to plugins:
// - neither set → Successful; only success set → Failed when it is false; only failure set → Successful
//   when it is false; both set and both false → Inconclusive; failure wins when both are true;
// - a condition that does not compile, fails, or yields a non-bool → Error, saying which condition and why.

import { ExprError } from './errors.ts';
import { evaluateCondition } from './evaluate.ts';

export interface MetricConditions {
  readonly successCondition?: string;
  readonly failureCondition?: string;
}

export type ConditionPhase = 'Successful' | 'Failed' | 'Inconclusive' | 'Error';

export interface ConditionOutcome {
  readonly phase: ConditionPhase;
  /** Set for Error: what failed, in the words Argo Rollouts uses. */
  readonly message?: string;
  readonly error?: ExprError;
}

function isNilOrEmpty(result: unknown): boolean {
  return result === null || result === undefined || (Array.isArray(result) && result.length === 0);
}

function evaluateOne(
  which: 'successCondition' | 'failureCondition',
  source: string,
  result: unknown,
): boolean | ConditionOutcome {
  try {
    return evaluateCondition(source, result);
  } catch (error) {
    if (!(error instanceof ExprError)) throw error;
    const reason = isNilOrEmpty(result)
      ? 'metric result is nil or empty: no data returned from the metric provider'
      : error.message;
    return { phase: 'Error', message: `could not evaluate ${which} "${source}": ${reason}`, error };
  }
}

export function evaluateMetricConditions(result: unknown, conditions: MetricConditions): ConditionOutcome {
  const success = conditions.successCondition ?? '';
  const failure = conditions.failureCondition ?? '';
  let succeeded = false;
  let failed = false;
  if (success !== '') {
    const outcome = evaluateOne('successCondition', success, result);
    if (typeof outcome !== 'boolean') return outcome;
    succeeded = outcome;
  }
  if (failure !== '') {
    const outcome = evaluateOne('failureCondition', failure, result);
    if (typeof outcome !== 'boolean') return outcome;
    failed = outcome;
  }
  if (success === '' && failure === '') return { phase: 'Successful' };
  if (success !== '' && failure === '') failed = !succeeded;
  if (success === '' && failure !== '') succeeded = !failed;
  if (failed) return { phase: 'Failed' };
  if (!succeeded) return { phase: 'Inconclusive' };
  return { phase: 'Successful' };
}
