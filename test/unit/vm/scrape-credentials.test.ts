// Scrape credentials' Secrets are read once per TTL, not per scrape (issue 38), and a rotated one is picked up by
// the TTL or at once when a scrape with the old value is refused — without a value ever showing in an error.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { inspect } from 'node:util';
import type { ClusterRegistration } from '../../../plugin/kube/cluster-registration.ts';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { ScrapeError, scrapeMetrics } from '../../../plugin/vm/scrape.ts';
import {
  resolveScrapeAccess,
  ScrapeSecretCache,
  SecretRefError,
  scrapeSecretTtlMs,
} from '../../../plugin/vm/scrape-credentials.ts';
import { FakeClock } from '../fake-clock.ts';
import { MemoryKube, secret } from '../kube/memory-kube.ts';

const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A /metrics page behind basic auth; `password.now` is the one it accepts. */
async function pageWithPassword(password: { now: string }): Promise<string> {
  const server = createServer((request, response) => {
    const expected = `Basic ${Buffer.from(`scraper:${password.now}`).toString('base64')}`;
    if (request.headers.authorization !== expected) {
      response.statusCode = 401;
      response.end('unauthorized');
      return;
    }
    response.end('vm_app_version{version="v1"} 1\n');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
}

const basicAuth = { basicAuth: { username: 'scraper', password: { name: 'scrape-auth', key: 'password' } } };
const secretGets = (kube: MemoryKube) => kube.reads.filter((read) => read.startsWith('Secret ')).length;

function setup(password = 'first-pw') {
  const clock = new FakeClock();
  const cache = new ScrapeSecretCache({ now: () => clock.now().getTime() });
  const kube = new MemoryKube().put(secret('vm', 'scrape-auth', { password }));
  const resolve = (on: KubeObjects = kube) =>
    resolveScrapeAccess(on, 'vm', 'http', undefined, basicAuth, cache);
  return { clock, cache, kube, resolve };
}

test('an unchanged Secret is read once per TTL, however many scrapes use it', async () => {
  const { clock, kube, resolve } = setup();
  for (let round = 0; round < 10; round++) {
    const access = await resolve();
    assert.deepEqual(access.auth, { kind: 'basic', username: 'scraper', password: 'first-pw' });
    await clock.sleep(1_500);
  }
  assert.equal(secretGets(kube), 1, '10 rounds 1.5 s apart within the TTL: one GET');
  clock.advance(scrapeSecretTtlMs);
  await resolve();
  assert.equal(secretGets(kube), 2, 'past the TTL: read again');
});

test('the zones of a wave resolving the same credentials at once make one GET', async () => {
  const { kube, resolve } = setup();
  const accesses = await Promise.all(Array.from({ length: 8 }, () => resolve()));
  assert.equal(secretGets(kube), 1);
  assert.ok(accesses.every((access) => access.auth?.kind === 'basic'));
});

test('a rotated password is read again as soon as a scrape with the old one gets HTTP 401', async () => {
  const { kube, resolve } = setup('first-pw');
  const password = { now: 'first-pw' };
  const url = await pageWithPassword(password);
  const scrape = async () => {
    const access = await resolve();
    return scrapeMetrics({ url, ...(access.auth === undefined ? {} : { auth: access.auth }) }, [
      'vm_app_version',
    ]);
  };
  assert.equal((await scrape()).samples.length, 1);

  // The password is rotated: the Secret and the server change; the cached value is now refused.
  kube.put(secret('vm', 'scrape-auth', { password: 'second-pw' }));
  password.now = 'second-pw';
  await assert.rejects(
    scrape(),
    (error) =>
      error instanceof ScrapeError &&
      error.status === 401 &&
      !error.message.includes('first-pw') &&
      !error.message.includes('second-pw'),
  );
  assert.equal(secretGets(kube), 1, 'the refused scrape used the cached Secret');
  // No time passed (fake clock): only the refusal makes the next scrape read the Secret again.
  assert.equal((await scrape()).samples.length, 1);
  assert.equal(secretGets(kube), 2);
  assert.equal((await scrape()).samples.length, 1);
  assert.equal(secretGets(kube), 2, 'the new value is kept again');
});

test('a rotated Secret whose old value still works is picked up when the TTL runs out', async () => {
  const { clock, kube, resolve } = setup('first-pw');
  await resolve();
  kube.put(secret('vm', 'scrape-auth', { password: 'second-pw' }));
  clock.advance(scrapeSecretTtlMs - 1);
  assert.equal(secretGets(kube), 1);
  const before = await resolve();
  assert.deepEqual(before.auth, { kind: 'basic', username: 'scraper', password: 'first-pw' });
  clock.advance(2);
  assert.deepEqual((await resolve()).auth, { kind: 'basic', username: 'scraper', password: 'second-pw' });
});

test('a TLS connection that fails drops the TLS Secret (a rotated CA or client certificate)', async () => {
  const clock = new FakeClock();
  const cache = new ScrapeSecretCache({ now: () => clock.now().getTime() });
  const kube = new MemoryKube().put(secret('vm', 'scrape-tls', { 'ca.crt': 'not a CA' }));
  const resolve = () =>
    resolveScrapeAccess(kube, 'vm', 'https', { ca: { name: 'scrape-tls', key: 'ca.crt' } }, undefined, cache);
  const access = await resolve();
  await resolve();
  assert.equal(secretGets(kube), 1);
  // Nothing listens on port 1 of loopback: the connection fails.
  await assert.rejects(
    scrapeMetrics({ url: 'https://127.0.0.1:1/metrics', ...(access.tls ? { tls: access.tls } : {}) }, []),
    (error) =>
      error instanceof ScrapeError && error.kind === 'connect' && !error.message.includes('not a CA'),
  );
  await resolve();
  assert.equal(secretGets(kube), 2);
});

test('Secrets are kept per cluster: the same name in another cluster is its own read', async () => {
  const { cache } = setup();
  const hub = new MemoryKube().put(secret('vm', 'scrape-auth', { password: 'hub-pw' }));
  const zone = new MemoryKube().put(secret('vm', 'scrape-auth', { password: 'zone-pw' }));
  const registration = { name: 'zone-b', server: 'https://zone-b.example:6443' } as ClusterRegistration;
  const inZone: KubeObjects = {
    get: (ref) => zone.get(ref),
    list: (...args) => zone.list(...args),
    mergePatch: (...args) => zone.mergePatch(...args),
    create: (object) => zone.create(object),
    registration,
  };
  const read = (kube: KubeObjects) => resolveScrapeAccess(kube, 'vm', 'http', undefined, basicAuth, cache);
  assert.deepEqual((await read(hub)).auth, { kind: 'basic', username: 'scraper', password: 'hub-pw' });
  assert.deepEqual((await read(inZone)).auth, { kind: 'basic', username: 'scraper', password: 'zone-pw' });
  assert.deepEqual((await read(hub)).auth, { kind: 'basic', username: 'scraper', password: 'hub-pw' });
  assert.equal(secretGets(hub), 1);
  assert.equal(secretGets(zone), 1);
});

test('a failed read is not kept, and no error or view of the cache shows a value', async () => {
  const { cache, kube, resolve } = setup('hunter2-value');
  kube.objects.clear();
  await assert.rejects(
    resolve(),
    (error) =>
      error instanceof SecretRefError &&
      /Secret vm\/scrape-auth key "password": the Secret does not exist/.test(error.message),
  );
  kube.put(secret('vm', 'scrape-auth', { other: 'hunter2-value' }));
  await assert.rejects(
    resolve(),
    (error) =>
      error instanceof SecretRefError &&
      error.message === 'Secret vm/scrape-auth key "password": the Secret has no such key' &&
      !error.message.includes('hunter2'),
  );
  kube.put(secret('vm', 'scrape-auth', { password: 'hunter2-value' }));
  assert.deepEqual((await resolve()).auth, { kind: 'basic', username: 'scraper', password: 'hunter2-value' });
  assert.equal(cache.size, 1);
  for (const shown of [
    inspect(cache, { depth: 10, showHidden: true }),
    JSON.stringify(cache),
    String(cache),
  ]) {
    assert.ok(!shown.includes('hunter2'), `the cache shows a value: ${shown}`);
    assert.ok(!shown.includes(Buffer.from('hunter2-value').toString('base64')), shown);
  }
});
