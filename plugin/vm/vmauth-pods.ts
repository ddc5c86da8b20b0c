// Which pods run vmauth: the one answer the step plugin (read evidence) and the vmauthReloaded gate share. For an
// operator-managed vmauth they are the pods of the VMAuths that serve the VMUser (named, or those in the VMUser's
// namespace whose selectAllByDefault / userSelector selects it), found by the operator's selector labels; a
// helm-managed vmauth names its pods by a label selector.

import { type KubeObjects, namespacedName } from '../kube/objects.ts';
import { equalitySelector, type LabelSelector, matchesLabelSelector } from '../kube/selectors.ts';
import { describeBalancer, type ReadBalancerConfig, ReadRoutingError } from './read-backends.ts';
import type { VmauthPods } from './vmauth-reload.ts';
import { vmApiVersion } from './vmcluster.ts';

/** The operator's selector labels of a VMAuth's pods (operator api/v1beta1 VMAuth.SelectorLabels). */
function vmauthPodLabels(name: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'vmauth',
    'app.kubernetes.io/instance': name,
    'app.kubernetes.io/component': 'monitoring',
    'managed-by': 'vm-operator',
  };
}

/**
 * The pods of VMAuth `name` as the operator runs them (port `http`). The config-reloader's content hash is not
 * used by default: checking it means reading Secret `vmauth-config-<name>`, which holds the credentials of every
 * VMUser, and the reload stamps prove a load on their own (vmauth-reload.ts). The gate adds it when configured.
 */
export function operatorVmauthPods(namespace: string, name: string): VmauthPods {
  return { namespace, labelSelector: equalitySelector(vmauthPodLabels(name)), port: 'http' };
}

/**
 * The VMAuths in the VMUser's namespace that serve it: `named` when given (each must exist), else those whose
 * `selectAllByDefault` or `userSelector` selects it. Cross-namespace selection (`userNamespaceSelector`) is not
 * followed: name the VMAuths in that case. Sorted by name.
 */
export async function vmauthsServingUser(
  kube: KubeObjects,
  namespace: string,
  vmuser: string,
  named?: readonly string[],
): Promise<string[]> {
  const vmauths = await kube.list(vmApiVersion, 'VMAuth', namespace);
  if (named !== undefined) {
    const missing = named.filter((name) => !vmauths.some((auth) => auth.metadata.name === name));
    if (missing.length > 0) {
      throw new ReadRoutingError(
        `VMAuth ${missing.map((name) => namespacedName({ namespace, name })).join(', ')} does not exist`,
      );
    }
    return [...named].sort();
  }
  const user = await kube.get({ apiVersion: vmApiVersion, kind: 'VMUser', namespace, name: vmuser });
  const chosen = vmauths
    .filter((auth) => {
      const selector = auth.spec?.userSelector;
      if (typeof selector === 'object' && selector !== null) {
        return matchesLabelSelector(selector as LabelSelector, user.metadata.labels);
      }
      return auth.spec?.selectAllByDefault === true;
    })
    .map((auth) => auth.metadata.name ?? '')
    .sort();
  if (chosen.length === 0) {
    throw new ReadRoutingError(
      `no VMAuth in namespace ${namespace} selects VMUser ${vmuser} (selectAllByDefault or userSelector); name the VMAuths that serve it`,
    );
  }
  return chosen;
}

/** The vmauth pods serving a read balancer: those its config names, else those of the VMAuths serving the VMUser. */
export async function vmauthPodsOfBalancer(
  kube: KubeObjects,
  config: ReadBalancerConfig,
): Promise<VmauthPods[]> {
  if (config.pods !== undefined && config.pods.length > 0) return config.pods;
  const ref = config.ref;
  if (ref.kind !== 'VMUser') {
    throw new ReadRoutingError(
      `${describeBalancer(ref)}: the spec document must say which pods run vmauth (vmauth.pods)`,
    );
  }
  const names = await vmauthsServingUser(kube, ref.namespace, ref.name, ref.vmauths);
  return names.map((name) => operatorVmauthPods(ref.namespace, name));
}
