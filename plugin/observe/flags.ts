// The observe endpoint's flags, read from the plugin's `args` in argo-rollouts-config (after the bundle path):
//   --observe-address [HOST]:PORT   serve /metrics, /healthz, /status there; HOST defaults to 127.0.0.1 (loopback).
//                                   Absent: no endpoint. Each plugin entry (vmzones/step, vmzones/gates) is its own
//                                   process and needs its own port.
//   --observe-cache-ttl DURATION    how long one listing of Rollouts and VMClusters serves scrapes (Go duration,
//                                   default 10s, at least 1s).
// Other arguments are left to their owners.

import { CodedError } from '../goplugin/failure-codes.ts';
import { parseGoDurationMs } from '../kube/go-duration.ts';
import { defaultSnapshotTtlMs } from './zone-snapshot.ts';

export interface ObserveFlags {
  /** undefined: the endpoint is off. */
  address: { host: string; port: number } | undefined;
  cacheTtlMs: number;
}

export class ObserveFlagError extends CodedError {
  constructor(message: string) {
    super('FlagInvalid', message);
    this.name = 'ObserveFlagError';
  }
}

export const defaultObserveHost = '127.0.0.1';

/** 127.0.0.0/8, ::1 and localhost: only the pod itself reaches an endpoint bound there. */
export function isLoopbackHost(host: string): boolean {
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === '::1' || host === 'localhost';
}

/** The shortest --observe-cache-ttl: whoever can reach the endpoint must not turn scrapes into a list storm. */
export const minObserveCacheTtlMs = 1_000;

/** `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT`; no host means loopback. Port 0 picks a free one (tests). */
export function parseObserveAddress(value: string): { host: string; port: number } {
  const match =
    /^(?:\[(?<v6>[0-9a-fA-F:.]+)\]|(?<host>[^:[\]]*)):(?<port>\d{1,5})$/.exec(value) ??
    /^(?<port>\d{1,5})$/.exec(value);
  const port = Number(match?.groups?.port);
  if (match === null || port > 65535) {
    throw new ObserveFlagError(
      `--observe-address ${JSON.stringify(value)}: expected [HOST]:PORT, e.g. 127.0.0.1:9464 or :9464 (loopback)`,
    );
  }
  return { host: match.groups?.v6 ?? (match.groups?.host || defaultObserveHost), port };
}

export function parseObserveFlags(argv: readonly string[]): ObserveFlags {
  const flags: ObserveFlags = { address: undefined, cacheTtlMs: defaultSnapshotTtlMs };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('--observe-')) continue;
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    let value = eq < 0 ? argv[i + 1] : arg.slice(eq + 1);
    if (eq < 0) i++;
    if (value === undefined || (eq < 0 && value.startsWith('--'))) {
      throw new ObserveFlagError(`${name}: missing value`);
    }
    value = value.trim();
    switch (name) {
      case '--observe-address':
        flags.address = parseObserveAddress(value);
        break;
      case '--observe-cache-ttl': {
        let ms: number;
        try {
          ms = parseGoDurationMs(value);
        } catch (err) {
          throw new ObserveFlagError(
            `--observe-cache-ttl ${JSON.stringify(value)}: ${(err as Error).message}`,
          );
        }
        if (ms < minObserveCacheTtlMs) {
          throw new ObserveFlagError(
            `--observe-cache-ttl ${JSON.stringify(value)}: must be at least ${minObserveCacheTtlMs / 1000}s ` +
              '(each listing reads every Rollout and VMCluster; a shorter TTL lets scrapes load the API server)',
          );
        }
        flags.cacheTtlMs = ms;
        break;
      }
      default:
        throw new ObserveFlagError(`${name}: unknown flag (known: --observe-address, --observe-cache-ttl)`);
    }
  }
  return flags;
}
