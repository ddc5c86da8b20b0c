// The address the zone clusters' Pods get with the sandbox's zonePodNetwork option: kube-apiserver refuses to
// proxy to loopback and link-local Pod IPs, so a Pod reached through the pod proxy subresource needs an address
// of a real interface. The sandbox has no Pod network of its own: it takes the machine's first non-loopback IPv4
// address that is up, and the data plane listens there beside loopback.

import { networkInterfaces } from 'node:os';
import { StartError } from './processes.ts';

export function machinePodAddress(): string {
  for (const addresses of Object.values(networkInterfaces())) {
    const found = addresses?.find(
      (a) => a.family === 'IPv4' && !a.internal && !a.address.startsWith('169.254.'),
    );
    if (found !== undefined) return found.address;
  }
  throw new StartError(
    'pod network',
    'this machine has no non-loopback IPv4 address that is up: the zone clusters cannot give their Pods an ' +
      'address kube-apiserver proxies to (it refuses loopback), so the pod proxy path cannot be tested here',
  );
}
