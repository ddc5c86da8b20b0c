// Reload evidence rules of issue 21 (items 3 and 7): clock skew, a pod started after the write, a failed reload
// named. Each against vmauthReloadEvidence with /metrics pages served on loopback.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { vmauthReloadEvidence } from '../../../plugin/vm/vmauth-reload.ts';
import { MemoryKube, readyPod } from '../kube/memory-kube.ts';
import { servePage } from './page-server.ts';

const since = new Date('2026-05-01T12:00:00.400Z');
const sinceSeconds = Math.floor(since.getTime() / 1000);
const selection = { namespace: 'vm', labelSelector: 'app=vmauth', port: 'http' };

function page(reload: { successful: number; at: number; start: number }): string {
  return [
    'vm_app_version{version="vmauth-v1.151.0",short_version="v1.151.0"} 1',
    `vmauth_config_last_reload_successful ${reload.successful}`,
    `vmauth_config_last_reload_success_timestamp_seconds ${reload.at}`,
    'vmauth_config_last_reload_errors_total 0',
    `process_start_time_seconds ${reload.start}`,
    '',
  ].join('\n');
}

async function kubeWith(pages: string[]): Promise<MemoryKube> {
  const kube = new MemoryKube();
  let index = 0;
  for (const text of pages) {
    kube.put(readyPod('vm', `vmauth-${index++}`, { app: 'vmauth' }, { http: await servePage(text) }));
  }
  return kube;
}

test('clock skew: a stamp equal to the one seen before the write is no proof, even when it reads as after the write', async () => {
  // vmauth's clock runs 4 s ahead: its old load (before the write) is stamped 2 s after the write by our clock.
  for (const skewed of [sinceSeconds + 1, sinceSeconds + 2]) {
    const kube = await kubeWith([page({ successful: 1, at: skewed, start: 1000 })]);
    const baseline = {
      v: 1 as const,
      at: since.toISOString(),
      pods: { 'vm/vmauth-0': { stamp: skewed, start: 1000 } },
    };
    const evidence = await vmauthReloadEvidence(kube, selection, since, baseline);
    assert.equal(
      evidence.state,
      'waiting',
      `stamp ${skewed - sinceSeconds} s after the write: ${evidence.message}`,
    );
    assert.match(evidence.message, /shows the load it showed before the write/);
    // One second newer from the same process is a new load.
    const newer = await vmauthReloadEvidence(
      await kubeWith([page({ successful: 1, at: skewed + 1, start: 1000 })]),
      selection,
      since,
      baseline,
    );
    assert.equal(newer.state, 'reloaded', newer.message);
  }
});

test('a pod started after the write proves its start-up load when it reads the written object itself', async () => {
  const started = page({ successful: 1, at: sinceSeconds + 20, start: sinceSeconds + 19 });
  const direct = await vmauthReloadEvidence(await kubeWith([started]), selection, since, undefined, {
    startupLoadProves: true,
  });
  assert.equal(direct.state, 'reloaded', direct.message);
  assert.equal(direct.pods[0]?.evidence, 'startedAfterWrite');
  // Through a VMUser the operator renders the Secret later: a start-up load may still read the old rendering.
  const rendered = await vmauthReloadEvidence(await kubeWith([started]), selection, since);
  assert.equal(rendered.state, 'waiting', rendered.message);
  // Started within the stamp lag of the write (a clock ahead could put a start before it there): no proof.
  const tooClose = await vmauthReloadEvidence(
    await kubeWith([page({ successful: 1, at: sinceSeconds + 1, start: sinceSeconds + 1 })]),
    selection,
    since,
    undefined,
    { startupLoadProves: true },
  );
  assert.equal(tooClose.state, 'waiting', tooClose.message);
});

test('a replica whose reload failed is named, even behind three other waiting pods', async () => {
  const old = page({ successful: 1, at: sinceSeconds - 30, start: 1000 });
  const kube = await kubeWith([
    old,
    old,
    old,
    old,
    page({ successful: 0, at: sinceSeconds - 30, start: 1000 }),
  ]);
  const evidence = await vmauthReloadEvidence(kube, selection, since);
  assert.equal(evidence.state, 'waiting');
  assert.match(evidence.message, /last reload failed on vm\/vmauth-4/);
  assert.match(evidence.message, /vm\/vmauth-4: its last config reload failed/);
});
