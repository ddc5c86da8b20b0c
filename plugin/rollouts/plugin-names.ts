// The names under which Argo Rollouts knows the two plugins: the step plugin in a canary step's `plugin.name` and
// the metric provider in an analysis metric's `provider.plugin` key; both are also how they are registered in the
// argo-rollouts-config ConfigMap (docs/deploy.md). Defined once here, below every layer that matches them.

export const stepPluginName = 'vmzones/step';
export const gatesPluginName = 'vmzones/gates';
