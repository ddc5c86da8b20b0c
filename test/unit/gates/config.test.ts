import assert from 'node:assert/strict';
import { test } from 'node:test';
import { explicitZoneObject, GateConfigError, parseGateConfig } from '../../../plugin/gates/config.ts';

test('values substituted from {{args.*}} arrive as strings and are read as numbers, booleans, durations', () => {
  assert.deepEqual(
    parseGateConfig({
      gate: 'vmagentQueueDrained',
      zone: 'zone-a',
      consecutiveRounds: '4',
      maxPendingDataBytes: '0',
      roundSpacing: '15s',
      ingestionExpected: 'false',
      timeout: '1h',
      pods: { port: '8429', scheme: 'https', tls: { insecureSkipVerify: 'true' } },
    }),
    {
      gate: 'vmagentQueueDrained',
      zone: 'zone-a',
      consecutiveRounds: 4,
      maxPendingDataBytes: 0,
      roundSpacing: 15_000,
      ingestionExpected: false,
      timeout: 3_600_000,
      pods: { port: 8429, scheme: 'https', tls: { insecureSkipVerify: true } },
    },
  );
});

test('every problem is listed with its field', () => {
  assert.throws(
    () =>
      parseGateConfig({
        gate: 'vmauthReloaded',
        since: 'yesterday',
        pods: {
          port: 70000,
          auth: { bearerToken: { name: 'tok' } },
          tls: { cert: { name: 'c', key: 'tls.crt' } },
        },
      }),
    (error) => {
      assert.ok(error instanceof GateConfigError);
      assert.deepEqual(error.problems, [
        'pods.port: must be a port number (at most 65535)',
        'pods.auth: must be {bearerToken: {name, key}} or {basicAuth: {username, password: {name, key}}}',
        'since: must be an RFC 3339 time such as 2026-05-01T12:00:00Z',
      ]);
      return true;
    },
  );
});

test('gate-specific rules: one of vmagent/vmagents; the drain gate paces itself by roundSpacing', () => {
  assert.throws(
    () => parseGateConfig({ gate: 'vmagentQueueDrained', vmagent: 'a', vmagents: ['b'], pollInterval: '5s' }),
    /vmagents: set vmagent or vmagents, not both; pollInterval: vmagentQueueDrained takes a reading every roundSpacing/,
  );
  assert.throws(
    () => parseGateConfig({ gate: 'vmauthReloaded', pods: { tls: { cert: { name: 'c', key: 'tls.crt' } } } }),
    /pods.tls: cert and key must be set together/,
  );
  assert.throws(() => parseGateConfig('zone-a'), { code: 'GateConfigInvalid', message: /\(config\)/ });
  assert.throws(() => parseGateConfig({ zone: 'zone-a' }), { code: 'GateConfigInvalid', message: /gate:/ });
});

test('a gate names at most one zone object, of any kind', () => {
  const ready = parseGateConfig({ gate: 'vmclusterReady', vmsingle: 'vm-b' });
  assert.deepEqual(explicitZoneObject(ready as never)?.kind.kind, 'VMSingle');
  assert.throws(
    () => parseGateConfig({ gate: 'vmagentQueueDrained', vmcluster: 'a', vlcluster: 'b' }),
    (error) => {
      assert.ok(error instanceof GateConfigError);
      assert.deepEqual(error.problems, ['vlcluster: set one of vmcluster, vlcluster, not several']);
      return true;
    },
  );
});
