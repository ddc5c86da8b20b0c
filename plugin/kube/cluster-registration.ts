// A registered cluster as the plugin holds it (plugin/kube/cluster-registry.ts reads it from its Secret), and the
// schema of the Secret's `config`. In a module of its own because plugin/kube/objects.ts names the registration a
// client was built from, and cluster-registry.ts builds clients: neither imports the other for this type.

import { z } from 'zod';

const base64 = z
  .string()
  .min(1)
  .regex(/^[A-Za-z0-9+/=\s]+$/, 'must be base64 (PEM data, base64-encoded as in a kubeconfig)');

// Argo CD's ClusterConfig (JSON in data.config). Fields vmzones does not support are refused by name, not ignored:
// a Secret that relies on them would otherwise connect without the credential its admin meant.
export const clusterConfigSchema = z
  .object({
    bearerToken: z.string().min(1).optional(),
    username: z.unknown().optional(),
    password: z.unknown().optional(),
    execProviderConfig: z.unknown().optional(),
    awsAuthConfig: z.unknown().optional(),
    tlsClientConfig: z
      .object({
        insecure: z.boolean().default(false),
        serverName: z.string().min(1).optional(),
        caData: base64.optional(),
        certData: base64.optional(),
        keyData: base64.optional(),
      })
      .default({ insecure: false }),
  })
  .superRefine((config, ctx) => {
    for (const key of ['execProviderConfig', 'awsAuthConfig', 'username', 'password'] as const) {
      if (config[key] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'is not supported by vmzones (use bearerToken or tlsClientConfig.certData/keyData)',
        });
      }
    }
    const tls = config.tlsClientConfig;
    const cert = tls.certData !== undefined || tls.keyData !== undefined;
    if (cert && (tls.certData === undefined || tls.keyData === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['tlsClientConfig'],
        message: 'certData and keyData go together',
      });
    }
    if ((config.bearerToken !== undefined) === cert) {
      ctx.addIssue({
        code: 'custom',
        message: 'exactly one of bearerToken or tlsClientConfig.certData/keyData must be set',
      });
    }
  });

export interface ClusterRegistration {
  /** The name zones use (`zones.<zone>.cluster`). */
  name: string;
  /** `namespace/name` of the Secret, for messages. */
  secret: string;
  resourceVersion: string;
  server: string;
  /** Argo CD's `namespaces`: when set, the only namespaces vmzones may act in on this cluster. */
  namespaces: readonly string[] | undefined;
  /** How vmagent pods there are scraped: through the API server's pod proxy, or at their pod IPs. */
  podAccess: 'proxy' | 'direct';
  config: z.infer<typeof clusterConfigSchema>;
}
