// The soak's endings and fault injectors, each one call on the one sandbox: the real `kubectl argo rollouts` for
// abort and promote, new revisions and reverts through the step harness's Rollout objects, SIGKILLs through the
// reliability suite's helpers (test/e2e/reliability/support.ts killStepPlugin, the sandbox's crashController), data
// plane restarts as crashes.test.ts restarts vmauth (SIGKILL; the data plane starts the process again on its next
// resync), API faults through the fault proxy (test/sandbox/fault-proxy.ts). The ledger keeps what the invariants
// must know about the soak's own hand: when vmauth was down (reads counted apart), which samples vmagent could not
// take (counted apart), which generations the soak's foreign edits made (not vmzones' changes).

import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObjects } from '../../plugin/kube/objects.ts';
import { vmApiVersion } from '../../plugin/vm/vmcluster.ts';
import { faultControl, killStepPlugin } from '../e2e/reliability/support.ts';
import { eventually, ns, rolloutObject, stepsFor } from '../e2e/step/harness.ts';
import { type FaultControl, faultKinds } from '../sandbox/fault-proxy.ts';
import type { Sandbox } from '../sandbox/helper.ts';
import { loadgenStatus } from '../sandbox/loadgen-client.ts';
import { vmagentName, vmauthName } from '../sandbox/manifests.ts';
import { pidsRunning } from '../sandbox/processes.ts';
import { zoneObservation } from './observe.ts';
import { type SoakRollout, soakSpec, soakZones } from './topology.ts';
import { vmagentOutageSeqs } from './vmagent-outage.ts';

/** How long a restarted data-plane process may take to answer /health again (the data plane resyncs ≤ 15 s). */
const restartDeadlineMs = 60_000;

export class FaultLedger {
  /** Injected vmauth restarts: from the SIGKILL until vmauth answered again (+ a second for its first load). */
  readonly vmauthDown: { from: number; to: number | undefined }[] = [];
  /** Sequence numbers of the load generator's stream sent while vmagent was down (or buffered in it when killed). */
  readonly vmagentSeqs: { from: number; to: number }[] = [];
  readonly foreign: Record<string, number[]> = {};
  /** Faults injected, by kind. */
  readonly injected: Record<string, number> = {};

  count(kind: string, n = 1): void {
    this.injected[kind] = (this.injected[kind] ?? 0) + n;
  }

  vmauthRestartingSince(since: number): boolean {
    return this.vmauthDown.some((w) => w.to === undefined || w.to >= since);
  }
}

export class Injectors {
  readonly sandbox: Sandbox;
  readonly kube: KubeObjects;
  readonly ledger = new FaultLedger();
  readonly control: FaultControl;
  /** The object of each Rollout's stable revision, applied again verbatim for a revert or a re-creation. */
  readonly stable = new Map<SoakRollout, object>();
  /** The object last applied per Rollout. */
  readonly applied = new Map<SoakRollout, object>();

  constructor(sandbox: Sandbox, kube: KubeObjects) {
    this.sandbox = sandbox;
    this.kube = kube;
    this.control = faultControl(sandbox);
  }

  /** A new revision of `rollout` walking `value` through its zones (the steps `vmzones render` writes, no pauses). */
  async commit(rollout: SoakRollout, value: string | undefined): Promise<void> {
    const spec = soakSpec(rollout, value);
    const object = rolloutObject(rollout, spec, stepsFor(spec, 'none'));
    await this.sandbox.kubectl.apply([object]);
    this.applied.set(rollout, object);
  }

  /** After a settle: a Rollout whose current revision is its stable one makes the last applied object stable. */
  markStable(rollout: SoakRollout): void {
    const object = this.applied.get(rollout);
    if (object !== undefined) this.stable.set(rollout, object);
  }

  abort(rollout: SoakRollout): Promise<string> {
    return this.sandbox.rollouts(['abort', rollout, '-n', ns]);
  }

  promoteFull(rollout: SoakRollout): Promise<string> {
    return this.sandbox.rollouts(['promote', '--full', rollout, '-n', ns]);
  }

  /** The stable template applied again: a rollback for Argo Rollouts, which skips every step (a Git revert). */
  async revertToStable(rollout: SoakRollout): Promise<void> {
    const object = this.stable.get(rollout);
    if (object === undefined) throw new Error(`no stable revision of ${rollout} recorded`);
    await this.sandbox.kubectl.apply([object]);
    this.applied.set(rollout, object);
  }

  /** The Rollout deleted (waiting until it is gone), then created again from its stable revision's object. */
  async deleteAndRecreate(rollout: SoakRollout): Promise<void> {
    await this.sandbox.kubectl.run(['delete', 'rollout', rollout, '-n', ns, '--wait=true', '--timeout=120s']);
    await this.revertToStable(rollout);
  }

