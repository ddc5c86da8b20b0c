// Before a drain, the zones that keep serving are current (issue 37 item 2): taking a zone out moves its reads to the
// zones that stay, so each of them must have what the drained one has. Operational is checked with the budget
// (vm/read-safety.ts drainBlocker); here, for every zone that would keep serving through a balancer the drained zone
// leaves: its writers' remote-write queues toward it drained, by the queue gate's own evidence rule (the
// vmagentQueueDrained reading behind the queue-check port, queue-check.ts), and none of its storage pods read-only
// (vm/storage-read-only.ts). A zone that is behind makes the drain wait, naming it and what it lacks.
//
// Cost: the queue rule needs rounds 1.5 s apart, so a drain reads each serving zone again inside the call while its
// rounds are counting (about 3 s for three), the rounds are kept in this process (`ServingReadings`) for the next
// reading within `roundsCarriedMs`, and a reading younger than `readingReuseMs` is shared (a wave's zones, a write
// retried on a fresh read). Kept in memory only: a restarted plugin takes fresh rounds, which costs a drain a few
// seconds and never admits one (the rule asks for evidence, never its absence).

import { type ReadLayer, routingTo } from '../../vm/read-layer.ts';
import { readStorageWritability } from '../../vm/storage-read-only.ts';
import type { ZoneKindName } from '../../vm/zone-kinds.ts';
import type { MoveDeps } from './move-deps.ts';
import type { ZoneQueueCheck } from './queue-check.ts';

/** A zone of the spec that may keep serving while another is drained, and what writes to it. */
export interface ServingZone {
  /** The spec's zone name (for messages and the balancers' routing). */
  zone: string;
  /** The registered cluster of its object; undefined = the controller's own. */
  cluster: string | undefined;
  /** Its object. */
  kind: ZoneKindName;
  namespace: string;
  name: string;
  /** The agents that write to it (VMAgents, or VLAgents for a VLCluster) and the cluster they run in. */
  writers: readonly string[];
  writersCluster: string | undefined;
  /** Its vminsertHosts: how the writers' URLs name it when it is in another cluster. */
  vminsertHosts?: readonly string[];
}

/** What the drain's admission is given to check the zones that keep serving. */
export interface ServingCheck {
  zones: readonly ServingZone[];
  /** The queue gate's reading (main.ts wires plugin/gates/zone-queue-check.ts); absent: queues are not checked. */
  queueCheck?: ZoneQueueCheck;
  readings: ServingReadings;
  /** How long the admission may take readings inside the call while a zone is behind (the queue rule's rounds
   *  are 1.5 s apart: three of them need 3 s); the larger of it and the call's in-call wait. */
  inCallMs: number;
}

/** The step's bound on readings inside the call while a serving zone is behind: the queue rule's three rounds
 *  1.5 s apart (3 s) and the time of a reading. */
export const servingInCallMs = 4_000;

/** A reading this young is the one the admission starts from: a wave's zones admitted one after another (their
 *  turns are seconds apart: each waits for its balancer write's reload stamp), a write retried on a fresh read, the
 *  walks of other Rollouts beside the same zones. The readings taken again inside the call are always new ones. */
export const readingReuseMs = 5_000;
/** A zone's rounds are carried to its next reading only this long: the rule compares each round's counters with the
 *  round before, and across a longer gap — say one that spans the zone's own walk, its restart and vmagent's
 *  retries to it, long over — the growth it sees is history, not the queue as it is. Older rounds are dropped and
 *  the reading starts fresh (three rounds, about 3 s inside the call). Longer than a wave's turns (seconds apart),
 *  shorter than a controller round trip (16 s and more). */
export const roundsCarriedMs = 10_000;
/** Entries older than this are dropped (a zone no drain of this process looked at for long). */
const forgetAfterMs = 30 * 60_000;
/** How soon to read again when the queue check says nothing (its round spacing, 1.5 s by default). */
const defaultNextReadingMs = 1_500;

/** One reading of one serving zone: what it lacks (empty: it is current). */
export interface ServingReading {
  zone: string;
  lacks: string[];
  /** When the queue check would look again (its poll). */
  nextReadingInMs?: number;
  /** The queue is all it lacks, and its rounds are counting: the rule's evidence is due in this long. */
  clearsInMs?: number;
}

interface Remembered {
  /** When the reading was started (0: it failed, take a new one). */
  at: number;
  reading: Promise<ServingReading>;
  /** The queue check's rounds, carried to its next reading, and when the reading that made them started. */
  queueState?: unknown;
  roundsAt: number;
}

/** The serving zones' latest readings and queue rounds in this process (see the file's comment). */
export class ServingReadings {
  readonly #zones = new Map<string, Remembered>();

