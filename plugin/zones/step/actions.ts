// The actions a step can ask of a zone (the step plugin's name: plugin/rollouts/plugin-names.ts).

export const zoneActions = ['drainReads', 'apply', 'restoreReads'] as const;

export type ZoneAction = (typeof zoneActions)[number];
