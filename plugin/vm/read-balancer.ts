// The read balancer as plugin/zones imports it: routing edits (read-routing.ts) and the evidence that vmauth
// serves them (read-evidence.ts). Kept as one entry point while plugin/zones moves to the modules themselves.

export type { ReadBalancerConfig, ReadBalancerRef } from './read-backends.ts';
export { type ReadEvidence, readEvidence } from './read-evidence.ts';
export { type DrainRecord, drainZone, type ReadRouting, readRouting, restoreZone } from './read-routing.ts';
