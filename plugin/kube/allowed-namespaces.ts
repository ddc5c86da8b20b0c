// Which namespaces a plugin may act in for a Rollout or AnalysisRun: its own, plus those a cluster admin allows
// in the plugin's registration (argo-rollouts-config, the plugin's `args`), never what a Rollout or
// AnalysisTemplate says. The plugin runs with the controller's rights, so without this a Rollout author could
// make it read a Secret of another namespace and send it to a pod of their choosing.
//
//   args: [..., /opt/vmzones/vmzones.mjs, --allowed-namespaces=monitoring,vm-shared]   (docs/deploy.md: all)
//   args: [..., --allowed-namespaces=*]        # every namespace (the cluster-wide RBAC variant)

import { CodedError, type FailureCode } from '../goplugin/failure-codes.ts';
import { dns1123Label } from './names.ts';

const allowedNamespacesFlag = '--allowed-namespaces';

/** The namespaces allowed beyond the object's own; `all` when the admin allowed every namespace. */
export type NamespaceAllowance =
  | { readonly all: true }
  | { readonly all: false; readonly extra: readonly string[] };

export class NamespaceAllowanceError extends CodedError {
  constructor(message: string, code: FailureCode = 'NamespaceNotAllowed') {
    super(code, message);
    this.name = 'NamespaceAllowanceError';
  }
}

/** Parses `--allowed-namespaces=a,b` (or `*`) from the process arguments; absent = only the object's own. */
export function parseNamespaceAllowance(args: readonly string[]): NamespaceAllowance {
  const values = args
    .filter((arg) => arg === allowedNamespacesFlag || arg.startsWith(`${allowedNamespacesFlag}=`))
    .map((arg) => {
      if (!arg.includes('=')) {
        throw new NamespaceAllowanceError(
          `${allowedNamespacesFlag} needs a value: ${allowedNamespacesFlag}=ns1,ns2 or =*`,
          'FlagInvalid',
        );
      }
      return arg.slice(arg.indexOf('=') + 1);
    });
  const names = values.flatMap((value) => value.split(',').map((name) => name.trim())).filter(Boolean);
  if (names.includes('*')) return { all: true };
  const bad = names.filter((name) => !dns1123Label.test(name) || name.length > 63);
  if (bad.length > 0) {
    throw new NamespaceAllowanceError(
      `${allowedNamespacesFlag}: ${bad.map((name) => JSON.stringify(name)).join(', ')} is not a namespace name`,
      'FlagInvalid',
    );
  }
  return { all: false, extra: [...new Set(names)].sort() };
}

/** Whether `namespace` may be used for an object in `own`. */
export function namespaceAllowed(allowance: NamespaceAllowance, own: string, namespace: string): boolean {
  return namespace === own || allowance.all || allowance.extra.includes(namespace);
}

/**
 * Throws a NamespaceAllowanceError naming both namespaces when `namespace` is not allowed for an object (`owner`,
 * e.g. "AnalysisRun demo/run-1") living in `own`.
 */
export function requireNamespaceAllowed(
  allowance: NamespaceAllowance,
  owner: { readonly describe: string; readonly namespace: string },
  namespace: string,
  what: string,
): void {
  if (namespaceAllowed(allowance, owner.namespace, namespace)) return;
  throw new NamespaceAllowanceError(
    `${what} is in namespace ${namespace}, outside namespace ${owner.namespace} of ${owner.describe}; vmzones acts only in ` +
      `the namespace of the Rollout it serves unless its registration in argo-rollouts-config allows more (args: ${allowedNamespacesFlag}=${namespace})`,
  );
}

const watchNamespacesFlag = '--watch-namespaces';

/**
 * `--watch-namespaces=a,b`: the namespaces whose objects the plugin's background work lists, for an install with
 * namespace-scoped RBAC (a Role per namespace instead of a ClusterRole). Absent: all namespaces (one cluster-wide
 * list).
 */
export function parseWatchNamespaces(args: readonly string[]): string[] | undefined {
  const values = args
    .filter((arg) => arg.startsWith(`${watchNamespacesFlag}=`))
    .map((arg) => arg.slice(arg.indexOf('=') + 1));
  if (values.length === 0) return undefined;
  const names = [...new Set(values.flatMap((v) => v.split(',').map((n) => n.trim())).filter(Boolean))].sort();
  const bad = names.filter((name) => !dns1123Label.test(name) || name.length > 63);
  if (bad.length > 0 || names.length === 0) {
    throw new NamespaceAllowanceError(
      `${watchNamespacesFlag}: ${bad.length > 0 ? `${bad.map((n) => JSON.stringify(n)).join(', ')} is not a namespace name` : 'needs at least one namespace'}`,
      'FlagInvalid',
    );
  }
  return names;
}

/**
 * The namespaces the reconciler lists: every namespace a step may act in, so that no ending (Abort, promote --full,
 * revert, deletion) depends on a reconciler that never looks there. Without `--watch-namespaces` that is every
 * namespace (undefined); with it, those plus every namespace `--allowed-namespaces` names. `--allowed-namespaces=*`
 * with `--watch-namespaces` cannot be made consistent (a namespace-scoped list cannot cover every namespace): refused.
 */
export function reconcilerNamespaces(
  allowance: NamespaceAllowance,
  watch: readonly string[] | undefined,
): string[] | undefined {
  if (watch === undefined) return undefined;
  if (allowance.all) {
    throw new NamespaceAllowanceError(
      `${allowedNamespacesFlag}=* lets steps act in every namespace, but ${watchNamespacesFlag}=${watch.join(',')} makes ` +
        `the reconciler look only there, so an ending elsewhere would never be finished: drop ${watchNamespacesFlag}, or ` +
        `list the namespaces in ${allowedNamespacesFlag}`,
      'FlagInvalid',
    );
  }
  return [...new Set([...watch, ...allowance.extra])].sort();
}

/**
 * Throws a NamespaceAllowanceError, naming both flags, when a step would act in `namespace` although the
 * reconciler (`watched`, from reconcilerNamespaces; undefined = all) never lists it: a Rollout outside the watched
 * namespaces acting in its own.
 */
export function requireReconciled(
  watched: readonly string[] | undefined,
  namespace: string,
  what: string,
): void {
  if (watched === undefined || watched.includes(namespace)) return;
  throw new NamespaceAllowanceError(
    `${what} is in namespace ${namespace}, which the vmzones reconciler does not watch (${watchNamespacesFlag}=` +
      `${watched.join(',')} plus ${allowedNamespacesFlag}): an Abort, promote --full, revert or deletion there would ` +
      `never be finished, so vmzones does not act; add ${namespace} to ${watchNamespacesFlag} in argo-rollouts-config`,
  );
}
