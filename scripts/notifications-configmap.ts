// Writes manifests/notifications/argo-rollouts-notification-configmap.yaml: triggers and templates for Argo Rollouts'
// notification engine that tell a team where a vmzones walk stands (zone drained, zone changed, zone serving again,
// waiting for approval, gate failed with its code, rollback, walk finished). Users merge its data into the
// controller's argo-rollouts-notification-configmap and subscribe a Rollout with annotations (docs/notifications.md).
// Each template's text is written once here and used for the `message` (Slack and every service that shows text)
// and, JSON-quoted, in the webhook's body. Run `node scripts/notifications-configmap.ts` after editing;
// test/unit/manifests/notifications.test.ts fails while the file differs.
//
// Which path sends them: Argo Rollouts runs notifications-engine's controller over every Rollout (argo-rollouts
// controller/controller.go): on each change it evaluates the subscribed triggers' `when` (expr-lang) on the Rollout
// as it is now, sends when a condition becomes true, and remembers what it sent per `oncePer` value in the Rollout's
// annotation notified.notifications.argoproj.io. The controller's events also send, but only for triggers named
// after an event reason (on-rollout-step-completed …), with the Rollout as it was before the event; a trigger with a
// `when` under such a name is sent by both paths (twice), so the vmzones triggers have names of their own
// (on-vmzones-…) and conditions on the Rollout's current state: the step statuses the plugin wrote
// (status.canary.stepPluginStatuses), the pause, the abort, and `analysisRuns` (the current revision's, newest first).

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

const steps = 'rollout.spec.strategy.canary.steps';
const statuses = 'rollout.status.canary.stepPluginStatuses';
const hasStatuses = `rollout.status.canary != nil && ${statuses} != nil`;
const hasWalk = `any(${steps}, {.plugin != nil && .plugin.name == '${stepPlugin}'})`;
/** A step status (`.`) of a successful Run of a vmzones step with `action`. */
const ranAction = (action: string) =>
  `.operation == 'Run' && .phase == 'Successful' && ${steps}[.index].plugin != nil && ${steps}[.index].plugin.name == '${stepPlugin}' && ${steps}[.index].plugin.config.action == '${action}'`;
const failedGate = `{.status != nil && (.status.phase == 'Failed' || .status.phase == 'Error') && .spec.metrics != nil && any(.spec.metrics, {.provider.plugin != nil && .provider.plugin['${gatesPlugin}'] != nil})}`;
/** `<what>@<revision>`, the closure first: expr-lang 1.17 evaluates `s + f(arr, {predicate})` wrongly ("bool +
 *  string"), `f(arr, {predicate}) + s` right. */
const atRevision = (what: string) => `string(${what}) + '@' + rollout.status.currentPodHash`;

// --- Go template pieces (text/template with sprig, as the engine runs them).

const rolloutVars = `{{- $r := .rollout -}}
{{- $name := printf "%s/%s" $r.metadata.namespace $r.metadata.name -}}
{{- $steps := $r.spec.strategy.canary.steps -}}
{{- $i := int (default 0 $r.status.currentStepIndex) -}}`;

/** The zones of a vmzones step (`zone`, or a wave's `zones`), in $zones (a list) and $zoneText. */
const stepZones = (step: string) => `{{- $cfg := ${step}.plugin.config -}}
{{- $zones := default (list $cfg.zone) $cfg.zones -}}
{{- $zoneText := join ", " $zones -}}`;

/** The newest successful Run status of a vmzones `action` step, in $st (its index in $i), and its message (the
 *  plugin's words: zone and what it did) in $reason. */
