// Bundled in place of @kubernetes/client-node's `azure` and `gcp` auth-providers (scripts/build.ts): kubectl removed both
// in Kubernetes 1.26 for exec plugins (kubelogin, gke-gcloud-auth-plugin), which vmzones runs. A kubeconfig that still
// names one is refused with that advice instead of connecting without its credential.

class RemovedAuthProvider {
  constructor(name, replacement) {
    this.name = name;
    this.replacement = replacement;
  }

  isAuthProvider(user) {
    return user?.authProvider?.name === this.name;
  }

  async applyAuthentication() {
    throw new Error(
      `auth-provider ${this.name} was removed from kubectl in Kubernetes 1.26: use the ${this.replacement} exec plugin`,
    );
  }
}

export class AzureAuth extends RemovedAuthProvider {
  constructor() {
    super('azure', 'kubelogin');
  }
}

export class GoogleCloudPlatformAuth extends RemovedAuthProvider {
  constructor() {
    super('gcp', 'gke-gcloud-auth-plugin');
  }
}
