// Every failure vmzones reports carries one of these codes: in the step status (`code`, beside `error`), in the
// `vmzones.io/failure-code` label of its warning events, in the gates' measurement metadata and in the observe
// failure counters. Users alert on them, so a code is never renamed or reused for another meaning; add new ones
// at the end of their group. docs/step-plugin.md ("Failure codes") says what to do about each; a unit test keeps
// that table, this list and test/unit/failure-codes.test.ts's literal copy the same.
//
// It lives in goplugin, the lowest layer, because every layer fails: the go-plugin transport (gob, yamux,
// net/rpc) as much as the zones, gates, observe and cli above it, and a layer may only import its own or lower.

export const failureCodes = {
  // The Rollout's spec document and step config, and the plugin's registration.
  SpecInvalid: "the Rollout's vmzones spec document or the step's config cannot be read or is invalid",
  NamespaceNotAllowed:
    'an object is in a namespace the plugin may not act in (--allowed-namespaces, --watch-namespaces)',
  ClusterUnusable: 'a zone names a cluster that is not registered, or whose cluster Secret cannot be used',
  FlagInvalid: "a plugin argument in argo-rollouts-config (or the observe endpoint's) is invalid",
  // The walk of a zone.
  LeaseHeld: "another Rollout holds the zone's lease",
  NotDrained: 'apply or restoreReads ran for a zone that drainReads has not drained for this revision',
  NotRouted: 'the read balancers do not route reads to the zone, so there is nothing to drain',
  LastServingZone: 'the zone is the last one serving reads through a balancer: draining it would stop reads',
  DrainBudget: 'other zones out of reads kept the zone from draining within readyTimeout',
  ReloadUnproven: 'vmauth did not prove it serves the changed read routing in time',
  ServesReads: 'the zone serves reads again (put back by hand or a sync), so its change is refused',
  OverridesRejected: "the API server rejects the zone's overrides (dry run); nothing was changed",
  OverridesPruned:
    "the API server would drop fields of the zone's overrides (unknown to the schema, or defaulted)",
  ZoneFailed:
    "the zone's object reports a failed update (a spec the operator cannot parse, or `failed` for 60 s)",
  ReadyTimeout: "the zone's object did not become operational within readyTimeout",
  QueueNotDrained: "the vmagent queues of the zone did not drain within the gate's timeout",
  DataLost: 'a vmagent dropped data on its way to the zone',
  RestoreUnrouted: 'the drained backends are back, yet no balancer routes reads to the zone',
  HandoffTimeout: 'the vmzones reconciler did not finish earlier work on the zone within 2 × readyTimeout',
  QueryMismatch:
    "the changed zone's answer to the query gate's query differs from a serving zone's beyond the tolerance",
  QueryUnanswered: 'the changed zone (or the serving zone) did not answer the query gate in time',
  ServingZoneBehind:
    'a zone that would keep serving reads was not current (writer queue not drained, storage read-only, not operational) within readyTimeout',
  // What vmzones reads back and validates.
  RecordRefused:
    'a vmzones record on a zone object names something it may not (record-trust); the zone is left as is',
  StateInvalid: 'a vmzones annotation on a zone object is malformed',
  ReadRoutingRefused:
    'a read balancer (VMUser, Secret, ConfigMap) cannot be edited safely; nothing was changed',
  VmagentSpecInvalid: "a VMAgent's remoteWrite cannot be matched to the zones",
  PodSelectionInvalid: 'the pod selector of vmauth or vmagent is empty or selects nothing usable',
  SecretRefInvalid: 'a scrape credential Secret reference cannot be used',
  ScrapeFailed: 'a metrics endpoint (vmauth, vmagent) could not be scraped',
  MetricsMalformed: 'a metrics endpoint answered with text that is not Prometheus exposition format',
  // The Kubernetes API.
  ObjectMissing: 'an object vmzones needs does not exist',
  Forbidden: 'the API server forbids a request (RBAC, 403)',
  ApiRejected: 'the API server rejects a request as invalid or an admission webhook refuses it (400, 422)',
  ApiTransient: 'the API server did not answer or answered 409, 429, 5xx; retried',
  // The gates (vmzones/gates).
  GateConfigInvalid: "a gate's config is invalid",
  GateSetupInvalid:
    "a gate cannot find its AnalysisRun, its Rollout's spec document, or its own stored state",
  ConditionInvalid: 'a successCondition or failureCondition cannot be parsed or evaluated',
  ConditionFailed: "the gate's failureCondition is true, or its conditions did not hold in time",
  // The plugin process and its wire to the controller.
  PluginStartFailed: 'the plugin process could not start (environment, socket)',
  ProtocolError: 'the controller and the plugin disagree on the wire (gob, yamux, net/rpc)',
  ConnectionClosed: 'the connection to the controller closed',
  // kubectl-vmzones.
  InputInvalid: 'kubectl-vmzones cannot read its input (a manifest, a spec document, a Rollout)',
  UsageInvalid: 'kubectl-vmzones was called with unknown or missing arguments',
  // None of the above: an error without a code is a bug of vmzones.
  Unexpected: 'an error vmzones did not expect; report it with the message',
} as const satisfies Record<string, string>;

