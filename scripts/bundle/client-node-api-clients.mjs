// Bundled in place of @kubernetes/client-node's generated API clients (dist/gen/index.js) where its KubeConfig
// imports them (scripts/build.ts): vmzones never calls KubeConfig.makeApiClient, the one user of these two names, and
// evaluating the ~750 generated model classes cost every plugin process megabytes (docs/deploy.md, "Memory").

const notBundled = () => {
  throw new Error('vmzones bundles no generated Kubernetes API clients (KubeConfig.makeApiClient)');
};

export class ServerConfiguration {
  constructor() {
    notBundled();
  }
}

export const createConfiguration = notBundled;
