// --observe-address and --observe-cache-ttl from the plugin's args: loopback unless a host is given, clear errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ObserveFlagError, parseObserveAddress, parseObserveFlags } from '../../../plugin/observe/flags.ts';

test('no flag: no endpoint; other arguments are ignored', () => {
  assert.deepEqual(parseObserveFlags(['--max-semi-space-size=1', 'x']), {
    address: undefined,
    cacheTtlMs: 10_000,
  });
});

test('addresses: a bare port or :port binds loopback; a host or [IPv6] is taken as given', () => {
  assert.deepEqual(parseObserveAddress('9464'), { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(parseObserveAddress(':9464'), { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(parseObserveAddress('0.0.0.0:9464'), { host: '0.0.0.0', port: 9464 });
  assert.deepEqual(parseObserveAddress('[::1]:9465'), { host: '::1', port: 9465 });
  assert.deepEqual(parseObserveFlags(['--observe-address=:1', '--observe-cache-ttl', '1.5s']), {
    address: { host: '127.0.0.1', port: 1 },
    cacheTtlMs: 1500,
  });
});

test('bad values and unknown observe flags are errors naming the flag', () => {
  for (const bad of ['', 'localhost', '1.2.3.4:', '1.2.3.4:70000', 'a:b:9464']) {
    assert.throws(
      () => parseObserveAddress(bad),
      (err: Error) => err instanceof ObserveFlagError && /--observe-address/.test(err.message),
      bad,
    );
  }
  assert.throws(() => parseObserveFlags(['--observe-address']), {
    code: 'FlagInvalid',
    message: /--observe-address/,
  });
  assert.throws(() => parseObserveFlags(['--observe-cache-ttl', '10']), {
    code: 'FlagInvalid',
    message: /--observe-cache-ttl/,
  });
  assert.throws(() => parseObserveFlags(['--observe-port', '1']), {
    code: 'FlagInvalid',
    message: /--observe-port/,
  });
});
