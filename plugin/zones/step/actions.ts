// The actions a step can ask of a zone (the step plugin's name: plugin/rollouts/plugin-names.ts).

export const zoneActions = ['drainReads', 'apply', 'restoreReads'] as const;

export type ZoneAction = (typeof zoneActions)[number];

/** The zones a vmzones/step config names: `zone` (one), or `zones` (a wave); undefined when it names neither. */
export function configZones(config: unknown): string[] | undefined {
  if (typeof config !== 'object' || config === null) return undefined;
  const { zone, zones } = config as { zone?: unknown; zones?: unknown };
  if (typeof zone === 'string' && zones === undefined) return [zone];
  if (zone === undefined && Array.isArray(zones) && zones.every((z) => typeof z === 'string'))
    return zones as string[];
  return undefined;
}
