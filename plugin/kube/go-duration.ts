// Go's time.ParseDuration / Duration.String: Kubernetes and Argo Rollouts objects (metav1.Duration) and VictoriaMetrics
// users write durations in Go's syntax ("30s", "1m30s", "500ms"), and the controller parses what we return the same way.

import { CodedError } from '../goplugin/failure-codes.ts';

const unitNanos: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n,
  μs: 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const maxNanos = (1n << 63n) - 1n;

export class GoDurationError extends CodedError {
  constructor(input: string, why: string) {
    super('SpecInvalid', `invalid duration ${JSON.stringify(input)}: ${why}`);
    this.name = 'GoDurationError';
  }
}

/** Parses a Go duration string into nanoseconds (exactly, as a bigint). */
export function parseGoDuration(input: string): bigint {
  let rest = input;
  let sign = 1n;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest[0] === '-' ? -1n : 1n;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0n;
  if (rest === '') throw new GoDurationError(input, 'empty');
  let total = 0n;
  // µ and μ as escapes: one character above U+00FF in the bundle makes V8 hold all its source text at two bytes
  // a character (scripts/build.ts).
  const part = /^(\d*)(?:\.(\d*))?([a-z\u00b5\u03bc]+)/;
  while (rest !== '') {
    const m = part.exec(rest);
    if (!m || (m[1] === '' && (m[2] === undefined || m[2] === ''))) {
      throw new GoDurationError(input, 'expected a number followed by a unit (ns, us, ms, s, m, h)');
    }
    const unit = unitNanos[m[3] ?? ''];
    if (unit === undefined) throw new GoDurationError(input, `unknown unit ${JSON.stringify(m[3])}`);
    const whole = BigInt(m[1] || '0');
    const fraction = m[2] ?? '';
    let nanos = whole * unit;
    if (fraction !== '') {
      const scale = 10n ** BigInt(fraction.length);
      nanos += (BigInt(fraction) * unit) / scale;
    }
    total += nanos;
    if (total > maxNanos) throw new GoDurationError(input, 'out of range');
    rest = rest.slice(m[0].length);
  }
  return sign * total;
}

/** Milliseconds as a JS number; convenient for timers. */
export function parseGoDurationMs(input: string): number {
  return Number(parseGoDuration(input) / 1_000_000n);
}

/** Formats nanoseconds the way Go's Duration.String does ("1m30s", "500ms", "0s"). */
export function formatGoDuration(nanos: bigint): string {
  if (nanos === 0n) return '0s';
  const negative = nanos < 0n;
  let u = negative ? -nanos : nanos;
  let out: string;
  if (u < 1_000_000_000n) {
    const [unit, div] = u < 1_000n ? ['ns', 1n] : u < 1_000_000n ? ['µs', 1_000n] : ['ms', 1_000_000n];
    out = fixed(u, div) + unit;
  } else {
    const hours = u / 3_600_000_000_000n;
    u -= hours * 3_600_000_000_000n;
    const minutes = u / 60_000_000_000n;
    u -= minutes * 60_000_000_000n;
    out = `${fixed(u, 1_000_000_000n)}s`;
    if (hours > 0n || minutes > 0n) out = `${minutes}m${out}`;
    if (hours > 0n) out = `${hours}h${out}`;
  }
  return negative ? `-${out}` : out;
}

function fixed(value: bigint, divisor: bigint): string {
  const whole = value / divisor;
  const fraction = value % divisor;
  if (fraction === 0n) return whole.toString();
  const digits = divisor.toString().length - 1;
  return `${whole}.${fraction.toString().padStart(digits, '0').replace(/0+$/, '')}`;
}
