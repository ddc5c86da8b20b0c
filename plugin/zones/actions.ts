// The step plugin's name and the actions a step can ask of a zone.

export const stepPluginName = 'vmzones/step';

export const zoneActions = ['drainReads', 'apply', 'restoreReads'] as const;

export type ZoneAction = (typeof zoneActions)[number];
