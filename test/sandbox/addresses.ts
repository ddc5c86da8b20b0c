// Where test traffic may go: loopback (127.0.0.0/8, ::1) or an address inside a network namespace the test run
// made (test/sandbox/pod-network.ts). up() checks every address its state hands out (URLs, published addresses,
// Pod IPs, the data planes' endpoints) before returning, so a sandbox that would send traffic elsewhere fails to
// start instead of running.

import { addressAllowed, type PodNetwork } from './pod-network.ts';

const ipv4Literal = /(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])/g;
const urlHost = /\b(?:https?|wss?):\/\/(?:[^@/\s'"]*@)?(\[[^\]]+\]|[^/:\s'"?#]+)/g;
/** In-cluster Service names: the sandbox has no DNS; its data plane maps them to loopback processes (vmsim). */
const serviceName = /^[a-z0-9-]+(\.[a-z0-9-]+)*\.svc(\.cluster\.local)?$/;

/** Every IPv4 literal and URL host in the strings of `value` (walked deeply), each once. */
export function addressesIn(value: unknown): string[] {
  const found = new Set<string>();
  const visit = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const m of v.matchAll(ipv4Literal)) found.add(m[0]);
      for (const m of v.matchAll(urlHost)) found.add(m[1] ?? '');
    } else if (Array.isArray(v)) {
      v.forEach(visit);
    } else if (v !== null && typeof v === 'object') {
      Object.values(v).forEach(visit);
    }
  };
  visit(value);
  found.delete('');
  return [...found];
}

/** The addresses in `value` that are neither loopback nor inside one of `podNetworks` (nor a Service name). */
export function addressViolations(
  value: unknown,
  podNetworks: readonly Pick<PodNetwork, 'subnet'>[],
): string[] {
  return addressesIn(value).filter((a) => !addressAllowed(a, podNetworks) && !serviceName.test(a));
}
