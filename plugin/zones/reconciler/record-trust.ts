// The reconciler acts on records (lease, rollback, handoff) kept in annotations of a zone's object, which anyone who
// may patch that object can write; vmzones acts with the controller's rights. So a record is data, never authority
// (docs/reliability.md, "Trust boundary"): what the reconciler acts on is rebuilt here from a source the writer of
// the record cannot write, or checked against one, before any act:
//   - while the holder's Rollout exists and its spec document names this very zone object: everything (balancers,
//     their vmauth pods and credentials, the zone's backends, agents) is rebuilt from that document, exactly as a
//     step of that Rollout resolves it (zones/step/target.ts), with the same namespace allowance;
//   - otherwise (the Rollout is gone, or names other objects) the record's fields are checked one by one: every
//     namespace is the zone object's own or allowed by `--allowed-namespaces`, every cluster a registered one whose
//     Secret allows that namespace, the holder's namespace one whose Rollouts could act on the zone, the zone's own
//     backend exactly the zone object with its default read hosts; the vmauth pods are only those of the VMAuths
//     serving the VMUser (never a pod list, selector, port or credential from the record), so no Secret is read.
// A record that fails is refused: nothing is acted on, and the reconciler says why (a Warning event on the zone's
// object, never on the record's holder, and a log line; neither carries a value of a Secret).
// No MAC over the records: every field that grants anything is rebuilt or checked here, so a key to keep, rotate and
// share between plugin replicas would add no protection.

import { CodedError } from '../../goplugin/failure-codes.ts';
import type { Logger } from '../../goplugin/index.ts';
import {
  type NamespaceAllowance,
  NamespaceAllowanceError,
  namespaceAllowed,
  requireNamespaceAllowed,
} from '../../kube/allowed-namespaces.ts';
import {
  type ClusterClients,
  ClusterRegistryError,
  requireClusterNamespace,
} from '../../kube/cluster-registry.ts';
import { type KubeObject, type KubeObjects, namespacedName, type ObjectRef } from '../../kube/objects.ts';
import type { RolloutProgress } from '../../rollouts/rollout-object.ts';
import type { ReadBalancerConfig } from '../../vm/read-backends.ts';
import { balancerKey, defaultVmselectHosts, describeBalancer } from '../../vm/read-backends.ts';
import type { DisruptionBudget } from '../../vm/read-safety.ts';
import { defaultZoneKind, zoneKindOf, zoneKindOrDefault } from '../../vm/zone-kinds.ts';
import {
  defaultDrainGracePeriod,
  drainGracePeriodOf,
  maxReadBalancers,
  resolveZone,
  specDisruptionBudget,
  specFromAnnotations,
  zoneWriters,
} from '../spec.ts';
import { emitZoneEvent } from '../state/events.ts';
import { holderProgress } from '../state/holder.ts';
import { storedFields, type TrustedReads } from '../state/trusted-reads.ts';
import {
  describeHolder,
  type Handoff,
  type Lease,
  type RollbackRecord,
  type RolloutIdentity,
  readsRecord,
  recordedBalancers,
  recordObjectProblem,
  type ZoneIdentity,
  zoneState,
} from '../state/zone-annotations.ts';
import { readBalancerConfigs } from '../step/target.ts';

/** What the reconciler acts on besides the records' fields: the holder's zone disruption budget, when its spec
 *  document names the zone (a setting: never stored in, nor read from, a record; absent: the default budget). */
export interface TrustedSettings extends TrustedReads {
  budget?: DisruptionBudget;
}

/** The unforgeable sources records are checked against. */
export interface RecordTrust {
  /** The plugin's `--allowed-namespaces` (plugin/kube/allowed-namespaces.ts). */
  allowance: NamespaceAllowance;
  clusters: Pick<ClusterClients, 'registration'>;
}

/** The zone object a record was read from: its reference and the registered cluster it lives in. */
export interface ZonePlace {
  ref: ObjectRef;
  /** undefined = the controller's own cluster. */
  cluster: string | undefined;
}

