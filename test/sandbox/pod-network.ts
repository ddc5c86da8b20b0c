// The sandbox's pod network: a network namespace of its own (`ip netns`) joined to this machine by a veth pair
// on a private /30, whose namespace-side address is the address the zone clusters' Pods get (the sandbox's
// zonePodNetwork option). kube-apiserver refuses to proxy to loopback and link-local Pod IPs, so a Pod reached
// through the pod proxy subresource needs another address; test traffic may go only to loopback or to addresses
// inside network namespaces the test run creates, so the sandbox makes one. The data plane's ports are forwarded
// from that address inside the namespace to the processes on loopback (test/env/kube/internal/vmsim/podnet.go).
//
// Names carry the owner: namespace `vmzones-pods-<owner pid>-<index>`, host-side veth `vzp<index>h`, namespace
// side `vzp<index>n`. The index picks the /30 (10.201.0.0/16 holds 16384 of them) and is claimed atomically by
// creating the host-side veth (the kernel refuses a second link of the same name). A namespace whose owner died
// (SIGKILL of a test) is removed by the next sandbox start (pruneStalePodNetworks).

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { StartError } from './processes.ts';

export interface PodNetwork {
  /** `ip netns` name; /run/netns/<netns> is what a process setns(2)s into. */
  netns: string;
  ownerPid: number;
  index: number;
  hostVeth: string;
  podVeth: string;
  /** The /30, e.g. "10.201.3.4/30". */
  subnet: string;
  /** The host side of the veth: the route to the namespace. Nothing listens or is connected to here. */
  hostAddress: string;
  /** The namespace side: the Pods' address, where the data plane's ports are forwarded. */
  podAddress: string;
}

export const podNetnsPrefix = 'vmzones-pods-';
const netnsName = new RegExp(`^${podNetnsPrefix}(\\d+)-(\\d+)$`);
/** 10.201.0.0/16: private (RFC 1918), not link-local; split into /30s, one per pod network. */
const rangeBase = ipv4ToNumber('10.201.0.0');
export const podNetworkRange = '10.201.0.0/16';
const subnetCount = 1 << 14;

export function ipv4ToNumber(address: string): number {
  const parts = address.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new Error(`not an IPv4 address: "${address}"`);
  }
  return parts.reduce((n, p) => n * 256 + p, 0);
}

function numberToIpv4(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

/** Whether an IPv4 address lies in a CIDR block. */
export function inSubnet(address: string, cidr: string): boolean {
  const [base = '', bits = '32'] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  const start = Math.floor(ipv4ToNumber(base) / size) * size;
  const n = ipv4ToNumber(address);
  return n >= start && n < start + size;
}

function overlaps(a: string, b: string): boolean {
  const [baseA = '', bitsA = '32'] = a.split('/');
  const [baseB = '', bitsB = '32'] = b.split('/');
  return Number(bitsA) <= Number(bitsB) ? inSubnet(baseB, a) : inSubnet(baseA, b);
}

/** The /30 of pod network `index`: .1 on the host side, .2 in the namespace. */
export function podSubnet(index: number): Pick<PodNetwork, 'subnet' | 'hostAddress' | 'podAddress'> {
  if (!Number.isInteger(index) || index < 0 || index >= subnetCount) {
    throw new Error(`pod network index ${index} is outside 0..${subnetCount - 1}`);
  }
  const network = rangeBase + index * 4;
  return {
    subnet: `${numberToIpv4(network)}/30`,
    hostAddress: numberToIpv4(network + 1),
    podAddress: numberToIpv4(network + 2),
  };
}

/** Loopback (127.0.0.0/8, ::1, localhost) or inside one of the pod networks' subnets. */
export function addressAllowed(host: string, podNetworks: readonly Pick<PodNetwork, 'subnet'>[]): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost' || bare === '::1') return true;
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(bare)) return false;
  return inSubnet(bare, '127.0.0.0/8') || podNetworks.some((p) => inSubnet(bare, p.subnet));
}

interface IpResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

function ip(args: string[]): IpResult {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  return { ok: r.status === 0, stdout: r.stdout ?? '', stderr: (r.stderr ?? String(r.error ?? '')).trim() };
}

