// What marks an Argo CD cluster Secret (docs/multicluster.md), and what its `tlsClientConfig.insecure: true` risks.
// Apart from plugin/kube/cluster-registry.ts so that `vmzones lint` can name both without loading the Kubernetes
// client (which does not load under the Node 20 the CLI also runs on).

export const clusterSecretLabel = 'argocd.argoproj.io/secret-type';

/** For logs, `vmzones status` and `vmzones lint`. */
export const insecureClusterRisk =
  "tlsClientConfig.insecure is true, so the API server's certificate is not verified: whoever is on the path can " +
  'read the credential and answer in its place';
