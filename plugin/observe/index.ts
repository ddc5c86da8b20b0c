// The observe layer as main.ts sees it: set up the endpoint from the plugin's args.

export { ObserveFlagError } from './flags.ts';
export { type PluginObserve, startObserve } from './start.ts';