/** A record the reconciler will not act on; the message says which field and why, never a Secret's value. */
export class RecordRefusedError extends CodedError {
  readonly place: ZonePlace;
  readonly zone: string;
  readonly holder: RolloutIdentity;
  constructor(place: ZonePlace, zone: string, holder: RolloutIdentity, problem: string) {
    super(
      'RecordRefused',
      `${place.ref.kind} ${namespacedName(place.ref)}${place.cluster === undefined ? '' : ` in cluster ${place.cluster}`}: ` +
        `the vmzones record of zone ${zone} (holder ${describeHolder(holder)}) is refused: ${problem}; the zone is left as it is`,
    );
    this.name = 'RecordRefusedError';
    this.place = place;
    this.zone = zone;
    this.holder = holder;
  }
}

/** What the first of a lease and a rollback record that carries them says (state format 1 and later). */
export function recordedReads(...records: (Lease | RollbackRecord | undefined)[]): TrustedReads | undefined {
  for (const source of records) {
    if (source?.reads !== undefined && source.drainGracePeriod !== undefined) {
      return {
        reads: source.reads,
        drainGracePeriod: source.drainGracePeriod,
        vmagents: source.vmagents,
        vmagentsCluster: source.vmagentsCluster,
        vminsertHosts: source.vminsertHosts,
      };
    }
  }
  return undefined;
}

/** Whether the holder's spec document names this zone object as `zone`: then it is the source of everything. */
function rebuiltFromSpec(
  trust: RecordTrust,
  place: ZonePlace,
  zone: string,
  holder: RolloutIdentity,
  progress: RolloutProgress,
): TrustedSettings | undefined {
  const [rolloutNamespace = ''] = holder.rollout.split('/');
  let spec: ReturnType<typeof specFromAnnotations>;
  let resolved: ReturnType<typeof resolveZone>;
  try {
    spec = specFromAnnotations(progress.templateAnnotations);
    resolved = resolveZone(spec, zone, rolloutNamespace);
  } catch {
    // A document that cannot be read, or has no such zone, is no source: the record's fields are checked instead.
    return undefined;
  }
  const kind = zoneKindOf(place.ref.kind) ?? defaultZoneKind;
  const same =
    resolved.kind === kind &&
    resolved.namespace === place.ref.namespace &&
    resolved.vmcluster === place.ref.name &&
    resolved.cluster === place.cluster;
  if (!same) return undefined;
  // The same allowance a step of that Rollout is held to (zones/step/target.ts).
  requireNamespaceAllowed(
    trust.allowance,
    { describe: `Rollout ${holder.rollout}`, namespace: rolloutNamespace },
    resolved.namespace,
    `the spec document's namespace (${kind.kind} ${resolved.vmcluster} of zone ${zone})`,
  );
  const writers = zoneWriters(spec, kind);
  return {
    reads: readsRecord(readBalancerConfigs(spec, resolved.namespace)),
    drainGracePeriod: drainGracePeriodOf(spec),
    vmagents: writers.names,
    vmagentsCluster: writers.cluster,
    vminsertHosts: spec.zones[zone]?.vminsertHosts,
    budget: specDisruptionBudget(spec),
  };
}

/** Throws ClusterRegistryError unless `cluster` is undefined or registered and allows `namespace`. */
async function requireRegistered(
  trust: RecordTrust,
  cluster: string | undefined,
  namespace: string,
  what: string,
): Promise<void> {
  requireClusterNamespace(await trust.clusters.registration(cluster), namespace, what);
}

