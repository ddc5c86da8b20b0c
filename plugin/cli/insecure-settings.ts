// `vmzones lint`: settings in the files that turn TLS verification off — a vmzones/gates metric with
// `pods.tls.insecureSkipVerify: true` in an AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun, and a cluster
// Secret (docs/multicluster.md) with `tlsClientConfig.insecure: true`. Warnings: allowed, but said before they ship.

import type { Document } from 'yaml';
import { insecureSkipVerifyWarning } from '../gates/config.ts';
import { clusterSecretLabel, insecureClusterRisk } from '../kube/cluster-secret-text.ts';
import { gatesPluginName } from '../rollouts/plugin-names.ts';
import { isJsonObject, type JsonObject } from '../zones/state/merge-patch.ts';

const analysisKinds = new Set(['AnalysisTemplate', 'ClusterAnalysisTemplate', 'AnalysisRun']);

function field(object: unknown, ...path: string[]): unknown {
  let at = object;
  for (const key of path) at = isJsonObject(at) ? at[key] : undefined;
  return at;
}

function isTrue(value: unknown): boolean {
  return value === true || value === 'true';
}

function describe(object: JsonObject): string {
  const namespace = field(object, 'metadata', 'namespace');
  const name = field(object, 'metadata', 'name');
  return `${String(object.kind)} ${typeof namespace === 'string' ? `${namespace}/` : ''}${typeof name === 'string' ? name : '(unnamed)'}`;
}

/** The cluster Secret's ClusterConfig (stringData or base64 data), if it can be read; lint does not judge it further. */
function clusterConfig(secret: JsonObject): unknown {
  const text = field(secret, 'stringData', 'config');
  const encoded = field(secret, 'data', 'config');
  const raw =
    typeof text === 'string'
      ? text
      : typeof encoded === 'string'
        ? Buffer.from(encoded, 'base64').toString('utf8')
        : undefined;
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

function warningsOf(object: JsonObject): string[] {
  if (analysisKinds.has(String(object.kind))) {
    const metrics = field(object, 'spec', 'metrics');
    return (Array.isArray(metrics) ? metrics : [])
      .filter((metric) =>
        isTrue(field(metric, 'provider', 'plugin', gatesPluginName, 'pods', 'tls', 'insecureSkipVerify')),
      )
      .map(
        (metric) =>
          `${describe(object)}, metric ${String(field(metric, 'name') ?? '?')}: ${insecureSkipVerifyWarning}`,
      );
  }
  if (object.kind === 'Secret' && field(object, 'metadata', 'labels', clusterSecretLabel) === 'cluster') {
    return isTrue(field(clusterConfig(object), 'tlsClientConfig', 'insecure'))
      ? [`${describe(object)}: ${insecureClusterRisk}`]
      : [];
  }
  return [];
}

/** Every setting in the documents that turns TLS verification off, one line each. */
export function insecureSettings(documents: readonly Document[]): string[] {
  return documents.flatMap((document) => {
    if (document.errors.length > 0) return [];
    const value: unknown = document.toJS({ maxAliasCount: 100 });
    const items =
      isJsonObject(value) && value.kind === 'List' && Array.isArray(value.items) ? value.items : [value];
    return items.filter(isJsonObject).flatMap(warningsOf);
  });
}
