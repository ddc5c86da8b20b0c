// Writes manifests/notifications/argo-rollouts-notification-configmap.yaml: triggers and templates for Argo Rollouts'
// notification engine that tell a team where a vmzones walk stands (zone drained, zone changed, zone serving again,
// waiting for approval, gate failed with its code, rollback, walk finished). Users merge its data into the
// controller's argo-rollouts-notification-configmap and subscribe a Rollout with annotations (docs/notifications.md).
// Each template's text is written once here and used for the `message` (Slack and every service that shows text)
// and, JSON-quoted, in the webhook's body. Run `node scripts/notifications-configmap.ts` after editing;
// test/unit/manifests/notifications.test.ts fails while the file differs.
//
// What the engine hands a template (argo-rollouts utils/record/record.go): `rollout`, the Rollout as the controller
// read it before the reconcile that records the event (so `status.currentStepIndex` is the step that just completed,
// or the pause step), and `analysisRuns`, the current revision's AnalysisRuns, newest first. Triggers are the
// controller's event reasons (RolloutStepCompleted -> on-rollout-step-completed); `when` is an expr-lang condition.

import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

export const notificationsPath = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'manifests',
  'notifications',
  'argo-rollouts-notification-configmap.yaml',
);

/** The webhook service the templates post to (`service.webhook.<name>`; subscribe with `.<name>: ""`). */
export const webhookService = 'vmzones';
const stepPlugin = 'vmzones/step';
const gatesPlugin = 'vmzones/gates';
const failureCodeKey = 'vmzones.io/failure-code';

// --- expr conditions over `rollout` and `analysisRuns`.

const currentStep = 'rollout.spec.strategy.canary.steps[rollout.status.currentStepIndex]';
const atStep = `rollout.status.currentStepIndex != nil && len(rollout.spec.strategy.canary.steps) > rollout.status.currentStepIndex`;
const hasWalk = `any(rollout.spec.strategy.canary.steps, {.plugin != nil && .plugin.name == '${stepPlugin}'})`;
const stepIs = (action: string) =>
  `${atStep} && ${currentStep}.plugin != nil && ${currentStep}.plugin.name == '${stepPlugin}' && ${currentStep}.plugin.config.action == '${action}'`;
const failedGate = `analysisRuns != nil && any(analysisRuns, {.status != nil && (.status.phase == 'Failed' || .status.phase == 'Error') && .spec.metrics != nil && any(.spec.metrics, {.provider.plugin != nil && .provider.plugin['${gatesPlugin}'] != nil})})`;

// --- Go template pieces (text/template with sprig, as the engine runs them).

const rolloutVars = `{{- $r := .rollout -}}
{{- $name := printf "%s/%s" $r.metadata.namespace $r.metadata.name -}}
{{- $steps := $r.spec.strategy.canary.steps -}}
{{- $i := int (default 0 $r.status.currentStepIndex) -}}`;

/** The zones of a vmzones step (`zone`, or a wave's `zones`), in $zones (a list) and $zoneText. */
const stepZones = (step: string) => `{{- $cfg := ${step}.plugin.config -}}
{{- $zones := default (list $cfg.zone) $cfg.zones -}}
{{- $zoneText := join ", " $zones -}}`;

/** The message of the step's latest Run status (the plugin's words: zone and reason), in $said. */
const stepSaid = `{{- $said := "" -}}
{{- with $r.status.canary -}}{{- range .stepPluginStatuses -}}
{{- if and (eq (int .index) $i) (eq (toString .operation) "Run") -}}{{- $said = toString (default "" .message) -}}{{- end -}}
{{- end -}}{{- end -}}
{{- $reason := "" -}}{{- if $said -}}{{- $reason = printf " (%s)" $said -}}{{- end -}}`;

/** Every zone that a vmzones step of the walk names, in walk order, in $all. */
const walkZones = `{{- $all := list -}}
{{- range $steps -}}{{- if .plugin -}}{{- if eq (toString .plugin.name) "${stepPlugin}" -}}
{{- $all = concat $all (default (list .plugin.config.zone) .plugin.config.zones) -}}
{{- end -}}{{- end -}}{{- end -}}
{{- $all = uniq $all -}}`;

interface Kind {
  /** Template name: vmzones-<kind>. */
  kind: string;
  /** Go template statements that set the variables the text uses. */
  vars: string;
  /** A Go template expression of the text (a printf). */
  text: string;
  /** Extra JSON fields of the webhook body: name -> Go template expression. */
  fields: Record<string, string>;
}