/** The record's own fields, each checked; the vmauth pods are replaced by those the balancer object selects. */
async function checkedRecord(
  trust: RecordTrust,
  place: ZonePlace,
  zone: string,
  holder: RolloutIdentity,
  recorded: TrustedReads,
): Promise<TrustedReads> {
  const own = place.ref.namespace;
  const refuse = (why: string) => new RecordRefusedError(place, zone, holder, why);
  const allowed = (namespace: string, what: string) => {
    if (!namespaceAllowed(trust.allowance, own, namespace)) {
      throw refuse(
        `${what} is in namespace ${namespace}, neither the zone object's own (${own}) nor allowed by the plugin's --allowed-namespaces`,
      );
    }
  };
  const kind = zoneKindOf(place.ref.kind) ?? defaultZoneKind;
  const balancers: ReadBalancerConfig[] = [];
  const named = new Set<string>();
  for (const config of recordedBalancers(recorded.reads)) {
    const where = describeBalancer(config.ref);
    if (named.has(balancerKey(config))) throw refuse(`it names read balancer ${where} twice`);
    named.add(balancerKey(config));
    allowed(config.ref.namespace, `read balancer ${where}`);
    await requireRegistered(trust, config.cluster, config.ref.namespace, `read balancer ${where}`);
    if (config.ref.kind !== 'VMUser') {
      // A helm-managed vmauth names its pods only in the spec document; a record's pod list is never used.
      throw refuse(
        `read balancer ${where} has no vmauth pods of its own to check and the Rollout's spec document does not name this zone; restore its reads by hand`,
      );
    }
    const backend = config.zones.find((b) => b.zone === zone);
    const defaults = defaultVmselectHosts(place.ref.name, own, kind);
    if (
      backend === undefined ||
      backend.namespace !== own ||
      backend.vmcluster !== place.ref.name ||
      zoneKindOrDefault(backend.kind) !== kind ||
      backend.cluster !== place.cluster ||
      backend.hosts.some((host) => !defaults.includes(host))
    ) {
      throw refuse(
        `read balancer ${where}: the record's backend of zone ${zone} is not this zone object with its default read hosts`,
      );
    }
    for (const other of config.zones) {
      allowed(other.namespace, `the backend of zone ${other.zone}`);
      await requireRegistered(trust, other.cluster, other.namespace, `the backend of zone ${other.zone}`);
    }
    // The pods of the VMAuths that serve the VMUser (vm/vmauth-pods.ts), scraped with no credential; reload
    // evidence always required (bestEffort is a spec document's choice, never a record's).
    const { pods: _ignored, reloadEvidence: _recorded, ...rest } = config;
    balancers.push({ ...rest, reloadEvidence: 'required' });
  }
  await requireRegistered(trust, recorded.vmagentsCluster, own, 'the VMAgents writing to the zone');
  // The queue check is the one evidence that a rolled-back zone's data came back: a record cannot turn it off.
  if ((recorded.vmagents ?? []).length === 0) {
    throw refuse(
      "it turns the queue check off (no vmagents) and no Rollout's spec document names this zone to say so; check the zone's vmagent queues, then restore its reads by hand",
    );
  }
  // Evidence settings come from the holder's spec document or the defaults, never from a record: the default
  // grace period, the zone's default remote-write host names.
  return {
    reads: readsRecord(balancers),
    drainGracePeriod: defaultDrainGracePeriod,
    vmagents: recorded.vmagents,
    vmagentsCluster: recorded.vmagentsCluster,
    vminsertHosts: undefined,
  };
}

/**
 * What the reconciler may act on for `zone` of the zone object at `place`, held by `holder`: rebuilt from the
 * holder's spec document when its Rollout (`progress`) names this object, else `recorded` once every field passed
 * its check. Throws RecordRefusedError.
 */
export async function trustedReads(
  trust: RecordTrust,
  place: ZonePlace,
  zone: string,
  holder: RolloutIdentity,
  progress: RolloutProgress | undefined,
  recorded: TrustedReads | undefined,
): Promise<TrustedSettings> {
  const refuse = (why: string) => new RecordRefusedError(place, zone, holder, why);
  const count = recorded === undefined ? 0 : recordedBalancers(recorded.reads).length;
  if (count > maxReadBalancers) {
    throw refuse(`it names ${count} read balancers; a zone has at most ${maxReadBalancers} read balancers`);
  }
  // Whoever the record names as holder must be a Rollout that may act on the zone's namespace at all.
  const [holderNamespace = ''] = holder.rollout.split('/');
  if (!namespaceAllowed(trust.allowance, holderNamespace, place.ref.namespace)) {
    throw refuse(
      `a Rollout in namespace ${holderNamespace} may not act on namespace ${place.ref.namespace} (--allowed-namespaces)`,
    );
  }
  try {
    const rebuilt =
      progress === undefined ? undefined : rebuiltFromSpec(trust, place, zone, holder, progress);
    if (rebuilt !== undefined) return rebuilt;
    if (recorded === undefined) {
      throw refuse(
        'its lease predates vmzones state format 1 and no Rollout names the zone: restore its reads by hand',
      );
    }
    return await checkedRecord(trust, place, zone, holder, recorded);
  } catch (err) {
    if (err instanceof RecordRefusedError) throw err;
    if (err instanceof ClusterRegistryError || err instanceof NamespaceAllowanceError) {
      throw refuse(err.message);
    }
    throw err;
  }
}

