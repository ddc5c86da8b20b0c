// API errors become KubeErrors whose text can reach step messages, events and logs: what the API server quotes
// back from a refused request (an invalid URL with its password, a token) must not survive into that text.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { toKubeError } from '../../../plugin/kube/objects.ts';

const refused = JSON.stringify({
  kind: 'Status',
  message:
    'VMUser.operator.victoriametrics.com "vmauth-read" is invalid: spec.targetRefs[0].static.url: Invalid value: "http://reader:s3cret@vmselect:8481/select?authKey=k3y": bad, bearer_token: t0ken',
  code: 422,
});

test('an API server refusal that quotes credentials keeps its meaning and loses the credentials', () => {
  const error = toKubeError(
    new ApiException(422, 'Unprocessable Entity', refused, {}),
    'patching VMUser vm/vmauth-read',
  );
  assert.equal(error.kind, 'invalid');
  for (const secret of ['s3cret', 'k3y', 't0ken', 'reader:'])
    assert.ok(!error.message.includes(secret), error.message);
  assert.match(
    error.message,
    /^patching VMUser vm\/vmauth-read: HTTP 422: .*spec\.targetRefs\[0\]\.static\.url: Invalid value/,
  );
  assert.match(error.message, /http:\/\/\*\*\*@vmselect:8481\/select\?authKey=\*\*\*/);
});

test('a transport error naming a URL with user info is redacted too', () => {
  const error = toKubeError(
    new Error('connect ECONNREFUSED for https://admin:pw@10.0.0.1:6443/apis'),
    'listing VMCluster',
  );
  assert.equal(error.kind, 'unavailable');
  assert.ok(!error.message.includes('admin:pw'), error.message);
  assert.match(error.message, /https:\/\/\*\*\*@10\.0\.0\.1:6443/);
});

test('a kind the API server does not serve (its CRD not installed) is notFound, as a 404 is, not a retry', () => {
  // The message @kubernetes/client-node throws when discovery lists the group without the kind.
  const error = toKubeError(
    new Error('Unrecognized API version and kind: operator.victoriametrics.com/v1beta1 VMSingle'),
    'listing VMSingle in vm',
  );
  assert.equal(error.kind, 'notFound');
  assert.equal(error.status, 404);
  assert.match(error.message, /^listing VMSingle in vm: the API server serves no such kind/);
});
