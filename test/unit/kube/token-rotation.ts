// The check both token-file forms share (in-cluster service account, kubectl's `tokenFile`): the token in use is the
// file's, a new token written to the file is not read within the minute, and is read after it (client-node's
// token-file authenticator re-reads every 60 s, as client-go does; it reads the time from Date, which the test fakes).

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import type { TestContext } from 'node:test';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { fakeClockStart } from '../fake-clock.ts';
import type { ApiServerFixture } from './api-server-fixture.ts';

/** `connect` builds the client after Date is faked (the authenticator's first read is then at the fake start). */
export async function assertTokenFileFollowed(
  t: TestContext,
  api: ApiServerFixture,
  connect: () => KubeObjects,
  tokenFile: string,
  tokens: { first: string; next: string },
): Promise<void> {
  t.mock.timers.enable({ apis: ['Date'], now: fakeClockStart });
  const kube = connect();
  await kube.list('v1', 'Pod', 'vm');
  assert.equal(api.requests.at(-1)?.token, tokens.first);
  api.tokens.add(tokens.next);
  writeFileSync(tokenFile, tokens.next);
  await kube.list('v1', 'Pod', 'vm');
  assert.equal(api.requests.at(-1)?.token, tokens.first, 'not read again within the minute');
  t.mock.timers.tick(61_000);
  await kube.list('v1', 'Pod', 'vm');
  assert.equal(api.requests.at(-1)?.token, tokens.next, 'read again after the minute');
}
