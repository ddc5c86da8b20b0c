// Kubernetes label selectors (metav1.LabelSelector) evaluated locally, and formatted for list calls.

import { CodedError } from '../goplugin/failure-codes.ts';

export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export class LabelSelectorError extends CodedError {
  constructor(message: string) {
    super('SpecInvalid', message);
    this.name = 'LabelSelectorError';
  }
}

/**
 * Whether `labels` satisfy `selector`, with the API server's semantics: an empty selector matches everything;
 * an unknown operator is an error rather than a silent match.
 */
export function matchesLabelSelector(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const have = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (have[key] !== value) return false;
  }
  for (const requirement of selector.matchExpressions ?? []) {
    const present = Object.hasOwn(have, requirement.key);
    const values = requirement.values ?? [];
    switch (requirement.operator) {
      case 'In':
        if (!present || !values.includes(have[requirement.key] as string)) return false;
        break;
      case 'NotIn':
        if (present && values.includes(have[requirement.key] as string)) return false;
        break;
      case 'Exists':
        if (!present) return false;
        break;
      case 'DoesNotExist':
        if (present) return false;
        break;
      default:
        throw new LabelSelectorError(
          `label selector operator ${JSON.stringify(requirement.operator)} is not In, NotIn, Exists or DoesNotExist`,
        );
    }
  }
  return true;
}

/** `a=b,c=d` for the `labelSelector` query parameter (equality only; keys sorted for stable output). */
export function equalitySelector(labels: Readonly<Record<string, string>>): string {
  return Object.keys(labels)
    .sort()
    .map((key) => `${key}=${labels[key]}`)
    .join(',');
}
