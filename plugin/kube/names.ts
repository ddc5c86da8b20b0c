// The Kubernetes name rules (apimachinery validation: DNS-1123 labels and subdomains) as zod schemas, so that
// every document vmzones reads (the spec document, gate configs) checks names the way the API server will.

import { z } from 'zod';

/** A DNS-1123 label: namespaces, zone names, container port names. */
export const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A DNS-1123 subdomain: most object names, host names. */
export const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The name of a namespaced object (VMCluster, Secret, VMAgent ...). */
export const objectNameSchema = z
  .string()
  .max(253)
  .regex(dns1123Subdomain, 'must be a Kubernetes object name (lowercase letters, digits, "-" and ".")');

export const namespaceNameSchema = z.string().max(63).regex(dns1123Label, 'must be a namespace name');

/** A DNS label used as a name of our own (a zone). */
export const dnsLabelSchema = (what: string) =>
  z.string().max(63).regex(dns1123Label, `must be ${what} (a DNS label: lowercase letters, digits, "-")`);

export const hostNameSchema = z
  .string()
  .max(253)
  .regex(dns1123Subdomain, 'must be a host name (lowercase letters, digits, "-" and ".")');
