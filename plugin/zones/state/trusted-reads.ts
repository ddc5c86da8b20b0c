// The fields of a zone's records (lease, rollback record, handoff) the reconciler acts on, and how a record stores
// them: state, below the moves that write them (hand-over) and the reconciler that checks them (record-trust).

import type { Handoff, Lease } from './zone-annotations.ts';

/** What the reconciler acts on for a zone: the fields a lease, rollback record or handoff carry. */
export interface TrustedReads {
  reads: NonNullable<Lease['reads']>;
  drainGracePeriod: string;
  vmagents: string[] | undefined;
  vmagentsCluster: string | undefined;
  vminsertHosts: string[] | undefined;
}

/** A record's fields to act on as a handoff or lease stores them: the optional ones only when present. */
export function storedFields(fields: TrustedReads): Pick<Handoff, keyof TrustedReads> {
  return {
    reads: fields.reads,
    drainGracePeriod: fields.drainGracePeriod,
    ...(fields.vmagents === undefined ? {} : { vmagents: fields.vmagents }),
    ...(fields.vmagentsCluster === undefined ? {} : { vmagentsCluster: fields.vmagentsCluster }),
    ...(fields.vminsertHosts === undefined ? {} : { vminsertHosts: fields.vminsertHosts }),
  };
}