  /** The zone's reading: the latest if younger than `maxAgeMs` (or still being taken), else a new one. */
  read(deps: MoveDeps, check: ServingCheck, zone: ServingZone, maxAgeMs: number): Promise<ServingReading> {
    const now = deps.now().getTime();
    for (const [key, entry] of this.#zones) if (now - entry.at > forgetAfterMs) this.#zones.delete(key);
    const key = servingZoneKey(zone);
    const latest = this.#zones.get(key);
    if (latest !== undefined && now - latest.at <= maxAgeMs) return latest.reading;
    const fresh = latest !== undefined && now - latest.roundsAt <= roundsCarriedMs;
    const carried = fresh ? latest.queueState : undefined;
    const entry: Remembered = {
      at: now,
      queueState: carried,
      roundsAt: fresh ? latest.roundsAt : now,
      reading: readServingZone(deps, check, zone, carried).then(
        ({ reading, queueState }) => {
          entry.queueState = queueState;
          entry.roundsAt = now;
          return reading;
        },
        (error: unknown) => {
          // A fault is no reading: the next caller takes a new one, on the rounds kept so far.
          entry.at = 0;
          throw error;
        },
      ),
    };
    this.#zones.set(key, entry);
    return entry.reading;
  }
}

function servingZoneKey(zone: ServingZone): string {
  return JSON.stringify([
    zone.cluster ?? '',
    zone.kind,
    zone.namespace,
    zone.name,
    zone.writersCluster ?? '',
    zone.writers,
    zone.vminsertHosts ?? [],
  ]);
}

async function readServingZone(
  deps: MoveDeps,
  check: ServingCheck,
  zone: ServingZone,
  queueState: unknown,
): Promise<{ reading: ServingReading; queueState: unknown }> {
  const zoneKube = await deps.clusters.client(zone.cluster);
  const [storage, queue] = await Promise.all([
    readStorageWritability(zoneKube, zone),
    check.queueCheck === undefined || zone.writers.length === 0
      ? undefined
      : check.queueCheck(
          {
            zone: zoneKube,
            vmagents: await deps.clusters.client(zone.writersCluster),
            vmagentsCluster: await deps.clusters.registration(zone.writersCluster),
          },
          {
            namespace: zone.namespace,
            vmcluster: zone.name,
            kind: zone.kind,
            vmagents: [...zone.writers],
            ...(zone.vminsertHosts === undefined ? {} : { vminsertHosts: [...zone.vminsertHosts] }),
          },
          queueState,
          deps.now().getTime(),
        ),
  ]);
  const lacks: string[] = [];
  if (queue !== undefined && queue.verdict !== 'pass') {
    const writers = `${zone.kind === 'VLCluster' ? 'VLAgent' : 'VMAgent'} ${zone.writers.join(', ')}`;
    lacks.push(
      `the remote-write queue of ${writers} toward it is not drained${queue.verdict === 'fail' ? ' (data was dropped)' : ''}: ${queue.message}`,
    );
  }
  const clearsInMs = lacks.length === 1 ? queue?.evidenceDueInMs : undefined;
  // No storage pod at all (the operator runs them; the sandbox's simulated zones are one process): nothing to read.
  if (storage.state === 'readOnly' || storage.state === 'unknown') lacks.push(storage.message);
  return {
    reading: {
      zone: zone.zone,
      lacks,
      ...(queue?.nextReadingInMs === undefined ? {} : { nextReadingInMs: queue.nextReadingInMs }),
      ...(clearsInMs === undefined || lacks.length > 1 ? {} : { clearsInMs }),
    },
    queueState: queue?.state ?? queueState,
  };
}

/**
 * Why the drain must wait for the zones that would keep serving, or undefined: each zone a balancer the drained zone
 * leaves still routes to (the wave's own zones leave too) is read — a reading of the last `readingReuseMs` serves —
 * and a zone whose only lack is queue rounds that are counting and due within `check.inCallMs` is read again at the
 * rule's spacing inside the call. A zone behind otherwise (a backed-up queue, read-only storage, a pod that gives no
 * reading) is read once per call: waiting in the call would not clear it. The message names the zones that are
 * behind and what each lacks; zones whose rounds were still counting are named only when no zone is behind
 * otherwise.
 */
export async function servingZonesBehind(
  deps: MoveDeps,
  check: ServingCheck,
  layer: ReadLayer,
  zone: string,
  wave: readonly string[] = [zone],
): Promise<string | undefined> {
  const leaving = new Set([zone, ...wave]);
  const through = routingTo(layer, zone);
  const staying = check.zones.filter(
    (z) => !leaving.has(z.zone) && through.some((b) => b.routing.routed.includes(z.zone)),
  );
  const until = deps.now().getTime() + Math.max(check.inCallMs, deps.inCallWaitMs ?? 0);
  const latest = new Map<string, ServingReading>();
  let toRead = staying;
  let maxAgeMs = readingReuseMs;
  while (toRead.length > 0) {
    const readings = await Promise.all(toRead.map((z) => check.readings.read(deps, check, z, maxAgeMs)));
    for (const reading of readings) latest.set(reading.zone, reading);
    const now = deps.now().getTime();
    const counting = readings.filter((r) => r.lacks.length > 0 && r.clearsInMs !== undefined);
    const nextMs = Math.max(0, ...counting.map((r) => r.nextReadingInMs ?? defaultNextReadingMs));
    const due = counting.filter((r) => now + Math.max(r.clearsInMs ?? 0, nextMs) <= until);
    if (due.length === 0) break;
    await deps.sleep(nextMs);
    toRead = staying.filter((z) => due.some((r) => r.zone === z.zone));
    maxAgeMs = 0;
  }
  const behind = [...latest.values()].filter((r) => r.lacks.length > 0);
  if (behind.length === 0) return undefined;
  const stuck = behind.filter((r) => r.clearsInMs === undefined);
  return `draining ${wave.length > 1 ? `the wave ${wave.join(', ')}` : `zone ${zone}`} would move its reads to ${(stuck.length >
  0
    ? stuck
    : behind
  )
    .map((r) => `zone ${r.zone}, which is behind: ${r.lacks.join('; ')}`)
    .join('; and to ')}`;
}
