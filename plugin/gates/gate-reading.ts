// What one reading of a gate produces, whatever the gate: the raw figures (Measurement.Value, and `result`
// for successCondition / failureCondition), the gate's own verdict, and how long the measurement may wait.

import type { FailureCode } from '../goplugin/failure-codes.ts';
import type { NamespaceAllowance } from '../kube/allowed-namespaces.ts';
import type { ClusterClients } from '../kube/cluster-registry.ts';
import type { KubeObjects } from '../kube/objects.ts';
import type { AnalysisRunView } from '../rollouts/types.ts';
import type { OwnerSpec } from './owner-spec.ts';

/** pass: the gate's evidence says yes; fail: it says no for good; wait: not yet. */
export type GateVerdict = 'pass' | 'fail' | 'wait';

export interface GateReading {
  readonly verdict: GateVerdict;
  readonly message: string;
  /** A JSON object of raw figures. */
  readonly figures: Record<string, unknown>;
  /** What the next reading of this measurement needs (kept in Measurement.Metadata). */
  readonly state?: unknown;
  /** How long the measurement may wait for `pass`, from its start. */
  readonly timeoutMs: number;
  /** When to take the next reading, from this one's start. */
  readonly pollMs: number;
  /**
   * The gate is counting evidence that is complete this long from now if the readings stay as they are (the drain
   * gate's remaining rounds): when that is within another in-call wait, the call takes them itself rather than
   * return, up to twice its in-call wait from its start.
   */
  readonly evidenceDueInMs?: number;
  /** Why the measurement fails if its timeout passes on this reading, when the gate tells several reasons apart
   *  (zoneAnswers: no answer, or a different one); default the gate's own timeout code (provider.ts). */
  readonly timeoutCode?: FailureCode;
}

export interface GateContext {
  /** The controller's own cluster (the AnalysisRun, its Rollout, and zones that name no cluster). */
  readonly kube: KubeObjects;
  /** The registered clusters of zones, vmauth and vmagents (docs/multicluster.md). */
  readonly clusters: Pick<ClusterClients, 'client' | 'registration'>;
  readonly run: AnalysisRunView;
  /** Milliseconds since the epoch at the start of this reading. */
  readonly now: number;
  /** The provider's clock (milliseconds since the epoch), for what a reading times itself (a query's latency). */
  readonly clock?: () => number;
  /** Namespaces beyond the AnalysisRun's own that the plugin's registration allows (kube/allowed-namespaces.ts). */
  readonly allowance: NamespaceAllowance;
  /** The owning Rollout's spec document, read on first use. */
  readonly ownerSpec: () => Promise<OwnerSpec>;
}