  killPlugin(): number {
    const pids = killStepPlugin(this.sandbox).length;
    this.ledger.count('plugin SIGKILL', pids > 0 ? 1 : 0);
    return pids;
  }

  async crashController(): Promise<void> {
    await this.sandbox.crashController();
    this.ledger.count('controller SIGKILL');
  }

  async #restart(binary: string, url: string, what: string): Promise<number> {
    const pids = pidsRunning(binary, this.sandbox.state.stateDir);
    if (pids.length === 0) throw new Error(`no ${what} process of this sandbox runs`);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    const started = Date.now();
    await eventually(
      `${what} to answer /health again after its SIGKILL`,
      async () =>
        (await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) }).then(
          (r) => r.ok,
          () => false,
        ))
          ? true
          : undefined,
      restartDeadlineMs,
      250,
    );
    return Date.now() - started;
  }

  async restartVmauth(): Promise<number> {
    const window: { from: number; to: number | undefined } = { from: Date.now(), to: undefined };
    this.ledger.vmauthDown.push(window);
    try {
      return await this.#restart(
        this.sandbox.state.binaries.vmauth,
        this.sandbox.endpoint('VMAuth', vmauthName).url,
        'vmauth',
      );
    } finally {
      // Its first config load follows /health within a second.
      await sleep(1000);
      window.to = Date.now();
      this.ledger.count('vmauth restart');
    }
  }

  async restartVmagent(): Promise<number> {
    const before = (await loadgenStatus(this.sandbox)).lastSeq;
    try {
      return await this.#restart(
        this.sandbox.state.binaries.vmagent,
        this.sandbox.endpoint('VMAgent', vmagentName).url,
        'vmagent',
      );
    } finally {
      // What vmagent had not yet written to its on-disk queue, and every batch refused until it accepts again.
      this.ledger.vmagentSeqs.push(
        await vmagentOutageSeqs(
          before,
          async () => (await loadgenStatus(this.sandbox)).lastSeq,
          () => sleep(500),
        ),
      );
      this.ledger.count('vmagent restart');
    }
  }

  /**
   * Someone else (field manager `someone-else`) edits the VMCluster of a zone that is out of reads and in
   * maintenance (changing a zone that serves reads would fail reads by the soak's own hand), guarded by its
   * resourceVersion so that a zone restored meanwhile is not edited. Waits up to `waitMs` for such a zone.
   * Returns the zone and the value it set, or undefined when no zone was out of reads.
   */
  async foreignEdit(
    walkedField: boolean,
    value: string,
    routed: () => Promise<string[]>,
    waitMs = 60_000,
  ): Promise<{ zone: string; value: string | undefined } | undefined> {
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      const clusters = await this.kube.list(vmApiVersion, 'VMCluster', ns);
      const serving = await routed();
      for (const zone of soakZones) {
        const object = clusters.find((c) => c.metadata.name === `vm-${zone}`);
        if (object === undefined || serving.includes(zone) || !zoneObservation(zone, object).maintenance)
          continue;
        const spec = walkedField
          ? { vmstorage: { extraArgs: { 'search.latencyOffset': value } } }
          : { vmselect: { extraArgs: { 'search.maxQueryDuration': value } } };
        try {
          const out = await this.sandbox.kubectl.run([
            'patch',
            'vmcluster',
            `vm-${zone}`,
            '-n',
            ns,
            '--type=merge',
            '--field-manager=someone-else',
            '-o',
            'json',
            '-p',
            JSON.stringify({ metadata: { resourceVersion: object.metadata.resourceVersion }, spec }),
          ]);
          const generation = (JSON.parse(out) as { metadata: { generation: number } }).metadata.generation;
          this.ledger.foreign[zone] = [...(this.ledger.foreign[zone] ?? []), generation];
          this.ledger.count('foreign edit');
          return { zone, value: walkedField ? value : undefined };
        } catch {
          // Changed meanwhile (409): look again.
        }
      }
      await sleep(1000);
    }
    return undefined;
  }

  /** The plugin processes' API requests fail at `rate` from now on (any fault kind, before or after applying). */
  async startApiFaults(rate: number, seed: number): Promise<void> {
    await this.control.set({
      seed,
      hangMs: 10_000,
      rules: [{ faults: [...faultKinds], rate, when: 'either' }],
    });
  }

  /** Ends API faults; returns how many were injected since `startApiFaults`. */
  async stopApiFaults(faultsBefore: number): Promise<number> {
    await this.control.clear();
    const injected = (await this.control.stats()).faultsTotal - faultsBefore;
    this.ledger.count('API faults (requests failed)', injected);
    return injected;
  }
}