const lastRun = (action: string) => `{{- $st := dict -}}
{{- with $r.status.canary -}}{{- range .stepPluginStatuses -}}
{{- if and (eq (toString .operation) "Run") (eq (toString .phase) "Successful") -}}
{{- $s := index $steps (int .index) -}}{{- if $s.plugin -}}
{{- if and (eq (toString $s.plugin.name) "${stepPlugin}") (eq (toString $s.plugin.config.action) "${action}") -}}{{- $st = . -}}{{- end -}}
{{- end -}}{{- end -}}
{{- end -}}{{- end -}}
{{- $i = int (default 0 $st.index) -}}
{{- $said := toString (default "" $st.message) -}}
{{- $reason := "" -}}{{- if $said -}}{{- $reason = printf ": %s" $said -}}{{- end -}}`;

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
    vars: `${rolloutVars}\n${lastRun('drainReads')}\n${stepZones('(index $steps $i)')}`,
    text: `printf "vmzones: Rollout %s: zone %s is out of reads (step %d of %d)%s" $name $zoneText (add1 $i) (len $steps) $reason`,
    fields: { zones: '$zones', step: '(add1 $i)' },
  },
  {
    kind: 'zone-changed',
    vars: `${rolloutVars}\n${lastRun('apply')}\n${stepZones('(index $steps $i)')}`,
    text: `printf "vmzones: Rollout %s: zone %s changed to revision %s (step %d of %d)%s" $name $zoneText (toString $r.status.currentPodHash) (add1 $i) (len $steps) $reason`,
    fields: { zones: '$zones', step: '(add1 $i)' },
  },
  {
    kind: 'zone-restored',
    vars: `${rolloutVars}\n${lastRun('restoreReads')}\n${stepZones('(index $steps $i)')}`,
    text: `printf "vmzones: Rollout %s: zone %s serves reads again (step %d of %d)%s" $name $zoneText (add1 $i) (len $steps) $reason`,
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
{{- $zones := splitList "," $zone -}}`,
    text: `printf "vmzones: Rollout %s: zone %s: gate %s %s (%s): %s" $name $zone $metric $phase (default "no code" $code) $said`,
    fields: { zones: '$zones', code: '$code', gate: '$metric' },
  },
  {
    kind: 'rollback',
    vars: `${rolloutVars}
{{- $changed := list -}}{{- $at := "" -}}
{{- with $r.status.canary -}}{{- range .stepPluginStatuses -}}
{{- $s := index $steps (int .index) -}}
{{- if and (eq (toString .operation) "Run") $s.plugin -}}{{- if eq (toString $s.plugin.name) "${stepPlugin}" -}}
{{- $z := default (list $s.plugin.config.zone) $s.plugin.config.zones -}}
{{- if and (eq (toString .phase) "Successful") (eq (toString $s.plugin.config.action) "apply") -}}{{- $changed = concat $changed $z -}}{{- end -}}
{{- if eq (toString .phase) "Failed" -}}
{{- $code := "" -}}{{- with .status -}}{{- $code = toString (default "" .code) -}}{{- end -}}
{{- $at = printf "; step %d failed in zone %s (%s, %s): %s" (add1 (int .index)) (join ", " $z) (toString $s.plugin.config.action) (default "no code" $code) (toString (default "" .message)) -}}
{{- end -}}
{{- end -}}{{- end -}}
{{- end -}}{{- end -}}
{{- $zones := uniq $changed -}}`,
    text: `printf "vmzones: Rollout %s aborted: vmzones rolls back the zones this revision changed (%s) and restores their reads%s; %s" $name (default "none" (join ", " $zones)) $at (toString (default "" $r.status.message))`,
    fields: { zones: '$zones' },
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

/** trigger name -> its condition, the value it is sent once per, and the vmzones-<kind> template it sends. */
export const triggers: Record<string, { when: string; oncePer: string; kind: string }> = Object.fromEntries(
  [
    ...(['drainReads', 'apply', 'restoreReads'] as const).map((action) => ({
      kind: { drainReads: 'zone-drained', apply: 'zone-changed', restoreReads: 'zone-restored' }[action],
      when: `${hasStatuses} && any(${statuses}, {${ranAction(action)}})`,
      oncePer: atRevision(`findLast(${statuses}, {${ranAction(action)}}).index`),
    })),
    {
      kind: 'waiting-for-approval',
      when: `${hasWalk} && rollout.status.pauseConditions != nil && any(rollout.status.pauseConditions, {.reason == 'CanaryPauseStep'}) && rollout.status.currentStepIndex != nil`,
      oncePer: atRevision('rollout.status.currentStepIndex'),
    },
    {
      kind: 'gate-failed',
      when: `analysisRuns != nil && any(analysisRuns, ${failedGate})`,
      oncePer: `find(analysisRuns, ${failedGate}).metadata.name`,
    },
    {
      kind: 'rollback',
      when: `${hasWalk} && rollout.status.abort == true`,
      oncePer: atRevision('rollout.status.abortedAt'),
    },
    {
      kind: 'walk-finished',
      when: `${hasWalk} && rollout.status.phase == 'Healthy' && rollout.status.stableRS == rollout.status.currentPodHash && ${hasStatuses} && any(${statuses}, {.operation == 'Run' && .phase == 'Successful'})`,
      oncePer: `rollout.status.currentPodHash`,
    },
  ].map((t) => [`on-vmzones-${t.kind}`, t]),
);

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
  for (const [name, t] of Object.entries(triggers)) {
    data[`trigger.${name}`] = stringify([{ when: t.when, oncePer: t.oncePer, send: [`vmzones-${t.kind}`] }], {
      lineWidth: 0,
    });
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
# controller's argo-rollouts-notification-configmap (the namespace the controller runs in). The triggers have names
# of their own (on-vmzones-…): Argo Rollouts' own triggers stay as they are. Subscribe a Rollout (its
# metadata.annotations), e.g. to the webhook:
${Object.keys(triggers)
  .map((t) => `#   notifications.argoproj.io/subscribe.${t}.${webhookService}: ""`)
  .join('\n')}
# or to Slack: notifications.argoproj.io/subscribe.on-vmzones-zone-drained.slack: my-channel (and the others)
${stringify(configMap, { lineWidth: 0, blockQuote: 'literal' })}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(notificationsPath, notificationsText());
  console.log(`wrote ${notificationsPath}`);
}
