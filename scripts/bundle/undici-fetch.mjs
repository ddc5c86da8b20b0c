// Bundled in place of undici's index where @kubernetes/client-node's Watch imports it (scripts/build.ts): its fetch
// alone, evaluated when the first watch loads the Watch (plugin/kube/kube-client.ts).

import fetchParts from 'undici/lib/web/fetch/index.js';

export const fetch = fetchParts.fetch;
