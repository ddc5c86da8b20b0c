// The queries of the Grafana dashboard (manifests/observe/dashboard.json): every panel's targets, and the metric names
// a PromQL/MetricsQL expression selects. Shared by the unit test that checks the names against the plugins'
// registries (test/unit/manifests/dashboard.test.ts) and the end-to-end check against a real victoria-metrics
// (dashboard-scrape.ts).

import { z } from 'zod';

const targetSchema = z.looseObject({
  refId: z.string().optional(),
  expr: z.string().optional(),
  instant: z.boolean().optional(),
});

export interface Panel {
  type: string;
  title: string;
  targets?: z.infer<typeof targetSchema>[] | undefined;
  panels?: Panel[] | undefined;
}

const panelSchema: z.ZodType<Panel> = z.lazy(() =>
  z.looseObject({
    type: z.string(),
    title: z.string(),
    targets: z.array(targetSchema).optional(),
    panels: z.array(panelSchema).optional(),
  }),
);

const variableSchema = z.looseObject({
  name: z.string(),
  type: z.string(),
  query: z.union([z.string(), z.looseObject({ query: z.string().optional() })]).optional(),
  includeAll: z.boolean().optional(),
  allValue: z.string().optional(),
  current: z.looseObject({ value: z.union([z.string(), z.array(z.string())]).optional() }).optional(),
});

export const dashboardSchema = z.looseObject({
  panels: z.array(panelSchema),
  templating: z.looseObject({ list: z.array(variableSchema) }),
});

export type Dashboard = z.infer<typeof dashboardSchema>;
export type DashboardVariable = z.infer<typeof variableSchema>;

/** A dashboard's JSON text or parsed object, checked for the fields read here (a clear error naming the field). */
export function readDashboard(json: string | unknown): Dashboard {
  const parsed = dashboardSchema.safeParse(typeof json === 'string' ? JSON.parse(json) : json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`not a Grafana dashboard: ${issue?.path.join('.')}: ${issue?.message}`);
  }
  return parsed.data;
}

/** Every panel, rows' nested panels included. */
export function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

export interface PanelTarget {
  panel: string;
  refId: string;
  expr: string;
  instant: boolean;
}

/** Every query of every panel but a row, in the dashboard's order. */
export function panelTargets(dashboard: Dashboard): PanelTarget[] {
  return allPanels(dashboard.panels)
    .filter((p) => p.type !== 'row')
    .flatMap((p) =>
      (p.targets ?? []).map((t, i) => ({
        panel: p.title,
        refId: t.refId ?? String.fromCharCode(65 + i),
        expr: t.expr ?? '',
        instant: t.instant === true,
      })),
    );
}

/** The query of a `query` variable (Grafana keeps it as a string or as `{query}`). */
export function variableQuery(variable: DashboardVariable): string {
  return typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '');
}

// PromQL words that are not metric names.
const keywords = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/** The metric names a PromQL/MetricsQL expression selects (Grafana's $variables and label_values() included). */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ') // string literals
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // range and subquery windows
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/\$\{[^}]*\}|\$\w+/g, ' ') // Grafana variables
    .replace(/\blabel_values\s*\(([^,()]*),[^)]*\)/g, ' $1 '); // Grafana's label_values(metric, label)
  const names = new Set<string>();
  for (const match of bare.matchAll(/[\w:.]+/g)) {
    const word = match[0];
    const after = bare.slice((match.index ?? 0) + word.length);
    if (/^\s*\(/.test(after)) continue; // a function or aggregation
    if (keywords.has(word.toLowerCase())) continue;
    if (/^[\d.]/.test(word)) continue; // a number or a duration (0.9, 5m)
    names.add(word);
  }
  return [...names];
}
