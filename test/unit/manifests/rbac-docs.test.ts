// The RBAC the docs describe is the RBAC the manifests grant: docs/deploy.md's rule table against the namespaced
// Role (manifests/kustomize/namespaced/rbac-namespaced.yaml) and the cluster-wide ClusterRoles
// (manifests/kustomize/cluster-wide/rbac.yaml), and docs/step-plugin.md's summary of both. A rule added to a
// manifest without its doc line (or the other way round) fails here.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

/** Every (group, resource) → sorted verbs that the named roles of a manifest grant, without resourceNames rules. */
function grants(path: string, kind: 'Role' | 'ClusterRole', name: string): Map<string, string> {
  const out = new Map<string, Set<string>>();
  for (const doc of parseAllDocuments(read(path))) {
    const object = doc.toJS() as {
      kind?: string;
      metadata?: { name?: string };
      rules?: (Rule & { resourceNames?: string[] })[];
    };
    if (object.kind !== kind || object.metadata?.name !== name) continue;
    for (const rule of object.rules ?? []) {
      if (rule.resourceNames !== undefined) continue;
      for (const group of rule.apiGroups)
        for (const resource of rule.resources) {
          const key = `${group}/${resource}`;
          out.set(key, new Set([...(out.get(key) ?? []), ...rule.verbs]));
        }
    }
  }
  return new Map([...out].map(([key, verbs]) => [key, [...verbs].sort().join(',')]));
}

/** docs/deploy.md's table under "## RBAC": `| group | resources | verbs | for |`. */
function deployTable(): Map<string, string> {
  const text = read('docs/deploy.md');
  const section = text.slice(text.indexOf('## RBAC'));
  const out = new Map<string, string>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 5 || !cells[1]?.startsWith('`')) continue;
    const quoted = (cells[1] ?? '').match(/`([^`]*)`/)?.[1] ?? '';
    const group = quoted === '""' ? '' : quoted; // the core group, written `""`
    const verbs = (cells[3] ?? '')
      .split(',')
      .map((v) => v.trim())
      .sort()
      .join(',');
    for (const resource of (cells[2] ?? '').matchAll(/`([^`]+)`/g)) out.set(`${group}/${resource[1]}`, verbs);
    if (out.size > 0 && line.trim() === '') break;
  }
  return out;
}

const sorted = (m: Map<string, string>) => [...m].sort(([a], [b]) => a.localeCompare(b));

test('docs/deploy.md lists exactly the rules of the namespaced Role', () => {
  assert.deepEqual(
    sorted(deployTable()),
    sorted(grants('manifests/kustomize/namespaced/rbac-namespaced.yaml', 'Role', 'vmzones')),
  );
});

test('the cluster-wide ClusterRoles grant what the docs say: vmzones-step all rows but vmagents, vmzones-gates the gets and lists', () => {
  const rows = deployTable();
  const step = grants('manifests/kustomize/cluster-wide/rbac.yaml', 'ClusterRole', 'vmzones-step');
  const withoutAgents = new Map([...rows].filter(([key]) => key !== 'operator.victoriametrics.com/vmagents'));
  assert.deepEqual(sorted(step), sorted(withoutAgents));
  const gates = grants('manifests/kustomize/cluster-wide/rbac.yaml', 'ClusterRole', 'vmzones-gates');
  assert.deepEqual(sorted(gates), [
    ['/pods', 'list'],
    ['apps/statefulsets', 'get'],
    ['operator.victoriametrics.com/vmagents', 'get'],
    ['operator.victoriametrics.com/vmauths', 'list'],
    ['operator.victoriametrics.com/vmclusters', 'get'],
    ['operator.victoriametrics.com/vmusers', 'get'],
  ]);
});

test('docs/step-plugin.md names each rule of the namespaced Role with its verbs', () => {
  const text = read('docs/step-plugin.md');
  const section = text.slice(text.indexOf('## RBAC'), text.indexOf('\n## ', text.indexOf('## RBAC') + 1));
  const names: Record<string, string> = {
    vmclusters: 'VMCluster',
    vmsingles: 'VMSingle',
    vlclusters: 'VLCluster',
    vmusers: 'VMUser',
    vmagents: 'VMAgent',
    vmauths: 'VMAuth',
    pods: 'Pod',
    statefulsets: 'StatefulSet',
    events: 'Event',
  };
  const flat = section.replace(/\s+/g, ' ');
  for (const [key, verbs] of grants(
    'manifests/kustomize/namespaced/rbac-namespaced.yaml',
    'Role',
    'vmzones',
  )) {
    const resource = key.slice(key.indexOf('/') + 1);
    const name = names[resource];
    assert.ok(name !== undefined, `a rule on ${key} the doc test does not know: name it here and in the doc`);
    const said = flat.match(new RegExp(`${name}(?: and \\w+)? ([a-z/]+)`))?.[1] ?? '';
    assert.equal(said.split('/').sort().join(','), verbs, `docs/step-plugin.md on ${name}: "${said}"`);
  }
});