/**
 * Throws RecordRefusedError unless every record on the zone object (handoff, lease, rollback record) that names its
 * object names this one, with this uid: a record copied from another zone object (or left from an earlier object
 * of this name) is never acted on. Records of earlier builds name no object and pass.
 */
export function requireRecordsOfThisObject(
  place: ZonePlace,
  zone: string,
  holder: RolloutIdentity,
  object: KubeObject,
): void {
  const state = zoneState(object);
  const records: [string, ZoneIdentity | undefined][] = [
    ['handoff', state.handoff?.object],
    ['lease', state.lease?.object],
    ['rollback record', state.rollback?.object],
  ];
  for (const [what, recorded] of records) {
    const problem = recordObjectProblem(what, recorded, object);
    if (problem !== undefined) throw new RecordRefusedError(place, zone, holder, problem);
  }
}

/** What finishZone works from: the zone's handoff with everything it acts on rebuilt or checked. */
export interface HandoffTrustDeps {
  kube: KubeObjects;
  clusters: Pick<ClusterClients, 'registration'>;
  records: { allowance: NamespaceAllowance; zoneCluster: string | undefined };
}

/** The handoff of the zone object read at `ref` (`object`), made trustworthy (or undefined when there is none). */
export async function trustedHandoff(
  deps: HandoffTrustDeps,
  ref: ObjectRef,
  object: KubeObject,
  handoff: Handoff | undefined,
): Promise<(Handoff & Pick<TrustedSettings, 'budget'>) | undefined> {
  if (handoff === undefined) return undefined;
  requireRecordsOfThisObject(
    { ref, cluster: deps.records.zoneCluster },
    handoff.zone,
    handoff.holder,
    object,
  );
  const progress = await holderProgress(deps.kube, handoff.holder);
  const fields = await trustedReads(
    { allowance: deps.records.allowance, clusters: deps.clusters },
    { ref, cluster: deps.records.zoneCluster },
    handoff.zone,
    handoff.holder,
    progress,
    {
      reads: handoff.reads,
      drainGracePeriod: handoff.drainGracePeriod,
      vmagents: handoff.vmagents,
      vmagentsCluster: handoff.vmagentsCluster,
      vminsertHosts: handoff.vminsertHosts,
    },
  );
  const { vmagents, vmagentsCluster, vminsertHosts, ...rest } = handoff;
  return {
    ...rest,
    ...storedFields(fields),
    ...(fields.budget === undefined ? {} : { budget: fields.budget }),
  };
}

/** Says once per zone and problem why a record was refused: a Warning event on the zone's object and a log line. */
export class RefusalReporter {
  readonly #said = new Map<string, string>();
  readonly #logger: Logger;
  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** `kube`: the zone object's cluster; undefined when it cannot be reached (then the log line only). */
  async report(kube: KubeObjects | undefined, refusal: RecordRefusedError, now: Date): Promise<void> {
    const id = `${refusal.place.cluster ?? ''}|${refusal.place.ref.kind}|${namespacedName(refusal.place.ref)}`;
    if (this.#said.get(id) === refusal.message) return;
    this.#said.set(id, refusal.message);
    this.#logger.warn('reconciler: refused a zone record', {
      vmcluster: namespacedName(refusal.place.ref),
      ...(refusal.place.cluster === undefined ? {} : { cluster: refusal.place.cluster }),
      zone: refusal.zone,
      code: refusal.code,
      problem: refusal.message,
    });
    if (kube === undefined) return;
    await emitZoneEvent(
      kube,
      this.#logger,
      {
        reason: 'ZoneRecordRefused',
        action: 'Reconcile',
        note: refusal.message,
        holder: refusal.holder,
        zone: refusal.zone,
        cluster: refusal.place.ref,
        detail: refusal.message,
        zoneObjectOnly: true,
      },
      now,
    );
  }
}