export type FailureCode = keyof typeof failureCodes;

/** final: nothing changes until a human acts (fix a document, a grant, a balancer, the zone); retry: the walk, a
 *  retry of the rollout or the reconciler's next pass may succeed once time passes or another walk moves on. */
export type Finality = 'final' | 'retry';

/** Whether each code is final (docs/step-plugin.md "Failure codes", column "final"). A step fails on either; what
 *  differs is what follows: the reconciler keeps trying a zone whose failure may clear and says which need a human,
 *  and the message of a final failure names what to fix. */
export const failureFinality = {
  SpecInvalid: 'final',
  NamespaceNotAllowed: 'final',
  ClusterUnusable: 'final',
  FlagInvalid: 'final',
  LeaseHeld: 'retry',
  NotDrained: 'final',
  NotRouted: 'final',
  LastServingZone: 'final',
  DrainBudget: 'retry',
  ReloadUnproven: 'retry',
  ServesReads: 'final',
  OverridesRejected: 'final',
  OverridesPruned: 'final',
  ZoneFailed: 'final',
  ReadyTimeout: 'retry',
  QueueNotDrained: 'retry',
  DataLost: 'final',
  RestoreUnrouted: 'final',
  HandoffTimeout: 'retry',
  QueryMismatch: 'final',
  QueryUnanswered: 'retry',
  ServingZoneBehind: 'retry',
  RecordRefused: 'final',
  StateInvalid: 'final',
  ReadRoutingRefused: 'final',
  VmagentSpecInvalid: 'final',
  PodSelectionInvalid: 'final',
  SecretRefInvalid: 'final',
  ScrapeFailed: 'retry',
  MetricsMalformed: 'final',
  ObjectMissing: 'final',
  Forbidden: 'final',
  ApiRejected: 'final',
  ApiTransient: 'retry',
  GateConfigInvalid: 'final',
  GateSetupInvalid: 'final',
  ConditionInvalid: 'final',
  ConditionFailed: 'final',
  PluginStartFailed: 'final',
  ProtocolError: 'final',
  ConnectionClosed: 'retry',
  InputInvalid: 'final',
  UsageInvalid: 'final',
  Unexpected: 'final',
} as const satisfies Record<FailureCode, Finality>;

/** Whether a failure with this code needs a human before anything can change. */
export function isFinalCode(code: FailureCode): boolean {
  return failureFinality[code] === 'final';
}

export const failureCodeNames = Object.freeze(Object.keys(failureCodes) as FailureCode[]);

export function isFailureCode(value: unknown): value is FailureCode {
  return typeof value === 'string' && Object.hasOwn(failureCodes, value);
}

/** The base of every error class of vmzones: what failed, as a code users can alert on. */
export class CodedError extends Error {
  readonly code: FailureCode;
  constructor(code: FailureCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** The code of any thrown value; one without a code is `Unexpected`. */
export function failureCodeOf(err: unknown): FailureCode {
  return err instanceof CodedError ? err.code : 'Unexpected';
}
