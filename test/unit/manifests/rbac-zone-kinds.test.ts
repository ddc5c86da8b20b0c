// manifests/kustomize/cluster-wide/rbac-zone-kinds.yaml must grant each zone kind other than VMCluster what rbac.yaml grants on
// vmclusters beyond the reconciler's list/watch (which rbac.yaml already grants on every kind), and on each writer
// kind other than VMAgent what the gates get on vmagents, derived from the kinds the plugin knows
// (plugin/vm/zone-kinds.ts, writer-kinds.ts) — so a new kind cannot ship without its RBAC.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { writerKinds } from '../../../plugin/vm/writer-kinds.ts';
import { defaultZoneKind, zoneKinds } from '../../../plugin/vm/zone-kinds.ts';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

function clusterRoles(file: string): Map<string, Rule[]> {
  const text = readFileSync(
    new URL(`../../../manifests/kustomize/cluster-wide/${file}`, import.meta.url),
    'utf8',
  );
  const roles = new Map<string, Rule[]>();
  for (const doc of parseAllDocuments(text)) {
    const object = doc.toJS() as { kind?: string; metadata?: { name?: string }; rules?: Rule[] };
    if (object.kind === 'ClusterRole') roles.set(object.metadata?.name ?? '', object.rules ?? []);
  }
  return roles;
}

/** The verbs `rules` grant on `resource` of the operator's API group. */
function verbsOn(rules: readonly Rule[], resource: string): string[] {
  const verbs = rules
    .filter((r) => r.apiGroups.includes('operator.victoriametrics.com') && r.resources.includes(resource))
    .flatMap((r) => r.verbs);
  return [...new Set(verbs)].sort();
}

const base = clusterRoles('rbac.yaml');
const extra = clusterRoles('rbac-zone-kinds.yaml');
const baseRules = [...(base.get('vmzones-step') ?? []), ...(base.get('vmzones-gates') ?? [])];
const extraRules = extra.get('vmzones-zone-kinds') ?? [];

test('every other zone kind gets, between the two files, exactly the verbs a VMCluster zone gets', () => {
  const vmcluster = verbsOn(baseRules, defaultZoneKind.resource);
  assert.deepEqual(vmcluster, ['get', 'list', 'patch', 'watch']);
  const others = Object.values(zoneKinds).filter((k) => k !== defaultZoneKind);
  assert.ok(others.length >= 2, 'VMSingle and VLCluster');
  for (const kind of others) {
    const granted = [
      ...new Set([...verbsOn(baseRules, kind.resource), ...verbsOn(extraRules, kind.resource)]),
    ];
    assert.deepEqual(granted.sort(), vmcluster, kind.kind);
    assert.deepEqual(
      verbsOn(baseRules, kind.resource),
      ['list', 'watch'],
      `${kind.kind}: rbac.yaml lists only`,
    );
  }
});

test('every other writer kind gets what the gates get on vmagents, and nothing is granted on VMCluster twice', () => {
  const vmagent = verbsOn(baseRules, writerKinds.VMAgent.resource);
  assert.deepEqual(vmagent, ['get']);
  for (const writer of Object.values(writerKinds).filter((w) => w !== writerKinds.VMAgent)) {
    assert.deepEqual(verbsOn(extraRules, writer.resource), vmagent, writer.kind);
  }
  assert.deepEqual(verbsOn(extraRules, defaultZoneKind.resource), []);
  assert.deepEqual(verbsOn(extraRules, writerKinds.VMAgent.resource), []);
});
