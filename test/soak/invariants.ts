// The soak's invariant checker (issue 25): pure functions over snapshots of what the API server and the data plane
// showed at one instant (observe.ts takes them), so the unit tests feed it recorded or synthetic snapshots. It never
// asks vmzones: a lease is the annotation's JSON as written, routing is the VMUser as the operator sees it.

/** One zone's VMCluster as the API server showed it. */
export interface ZoneObservation {
  zone: string;
  generation: number;
  observedGeneration: number | undefined;
  updateStatus: string | undefined;
  /** The field every walk changes (spec.vmstorage.extraArgs["search.latencyOffset"]); undefined = unset. */
  value: string | undefined;
  /** `vmzones.io/lease` as written (rollout "ns/name" and uid), undefined without one; malformed = holder ''. */
  lease: { rollout: string; uid: string } | undefined;
  /** The `vmzones.io/maintenance` annotation or label. */
  maintenance: boolean;
  /** The `vmzones.io/handoff` annotation or the `vmzones.io/pending` label: work handed to the reconciler. */
  handoff: boolean;
}

/** A Rollout as the API server showed it; absent while deleted. */
export interface RolloutObservation {
  /** "ns/name", as a lease names its holder. */
  rollout: string;
  uid: string;
  phase: string | undefined;
  stepIndex: number | undefined;
  podHash: string | undefined;
  abort: boolean;
}

export interface Snapshot {
  /** Epoch ms of the snapshot (its first read). */
  at: number;
  zones: ZoneObservation[];
  /** Per read balancer (VMUser): the zones of the topology it routes reads to. */
  balancers: { name: string; routed: string[] }[];
  rollouts: RolloutObservation[];
  /** The read prober's running totals (harness.ts startReadProber). */
  reads: { sent: number; failed: number; lastFailures: string[] };
  /** An injected vmauth restart was in progress at some point since the previous snapshot. */
  vmauthRestarting: boolean;
  /** Generations produced by the soak's own foreign edits, per zone: not vmzones' changes. */
  foreignGenerations: Record<string, number[]>;
}

export const invariantNames = [
  'changed-while-routed',
  'over-budget',
  'out-without-live-lease',
  'lease-without-progress',
  'read-failed',
  'routed-not-operational',
  'sample-lost',
  'not-settled',
] as const;
export type InvariantName = (typeof invariantNames)[number];

export interface Violation {
  at: number;
  invariant: InvariantName;
  detail: string;
}

export interface CheckerOptions {
  /** Zones a balancer may have out of reads at once (today one per route: docs/step-plugin.md). */
  budgetPerBalancer: number;
  /** A lease whose zone shows no transition for this long is stuck (the longest deadline, readyTimeout, + slack). */
  leaseStallMs: number;
  /** How long a zone may stay out of reads under a lease whose holder is gone before the reconciler takes it. */
  deadHolderGraceMs: number;
}

function operational(z: ZoneObservation): boolean {
  return (
    z.updateStatus === 'operational' &&
    z.observedGeneration !== undefined &&
    z.observedGeneration >= z.generation
  );
}

function routedEverywhere(snapshot: Snapshot, zone: string): boolean {
  return snapshot.balancers.every((b) => b.routed.includes(zone));
}

/** What a zone's transitions are made of: a lease with none of these changing is not making progress. */
function progressKey(snapshot: Snapshot, z: ZoneObservation): string {
  const holder = snapshot.rollouts.find((r) => r.rollout === z.lease?.rollout);
  return JSON.stringify([
    z.lease,
    z.generation,
    z.observedGeneration,
    z.updateStatus,
    z.maintenance,
    z.handoff,
    snapshot.balancers.map((b) => b.routed.includes(z.zone)),
    holder && [holder.uid, holder.phase, holder.stepIndex, holder.podHash, holder.abort],
  ]);
}

/**
 * Checks each snapshot against the previous one. A condition that lasts is reported once, when it starts (an
 * episode), so one stuck zone is one violation, not one per second.
 */
export class InvariantChecker {
  readonly #options: CheckerOptions;
  #previous: Snapshot | undefined;
  #checks = 0;
  /** Episodes in progress: key → since (ms). */
  readonly #open = new Map<string, number>();
  /** Per zone: its last progress key and since when it holds. */
  readonly #progress = new Map<string, { key: string; since: number }>();
  #readsFailedApart = 0;

  constructor(options: CheckerOptions) {
    this.#options = options;
  }

