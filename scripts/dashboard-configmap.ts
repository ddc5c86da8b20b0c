// Writes manifests/observe/dashboard-configmap.yaml from manifests/observe/dashboard.json: the same dashboard as a
// ConfigMap with the label grafana_dashboard: "1", which Grafana's dashboard sidecar (and the grafana-operator's
// GrafanaDashboard, manifests/observe/grafanadashboard.yaml) loads. The JSON is the one source; edit it, then run
// `node scripts/dashboard-configmap.ts`. test/unit/manifests/dashboard.test.ts fails while the two differ.

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const observe = join(dirname(fileURLToPath(import.meta.url)), '..', 'manifests', 'observe');
export const dashboardPath = join(observe, 'dashboard.json');
export const configMapPath = join(observe, 'dashboard-configmap.yaml');
/** The ConfigMap key, a file name as the sidecar writes it. */
export const dashboardKey = 'vmzones-walk.json';

/** The ConfigMap's text for the dashboard's JSON text (a block scalar keeps the JSON byte for byte). */
export function configMapText(json: string): string {
  const body = json
    .trimEnd()
    .split('\n')
    .map((line) => (line === '' ? '' : `    ${line}`))
    .join('\n');
  return `# Generated from dashboard.json by scripts/dashboard-configmap.ts: edit the JSON, then run the script.
# The vmzones walk dashboard (docs/observe.md, "Grafana dashboard") for Grafana's dashboard sidecar, which loads
# ConfigMaps labelled grafana_dashboard: "1" (apply it in the namespace the sidecar watches), or for the
# grafana-operator through manifests/observe/grafanadashboard.yaml.
apiVersion: v1
kind: ConfigMap
metadata:
  name: vmzones-dashboard
  labels:
    grafana_dashboard: "1"
data:
  ${dashboardKey}: |-
${body}
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(configMapPath, configMapText(readFileSync(dashboardPath, 'utf8')));
  console.log(`wrote ${configMapPath}`);
}
