// What the vmagentQueueDrained gate keeps in Measurement.Metadata between readings (only Kubernetes holds
// state): the agents' queue positions and remote-write list digests at the start, each pod's queue directories
// when first seen, since when the zone has been ready, and the last rounds of scrapes. Read back through the
// schema; an older or foreign shape is refused with a clear error rather than misread.

import { z } from 'zod';
import { queueMetricNames } from '../vm/remote-write.ts';

const figureNames = Object.keys(queueMetricNames) as [
  keyof typeof queueMetricNames,
  ...(keyof typeof queueMetricNames)[],
];

const pickedQueueSchema = z.object({
  figures: z.partialRecord(z.enum(figureNames), z.number()).readonly(),
  queuePaths: z.array(z.string()).readonly(),
  missing: z.array(z.string()).readonly(),
  problems: z.array(z.string()).readonly(),
  allQueueDirNames: z.array(z.string()).readonly(),
});

/** One pod in one round: its zone queue, or why it could not be read. */
const podScrapeSchema = z.discriminatedUnion('ok', [
  z.object({ pod: z.string(), ok: z.literal(true), queue: pickedQueueSchema }).readonly(),
  z.object({ pod: z.string(), ok: z.literal(false), error: z.string() }).readonly(),
]);
export type PodScrape = z.infer<typeof podScrapeSchema>;

const storedRoundSchema = z.object({
  at: z.number(),
  zoneReady: z.boolean().nullable(),
  agents: z.record(z.string(), z.array(podScrapeSchema)),
});
export type StoredRound = z.infer<typeof storedRoundSchema>;

export const drainStateSchema = z.object({
  v: z.literal(1),
  agents: z.record(z.string(), z.object({ index: z.number().int(), listDigest: z.string().nullable() })),
  baselineDirs: z.record(z.string(), z.array(z.string())),
  zoneReadySince: z.number().nullable(),
  rounds: z.array(storedRoundSchema),
});
export type DrainState = z.infer<typeof drainStateSchema>;