function mustIp(args: string[]): string {
  const r = ip(args);
  if (!r.ok) throw new StartError('pod network', `ip ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** Why a pod network cannot be made here, or undefined when it can. */
export function podNetworkUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) {
    return `creating a network namespace needs root (this process runs as uid ${process.getuid?.()})`;
  }
  if (!ip(['-V']).ok)
    return 'iproute2\'s "ip" is not installed (node test/env/build.ts installs it with apt)';
  return undefined;
}

/** IPv4 blocks this machine already has addresses or routes in (any table): a pod network must not overlap one. */
function machineBlocks(): string[] {
  const routes = JSON.parse(mustIp(['-4', '-j', 'route', 'show', 'table', 'all']) || '[]') as {
    dst?: string;
  }[];
  const addresses = JSON.parse(mustIp(['-4', '-j', 'addr', 'show']) || '[]') as {
    addr_info?: { local?: string; prefixlen?: number }[];
  }[];
  return [
    ...routes
      .map((r) => r.dst ?? '')
      .filter((d) => /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(d))
      .map((d) => (d.includes('/') ? d : `${d}/32`)),
    ...addresses.flatMap((a) => (a.addr_info ?? []).map((i) => `${i.local}/${i.prefixlen ?? 32}`)),
  ];
}

/**
 * Creates a pod network owned by `ownerPid`: namespace, veth pair, addresses, links up. Fails saying why when it
 * cannot (not root, no `ip`, every /30 taken); what it made is removed again on failure.
 */
export function createPodNetwork(ownerPid = process.pid): PodNetwork {
  const unavailable = podNetworkUnavailable();
  if (unavailable !== undefined) {
    throw new StartError(
      'pod network',
      `${unavailable}: the zone clusters' Pods need an address inside a network namespace of the sandbox's own`,
    );
  }
  const taken = machineBlocks();
  for (let attempt = 0; attempt < subnetCount; attempt++) {
    const index = (ownerPid + attempt) % subnetCount;
    const addresses = podSubnet(index);
    if (taken.some((block) => overlaps(block, addresses.subnet) && block !== '0.0.0.0/0')) continue;
    const net: PodNetwork = {
      netns: `${podNetnsPrefix}${ownerPid}-${index}`,
      ownerPid,
      index,
      hostVeth: `vzp${index}h`,
      podVeth: `vzp${index}n`,
      ...addresses,
    };
    mustIp(['netns', 'add', net.netns]);
    const claimed = ip([
      'link',
      'add',
      net.hostVeth,
      'type',
      'veth',
      'peer',
      'name',
      net.podVeth,
      'netns',
      net.netns,
    ]);
    if (!claimed.ok) {
      ip(['netns', 'del', net.netns]);
      if (/exists/i.test(claimed.stderr)) continue; // another sandbox holds this /30
      throw new StartError('pod network', `ip link add ${net.hostVeth} failed: ${claimed.stderr}`);
    }
    try {
      mustIp(['addr', 'add', `${net.hostAddress}/30`, 'dev', net.hostVeth]);
      mustIp(['link', 'set', net.hostVeth, 'up']);
      mustIp(['-n', net.netns, 'addr', 'add', `${net.podAddress}/30`, 'dev', net.podVeth]);
      mustIp(['-n', net.netns, 'link', 'set', net.podVeth, 'up']);
      mustIp(['-n', net.netns, 'link', 'set', 'lo', 'up']);
    } catch (error) {
      removePodNetwork(net);
      throw error;
    }
    return net;
  }
  throw new StartError(
    'pod network',
    `every /30 of ${podNetworkRange} is taken or overlaps this machine's routes`,
  );
}

/** The namespace's path for setns(2) (test/env/kube/internal/vmsim/podnet.go). */
export function netnsPath(net: Pick<PodNetwork, 'netns'>): string {
  return `/run/netns/${net.netns}`;
}

/**
 * Removes the veth pair (from inside the namespace, so only this namespace's link is touched) and the namespace.
 * Deleting the link drops both addresses at once even while a process still holds a socket in the namespace.
 */
export function removePodNetwork(net: Pick<PodNetwork, 'netns' | 'podVeth'>): void {
  if (!existsSync(netnsPath(net))) return;
  ip(['-n', net.netns, 'link', 'del', net.podVeth]);
  ip(['netns', 'del', net.netns]);
}

/** Removes the pod networks whose owner process is gone; returns their names. */
export function pruneStalePodNetworks(ownerAlive: (pid: number) => boolean): string[] {
  if (podNetworkUnavailable() !== undefined) return [];
  const removed: string[] = [];
  for (const line of ip(['netns', 'list']).stdout.split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const match = netnsName.exec(name);
    if (match === null || ownerAlive(Number(match[1]))) continue;
    removePodNetwork({ netns: name, podVeth: `vzp${match[2]}n` });
    removed.push(name);
  }
  return removed;
}
