// Typed errors of the condition language. Every failure is one of these, never a silent `false`/`true`:
// the provider turns them into an Error measurement that says what went wrong and where.

import { CodedError } from '../../goplugin/failure-codes.ts';

/** syntax: not expr-lang; unsupported: expr-lang, but outside our subset; name: an unknown identifier;
 *  type: operands that can never fit (found before evaluation); runtime: a failure while evaluating. */
export type ExprErrorKind = 'syntax' | 'unsupported' | 'name' | 'type' | 'runtime';

export class ExprError extends CodedError {
  readonly kind: ExprErrorKind;
  /** 1-based column in the expression, when known. */
  readonly column: number | undefined;
  readonly detail: string;

  constructor(kind: ExprErrorKind, detail: string, column?: number) {
    super('ConditionInvalid', column === undefined ? detail : `${detail} (column ${column})`);
    this.name = 'ExprError';
    this.kind = kind;
    this.column = column;
    this.detail = detail;
  }
}

export function syntaxError(detail: string, position?: number): ExprError {
  return new ExprError('syntax', detail, position === undefined ? undefined : position + 1);
}

export function unsupported(what: string, position?: number): ExprError {
  return new ExprError(
    'unsupported',
    `${what} is not supported in vmzones conditions (a subset of expr-lang)`,
    position === undefined ? undefined : position + 1,
  );
}

export function runtimeError(detail: string, position?: number): ExprError {
  return new ExprError('runtime', detail, position === undefined ? undefined : position + 1);
}

export function typeError(detail: string, position?: number): ExprError {
  return new ExprError('type', detail, position === undefined ? undefined : position + 1);
}

export function nameError(name: string, position?: number): ExprError {
  return new ExprError('name', `unknown name ${name}`, position === undefined ? undefined : position + 1);
}
