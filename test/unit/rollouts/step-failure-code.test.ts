// A step call that throws (a fault the controller records as Error and retries) reports the error's failure code
// to the RPC observer, so that the observe layer counts retried faults by code as well as Failed steps.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GobInterface } from '../../../plugin/goplugin/gob/index.ts';
import { KubeError } from '../../../plugin/kube/objects.ts';
import type { RpcCallEvent } from '../../../plugin/rollouts/rpc-observer.ts';
import type { ServiceHooks } from '../../../plugin/rollouts/service-replies.ts';
import { stepService } from '../../../plugin/rollouts/step-service.ts';

test('a thrown step call reports its failure code to the observer; a returned result reports none', async () => {
  const events: RpcCallEvent[] = [];
  const fault = async () => {
    throw new KubeError('unavailable', 'reading VMCluster vm/vm-zone-a: HTTP 503', 503);
  };
  const service = stepService(
    {
      init: async () => {},
      run: fault,
      abort: async () => ({ phase: 'Successful', status: {} }),
      terminate: fault,
      type: () => 'vmzones/step',
    },
    {} as ServiceHooks,
    { call: (event) => events.push(event) },
  );
  const args = (name: string) =>
    new GobInterface(name, { Rollout: {}, Context: { PluginName: 'vmzones/step' } });
  await service.Run?.(args('step.RunArgs'));
  await service.Abort?.(args('step.AbortArgs'));
  assert.deepEqual(
    events.map((e) => [e.method, e.outcome, e.kind === 'step' ? e.thrown : 'not a step event']),
    [
      ['Run', 'error', 'ApiTransient'],
      ['Abort', 'Successful', undefined],
    ],
  );
});