  /** Invariant checks made so far (each invariant on each zone or balancer of each snapshot counts one). */
  get checks(): number {
    return this.#checks;
  }

  /** Reads that failed while an injected vmauth restart was in progress: counted apart, not violations. */
  get readsFailedDuringVmauthRestart(): number {
    return this.#readsFailedApart;
  }

  check(snapshot: Snapshot): Violation[] {
    const found: Violation[] = [];
    const seen = new Set<string>();
    /** Reports `key` when its episode starts (after `graceMs` and at least a second snapshot when graced). */
    const episode = (key: string, invariant: InvariantName, detail: string, graceMs = -1) => {
      seen.add(key);
      const since = this.#open.get(key);
      if (since === undefined) {
        this.#open.set(key, snapshot.at);
        if (graceMs < 0) found.push({ at: snapshot.at, invariant, detail });
        return;
      }
      if (since >= 0 && graceMs >= 0 && snapshot.at - since >= graceMs) {
        found.push({
          at: snapshot.at,
          invariant,
          detail: `${detail} (for ${((snapshot.at - since) / 1000).toFixed(0)} s)`,
        });
        this.#open.set(key, -1); // reported; stays open until the condition ends
      }
    };
    const previous = this.#previous;

    for (const z of snapshot.zones) {
      const before = previous?.zones.find((p) => p.zone === z.zone);
      // 1. No VMCluster changed while a balancer routes reads to it (routed in both snapshots around the change).
      this.#checks++;
      if (
        before !== undefined &&
        previous !== undefined &&
        z.generation !== before.generation &&
        !(snapshot.foreignGenerations[z.zone] ?? []).includes(z.generation)
      ) {
        const routedThrough = snapshot.balancers
          .filter(
            (b) =>
              b.routed.includes(z.zone) &&
              previous.balancers.find((p) => p.name === b.name)?.routed.includes(z.zone),
          )
          .map((b) => b.name);
        if (routedThrough.length > 0) {
          found.push({
            at: snapshot.at,
            invariant: 'changed-while-routed',
            detail: `${z.zone}: generation ${before.generation} → ${z.generation} (value ${String(before.value)} → ${String(z.value)}) while ${routedThrough.join(', ')} routed reads to it`,
          });
        }
      }

      // A zone serving reads must be operational at its current generation.
      this.#checks++;
      const routedBy = snapshot.balancers.filter((b) => b.routed.includes(z.zone)).map((b) => b.name);
      if (routedBy.length > 0 && !operational(z)) {
        episode(
          `routed-not-operational ${z.zone} ${z.generation}`,
          'routed-not-operational',
          `${z.zone}: ${routedBy.join(', ')} routes reads to it while its VMCluster is ${z.updateStatus ?? 'without status'} (observed generation ${String(z.observedGeneration)} of ${z.generation})`,
          0,
        );
      }

      // 3. No zone out of reads without a live lease: a lease whose holder exists with that uid, or work handed to
      // the reconciler. A zone out of reads with no lease at all must not be seen twice in a row (drain writes the
      // lease first, restore releases last); a dead holder is given the reconciler's grace.
      this.#checks++;
      if (!routedEverywhere(snapshot, z.zone)) {
        if (z.lease === undefined) {
          episode(
            `out-without-live-lease ${z.zone} none`,
            'out-without-live-lease',
            `${z.zone} is out of reads and its VMCluster holds no vmzones.io/lease`,
            0,
          );
        } else {
          const holder = snapshot.rollouts.find(
            (r) => r.rollout === z.lease?.rollout && r.uid === z.lease?.uid,
          );
          if (holder === undefined && !z.handoff) {
            episode(
              `out-without-live-lease ${z.zone} ${z.lease.rollout} ${z.lease.uid}`,
              'out-without-live-lease',
              `${z.zone} is out of reads under a lease of ${z.lease.rollout || '(malformed)'} uid ${z.lease.uid}, which no longer exists, and nobody took the zone over`,
              this.#options.deadHolderGraceMs,
            );
          }
        }
      }

      // 4. No lease held without progress longer than the longest deadline.
      this.#checks++;
      if (z.lease === undefined) {
        this.#progress.delete(z.zone);
      } else {
        const key = progressKey(snapshot, z);
        const last = this.#progress.get(z.zone);
        if (last === undefined || last.key !== key) this.#progress.set(z.zone, { key, since: snapshot.at });
        const since = this.#progress.get(z.zone)?.since ?? snapshot.at;
        if (snapshot.at - since >= this.#options.leaseStallMs) {
          episode(
            `lease-without-progress ${z.zone} ${key}`,
            'lease-without-progress',
            `${z.zone}: lease of ${z.lease.rollout} without any transition for ${((snapshot.at - since) / 1000).toFixed(0)} s (generation ${z.generation}, ${z.updateStatus ?? 'no status'}, maintenance ${z.maintenance}, handoff ${z.handoff})`,
          );
        }
      }
    }

    // 2. Never more zones out of reads than the budget, per balancer.
    const zoneNames = snapshot.zones.map((z) => z.zone);
    for (const b of snapshot.balancers) {
      this.#checks++;
      const out = zoneNames.filter((z) => !b.routed.includes(z));
      if (out.length > this.#options.budgetPerBalancer) {
        episode(
          `over-budget ${b.name} ${out.join(',')}`,
          'over-budget',
          `${b.name} has ${out.length} zones out of reads (${out.join(', ')}); the budget is ${this.#options.budgetPerBalancer}`,
        );
      }
    }

    // 5. No read through vmauth failed, except while an injected vmauth restart was in progress (counted apart).
    this.#checks++;
    const newlyFailed = snapshot.reads.failed - (previous?.reads.failed ?? snapshot.reads.failed);
    if (newlyFailed > 0) {
      if (snapshot.vmauthRestarting) {
        this.#readsFailedApart += newlyFailed;
      } else {
        const out = zoneNames.filter((z) => !routedEverywhere(snapshot, z));
        found.push({
          at: snapshot.at,
          invariant: 'read-failed',
          detail: `${newlyFailed} read(s) through vmauth failed (zones out of reads now: ${out.join(', ') || 'none'}; changing: ${
            snapshot.zones
              .filter((z) => !operational(z))
              .map((z) => z.zone)
              .join(', ') || 'none'
          }); last failures: ${snapshot.reads.lastFailures.slice(-3).join(' | ')}`,
        });
      }
    }

    for (const key of [...this.#open.keys()]) if (!seen.has(key)) this.#open.delete(key);
    this.#previous = snapshot;
    return found;
  }
}

/**
 * What keeps the zones from being settled after a walk ended: every zone serves reads through every balancer, from
 * a known value, operational at its current generation, with no lease, maintenance or handoff. Empty = settled.
 */
export function settleProblems(
  snapshot: Snapshot,
  known: Record<string, ReadonlySet<string | undefined>>,
): string[] {
  const problems: string[] = [];
  for (const z of snapshot.zones) {
    const marks = [
      z.lease === undefined ? '' : `leased by ${z.lease.rollout}`,
      z.maintenance ? 'in maintenance' : '',
      z.handoff ? 'handed to the reconciler' : '',
      routedEverywhere(snapshot, z.zone) ? '' : 'out of reads',
      operational(z)
        ? ''
        : `not operational (${z.updateStatus ?? 'no status'}, observed ${String(z.observedGeneration)} of ${z.generation})`,
      known[z.zone]?.has(z.value)
        ? ''
        : `on value ${String(z.value)}, not one of ${[...(known[z.zone] ?? [])].map(String).join(', ')}`,
    ].filter(Boolean);
    if (marks.length > 0) problems.push(`${z.zone}: ${marks.join(', ')}`);
  }
  for (const r of snapshot.rollouts) {
    if (r.phase !== 'Healthy' && r.phase !== 'Degraded')
      problems.push(`${r.rollout}: ${r.phase ?? 'no phase'}`);
  }
  return problems;
}

/** Sequence numbers of the load generator's stream a zone lacks, minus those excused (vmagent restarts). */
export function lostSamples(
  seqsByZone: Record<string, ReadonlySet<number>>,
  from: number,
  to: number,
  excused: readonly { from: number; to: number }[],
): { lost: number; excused: number; detail: string } {
  let lost = 0;
  let apart = 0;
  const detail: string[] = [];
  for (const [zone, seqs] of Object.entries(seqsByZone)) {
    const gaps: number[] = [];
    for (let seq = from; seq <= to; seq++) {
      if (seqs.has(seq)) continue;
      if (excused.some((e) => seq >= e.from && seq <= e.to)) apart++;
      else gaps.push(seq);
    }
    lost += gaps.length;
    if (gaps.length > 0)
      detail.push(`${zone}: ${gaps.length} missing (first ${gaps.slice(0, 5).join(', ')})`);
  }
  return { lost, excused: apart, detail: detail.join('; ') || `none of seq ${from}..${to}` };
}
