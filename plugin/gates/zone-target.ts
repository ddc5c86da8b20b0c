// Which objects a gate looks at: named in the metric config, or taken from the zone in the owning Rollout's
// spec document. The spec is read only when the config leaves something out.

import { parseGoDurationMs } from '../goplugin/go-duration.ts';
import { resolveZone, SpecError, type ZoneSpecDocument } from '../zones/spec.ts';
import { GateConfigError } from './config.ts';
import { GateSetupError } from './owner-spec.ts';
import type { GateContext } from './reading.ts';

export interface SpecZone {
  readonly zone: string;
  readonly namespace: string;
  readonly vmcluster: string;
  readonly spec: ZoneSpecDocument;
  readonly rollout: string;
  readonly readyTimeoutMs: number;
}

/** The zone as the owner's spec document describes it; `zone` must be set in the config. */
export async function zoneFromSpec(
  context: GateContext,
  zone: string | undefined,
  needed: string,
): Promise<SpecZone> {
  if (zone === undefined) {
    throw new GateConfigError([
      `zone: required to find ${needed} in the Rollout's vmzones.io/spec (or name ${needed} in the config)`,
    ]);
  }
  const owner = await context.ownerSpec();
  try {
    const resolved = resolveZone(owner.spec, zone, owner.namespace);
    return {
      zone,
      namespace: resolved.namespace,
      vmcluster: resolved.vmcluster,
      spec: owner.spec,
      rollout: owner.rollout,
      readyTimeoutMs: parseGoDurationMs(owner.spec.readyTimeout),
    };
  } catch (error) {
    if (error instanceof SpecError)
      throw new GateSetupError(`Rollout ${owner.namespace}/${owner.rollout}: ${error.message}`);
    throw error;
  }
}

/** The namespace of explicitly named objects: the config's, else the AnalysisRun's. */
export function explicitNamespace(context: GateContext, namespace: string | undefined): string {
  return namespace ?? context.run.metadata.namespace ?? 'default';
}
