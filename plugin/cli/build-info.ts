// The package version and the Node range the package declares (package.json `engines.node`). scripts/build.ts
// injects both into the bundle; run from source (tests, `node plugin/main.ts`) they are read from package.json.

import { readFileSync } from 'node:fs';

declare const VMZONES_VERSION: string | undefined;
declare const VMZONES_NODE_ENGINE: string | undefined;

interface PackageInfo {
  version: string;
  nodeEngine: string;
}

function fromPackageJson(): PackageInfo {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  const { version, engines } = pkg as { version?: unknown; engines?: { node?: unknown } };
  if (typeof version !== 'string' || typeof engines?.node !== 'string')
    throw new Error('package.json has no version or engines.node');
  return { version, nodeEngine: engines.node };
}

export const buildInfo: PackageInfo =
  typeof VMZONES_VERSION === 'string' && typeof VMZONES_NODE_ENGINE === 'string'
    ? { version: VMZONES_VERSION, nodeEngine: VMZONES_NODE_ENGINE }
    : fromPackageJson();
