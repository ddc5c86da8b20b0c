// Argo CD's HTTP API as the UI calls it (argo-cd v3.2.11 ui/src/app/shared/services/applications-service.ts):
// session login, the Application, its resource tree (per-resource health) and resource actions (v2 endpoint,
// the one the UI's action menu posts to). Answers are checked with zod schemas.

import { z } from 'zod';

const healthSchema = z.object({ status: z.string().optional(), message: z.string().optional() }).optional();

const applicationSchema = z.object({
  metadata: z.object({ name: z.string(), resourceVersion: z.string().optional() }),
  status: z
    .object({
      sync: z.object({ status: z.string().optional(), revision: z.string().optional() }).optional(),
      health: healthSchema,
      history: z.array(z.object({ id: z.number(), revision: z.string().optional() })).optional(),
      operationState: z
        .object({
          phase: z.string().optional(),
          message: z.string().optional(),
          operation: z
            .object({
              initiatedBy: z.object({ automated: z.boolean().optional(), username: z.string().optional() }),
            })
            .partial()
            .optional(),
          syncResult: z.object({ revision: z.string().optional() }).optional(),
        })
        .optional(),
      resources: z
        .array(
          z.object({
            group: z.string().optional(),
            kind: z.string(),
            name: z.string(),
            namespace: z.string().optional(),
            status: z.string().optional(),
          }),
        )
        .optional(),
    })
    .optional(),
});
export type Application = z.infer<typeof applicationSchema>;

const treeSchema = z.object({
  nodes: z
    .array(
      z.object({
        group: z.string().optional(),
        version: z.string().optional(),
        kind: z.string(),
        name: z.string(),
        namespace: z.string().optional(),
        health: healthSchema,
      }),
    )
    .optional(),
});
export type ResourceNode = NonNullable<z.infer<typeof treeSchema>['nodes']>[number];

export interface ResourceRef {
  group: string;
  version: string;
  kind: string;
  namespace: string;
  name: string;
}

export class ArgoCdApi {
  readonly url: string;
  private token = '';

  constructor(url: string) {
    this.url = url;
  }

  async login(username: string, password: string): Promise<void> {
    const body = await this.call('POST', '/api/v1/session', { username, password });
    this.token = z.object({ token: z.string() }).parse(body).token;
  }

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const response = await fetch(`${this.url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (!response.ok)
      throw new Error(`Argo CD ${method} ${path}: HTTP ${response.status}: ${text.slice(0, 500)}`);
    return text ? JSON.parse(text) : {};
  }

  /** The Application; `refresh` asks Argo CD to compare with Git now (as the UI's Refresh button). */
  async application(name: string, refresh?: 'normal' | 'hard'): Promise<Application> {
    const query = refresh ? `?refresh=${refresh}` : '';
    return applicationSchema.parse(await this.call('GET', `/api/v1/applications/${name}${query}`));
  }

  async resourceTree(name: string): Promise<ResourceNode[]> {
    return treeSchema.parse(await this.call('GET', `/api/v1/applications/${name}/resource-tree`)).nodes ?? [];
  }

  async health(name: string, kind: string, resource: string): Promise<ResourceNode['health']> {
    return (await this.resourceTree(name)).find((n) => n.kind === kind && n.name === resource)?.health;
  }

  /** A resource's Kubernetes events as Argo CD lists them (the UI's Events tab: core/v1 events by involved object). */
  async events(
    name: string,
    resource: { namespace: string; name: string; uid: string },
  ): Promise<{ reason?: string; message?: string; type?: string }[]> {
    const query = new URLSearchParams({
      resourceNamespace: resource.namespace,
      resourceName: resource.name,
      resourceUID: resource.uid,
    });
    const body = await this.call('GET', `/api/v1/applications/${name}/events?${query}`);
    return (
      z
        .object({
          items: z
            .array(
              z.object({
                reason: z.string().optional(),
                message: z.string().optional(),
                type: z.string().optional(),
              }),
            )
            .nullish(),
        })
        .parse(body).items ?? []
    );
  }

  /** The actions Argo CD offers for a resource (the UI's menu), with their enabled state. */
  async actions(name: string, ref: ResourceRef): Promise<{ name: string; disabled?: boolean }[]> {
    const query = new URLSearchParams({
      namespace: ref.namespace,
      resourceName: ref.name,
      version: ref.version,
      kind: ref.kind,
      group: ref.group,
    });
    const body = await this.call('GET', `/api/v1/applications/${name}/resource/actions?${query}`);
    return (
      z
        .object({
          actions: z.array(z.object({ name: z.string(), disabled: z.boolean().optional() })).optional(),
        })
        .parse(body).actions ?? []
    );
  }

  /** Runs a resource action exactly as the UI's action menu does. */
  async runAction(name: string, ref: ResourceRef, action: string): Promise<void> {
    await this.call('POST', `/api/v1/applications/${name}/resource/actions/v2`, {
      name,
      namespace: ref.namespace,
      resourceName: ref.name,
      version: ref.version,
      kind: ref.kind,
      group: ref.group,
      resourceActionParameters: [],
      action,
    });
  }
}
