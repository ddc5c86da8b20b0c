// The project's ClusterAnalysisTemplates (analysis-templates/) as the sandbox needs them: its VMClusters' vmselect
// Pods are played by one single-node victoria-metrics process each (docs/testing.md, "The VM data plane"), which
// answers queries at /prometheus/api/v1/query, not at vmselect's /select/<tenant>/prometheus/api/v1/query. So the
// query gate (zoneAnswers) is told so through the templates' own argument `vmselectPathPrefix`, whose default the
// sandbox sets; everything else is applied as shipped. VMSingle and VLCluster zones are asked at their own paths.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Kubectl } from './kubectl.ts';
import { repoRoot } from './sandbox.ts';

/** Where the sandbox's VMCluster "vmselect" Pods (single-node processes) answer queries. */
export const sandboxVmselectPathPrefix = '/prometheus';

/** A template's text with the default of its `vmselectPathPrefix` argument set for the sandbox. */
export function sandboxTemplateText(text: string): string {
  return text.replace(
    /(- name: vmselectPathPrefix\n(\s+)value: )""/g,
    (_match, head: string) => `${head}${sandboxVmselectPathPrefix}`,
  );
}

/** Applies every template of analysis-templates/ with the sandbox's default vmselectPathPrefix. */
export async function applyAnalysisTemplates(kubectl: Kubectl): Promise<void> {
  const dir = join(repoRoot, 'analysis-templates');
  const objects = readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .flatMap((file) =>
      parseAllDocuments(sandboxTemplateText(readFileSync(join(dir, file), 'utf8'))).map(
        (doc) => doc.toJS() as object,
      ),
    );
  await kubectl.apply(objects);
}