const kinds: Kind[] = [
  {
    kind: 'zone-drained',
    vars: `${rolloutVars}\n${stepZones('(index $steps $i)')}\n${stepSaid}`,
    text: `printf "vmzones: Rollout %s: zone %s is out of reads (drained) at step %d of %d%s" $name $zoneText (add1 $i) (len $steps) $reason`,
    fields: { zones: '$zones', step: '(add1 $i)' },
  },
  {
    kind: 'zone-changed',
    vars: `${rolloutVars}\n${stepZones('(index $steps $i)')}\n${stepSaid}`,
    text: `printf "vmzones: Rollout %s: zone %s changed (revision %s) at step %d of %d; next: its gates%s" $name $zoneText (toString $r.status.currentPodHash) (add1 $i) (len $steps) $reason`,
    fields: { zones: '$zones', step: '(add1 $i)' },
  },
  {
    kind: 'zone-restored',
    vars: `${rolloutVars}\n${stepZones('(index $steps $i)')}\n${stepSaid}`,
    text: `printf "vmzones: Rollout %s: zone %s serves reads again at step %d of %d%s" $name $zoneText (add1 $i) (len $steps) $reason`,
    fields: { zones: '$zones', step: '(add1 $i)' },
  },
  {
    kind: 'waiting-for-approval',
    vars: `${rolloutVars}
{{- $done := "" -}}{{- $next := "" -}}{{- $zones := list -}}
{{- range $k, $s := $steps -}}{{- if $s.plugin -}}{{- if eq (toString $s.plugin.name) "${stepPlugin}" -}}
{{- $z := join ", " (default (list $s.plugin.config.zone) $s.plugin.config.zones) -}}
{{- if lt $k $i -}}{{- $done = $z -}}{{- else if not $next -}}{{- $next = $z -}}{{- $zones = default (list $s.plugin.config.zone) $s.plugin.config.zones -}}{{- end -}}
{{- end -}}{{- end -}}{{- end -}}`,
    text: `printf "vmzones: Rollout %s waits for approval at step %d of %d: zone %s walked, zone %s next; resume it with kubectl argo rollouts promote %s -n %s or Argo CD's resume action" $name (add1 $i) (len $steps) (default "none" $done) (default "none" $next) $r.metadata.name $r.metadata.namespace`,
    fields: { zones: '$zones', walked: '$done', step: '(add1 $i)' },
  },
  {
    kind: 'gate-failed',
    vars: `${rolloutVars}
{{- $zone := "" -}}{{- $metric := "" -}}{{- $phase := "" -}}{{- $code := "" -}}{{- $said := "" -}}{{- $run := "" -}}
{{- range .analysisRuns -}}{{- if not $run -}}{{- with .status -}}
{{- if or (eq (toString .phase) "Failed") (eq (toString .phase) "Error") -}}
{{- $run = "found" -}}{{- $phase = toString .phase -}}{{- $said = toString (default "" .message) -}}
{{- range .metricResults -}}{{- if and (not $metric) (or (eq (toString .phase) "Failed") (eq (toString .phase) "Error")) -}}
{{- $metric = .name -}}
{{- with .measurements -}}{{- with last . -}}{{- $said = toString (default "" .message) -}}{{- with .metadata -}}{{- $code = toString (default "" (index . "${failureCodeKey}")) -}}{{- end -}}{{- end -}}{{- end -}}
{{- end -}}{{- end -}}
{{- end -}}{{- end -}}
{{- if $run -}}{{- with .spec -}}{{- range .args -}}{{- if eq (toString .name) "zone" -}}{{- $zone = toString (default "" .value) -}}{{- end -}}{{- end -}}{{- end -}}{{- end -}}
{{- end -}}{{- end -}}
{{- $zones := list $zone -}}`,
    text: `printf "vmzones: Rollout %s: zone %s: gate %s %s (%s): %s" $name $zone $metric $phase (default "no code" $code) $said`,
    fields: { zones: '$zones', code: '$code', gate: '$metric' },
  },
  {
    kind: 'rollback',
    vars: `${rolloutVars}
{{- $changed := list -}}
{{- with $r.status.canary -}}{{- range .stepPluginStatuses -}}
{{- if and (eq (toString .operation) "Run") (eq (toString .phase) "Successful") -}}
{{- $s := index $steps (int .index) -}}{{- if $s.plugin -}}{{- if eq (toString $s.plugin.config.action) "apply" -}}
{{- $changed = concat $changed (default (list $s.plugin.config.zone) $s.plugin.config.zones) -}}
{{- end -}}{{- end -}}
{{- end -}}{{- end -}}{{- end -}}
{{- $zones := uniq $changed -}}
{{- $at := "" -}}{{- if lt $i (len $steps) -}}{{- $s := index $steps $i -}}{{- if $s.plugin -}}{{- if eq (toString $s.plugin.name) "${stepPlugin}" -}}
{{- $at = printf ", in zone %s (%s)" (join ", " (default (list $s.plugin.config.zone) $s.plugin.config.zones)) (toString $s.plugin.config.action) -}}
{{- end -}}{{- end -}}{{- end -}}`,
    text: `printf "vmzones: Rollout %s aborted at step %d of %d%s: vmzones rolls back the zones this revision changed (%s) and restores their reads" $name (add1 $i) (len $steps) $at (default "none" (join ", " $zones))`,
    fields: { zones: '$zones', step: '(add1 $i)' },
  },
  {
    kind: 'walk-finished',
    vars: `${rolloutVars}\n${walkZones}\n{{- $zones := $all -}}`,
    text: `printf "vmzones: Rollout %s finished its walk: zones %s serve reads with revision %s" $name (join ", " $all) (toString $r.status.currentPodHash)`,
    fields: { zones: '$zones' },
  },
];

/** The template of a kind: one text, in the message and in the webhook's JSON body. */
function template(k: Kind): string {
  const body = [
    `{"kind": ${JSON.stringify(k.kind)}`,
    `"rollout": {{ $name | toJson }}`,
    ...Object.entries(k.fields).map(([field, value]) => `${JSON.stringify(field)}: {{ ${value} | toJson }}`),
    `"text": {{ $text | toJson }}}`,
  ].join(', ');
  const vars = `${k.vars}\n{{- $text := ${k.text} -}}\n`;
  return stringify(
    {
      message: `${vars}{{ $text }}`,
      webhook: { [webhookService]: { method: 'POST', body: `${vars}${body}` } },
    },
    { lineWidth: 0, blockQuote: 'literal' },
  );
}

/** trigger name -> its conditions (`send` the vmzones-<kind> templates). */
export const triggers: Record<string, { when: string; kind: string }[]> = {
  'on-rollout-step-completed': [
    { when: stepIs('drainReads'), kind: 'zone-drained' },
    { when: stepIs('apply'), kind: 'zone-changed' },
    { when: stepIs('restoreReads'), kind: 'zone-restored' },
  ],
  'on-rollout-paused': [
    { when: `${hasWalk} && ${atStep} && ${currentStep}.pause != nil`, kind: 'waiting-for-approval' },
  ],
  'on-analysis-run-failed': [{ when: failedGate, kind: 'gate-failed' }],
  'on-analysis-run-error': [{ when: failedGate, kind: 'gate-failed' }],
  'on-rollout-aborted': [{ when: hasWalk, kind: 'rollback' }],
  // Only a walk: the first revision of a Rollout also completes (with no stable revision before it).
  'on-rollout-completed': [
    {
      when: `${hasWalk} && rollout.status.stableRS != nil && rollout.status.stableRS != '' && rollout.status.stableRS != rollout.status.currentPodHash`,
      kind: 'walk-finished',
    },
  ],
};

export const notificationKinds = kinds.map((k) => k.kind);

export function notificationsData(): Record<string, string> {
  const data: Record<string, string> = {
    // Examples: where the notifications go. Replace the URL; keep the Slack token in
    // argo-rollouts-notification-secret (key slack-token), never here.
    [`service.webhook.${webhookService}`]: stringify({
      url: 'https://hooks.example.com/vmzones',
      headers: [{ name: 'Content-Type', value: 'application/json' }],
    }),
    'service.slack': stringify({ token: '$slack-token' }),
  };
  for (const [name, conditions] of Object.entries(triggers)) {
    data[`trigger.${name}`] = stringify(
      conditions.map((c) => ({ when: c.when, send: [`vmzones-${c.kind}`] })),
      { lineWidth: 0 },
    );
  }
  for (const k of kinds) data[`template.vmzones-${k.kind}`] = template(k);
  return data;
}

export function notificationsText(): string {
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argo-rollouts-notification-configmap', namespace: 'argo-rollouts' },
    data: notificationsData(),
  };
  return `# Generated by scripts/notifications-configmap.ts: edit the script, then run it.
# vmzones notifications for Argo Rollouts' notification engine (docs/notifications.md): merge this data into the
# controller's argo-rollouts-notification-configmap (the namespace the controller runs in). Its trigger keys replace
# Argo Rollouts' own triggers of the same names (on-rollout-step-completed, on-rollout-paused, on-rollout-aborted,
# on-rollout-completed, on-analysis-run-failed, on-analysis-run-error): add their conditions back to keep those too.
# Subscribe a Rollout, e.g. to the webhook:
#   notifications.argoproj.io/subscribe.on-rollout-step-completed.${webhookService}: ""
#   (and .on-rollout-paused, .on-analysis-run-failed, .on-analysis-run-error, .on-rollout-aborted, .on-rollout-completed)
# or to Slack: notifications.argoproj.io/subscribe.on-rollout-step-completed.slack: my-channel
${stringify(configMap, { lineWidth: 0, blockQuote: 'literal' })}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(notificationsPath, notificationsText());
  console.log(`wrote ${notificationsPath}`);
}
