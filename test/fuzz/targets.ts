// The fuzz targets: each takes one input and either returns or throws. A throw is a finding. Bad input must
// end in the module's own error (GobError, MetricsTextError, a yamux session closed with a reason), and the
// result must not depend on how the bytes were chunked (each module promises that), so every target runs
// the input once in one piece and once split at places derived from the input, and compares.
// Bundled with coverage counters by coverage-fuzz.ts; also imported directly by the unit tests of findings.

import { Duplex } from 'node:stream';
import { isDeepStrictEqual } from 'node:util';
import { GobDecoder, GobError } from '../../plugin/goplugin/gob/index.ts';
import { YamuxSession, type YamuxStream } from '../../plugin/goplugin/yamux.ts';
import { MetricsTextError, MetricsTextParser } from '../../plugin/vm/metrics-text.ts';
import { gobToCanonicalJson } from '../fixtures/gob-json.ts';

/** Split points derived from the input's bytes, so a saved input reproduces exactly. */
function chunks(data: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let seed = data.length;
  for (let i = 0; i < Math.min(data.length, 64); i++) seed = (seed * 31 + data[i]!) >>> 0;
  for (let p = 0; p < data.length; ) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const n = 1 + (seed % 97);
    out.push(data.subarray(p, p + n));
    p += n;
  }
  return out;
}

class Finding extends Error {
  override name = 'Finding';
}

function gobRun(parts: readonly Uint8Array[]): unknown[] {
  const d = new GobDecoder({ maxMessageBytes: 1 << 20, maxTypes: 2000 });
  const out: unknown[] = [];
  try {
    for (const part of parts) {
      d.push(part);
      for (let v = d.next(); v !== undefined; v = d.next()) out.push(gobToCanonicalJson(v));
    }
    out.push({ buffered: d.bufferedBytes });
  } catch (err) {
    if (!(err instanceof GobError)) throw new Finding(`gob decoder threw a non-GobError: ${String(err)}`);
    out.push({ error: err.kind });
  }
  return out;
}

export function fuzzGob(data: Uint8Array): void {
  const whole = gobRun([data]);
  const split = gobRun(chunks(data));
  if (!isDeepStrictEqual(whole, split)) {
    throw new Finding(`gob decoder: chunked input decodes differently\n${show(whole)}\nvs\n${show(split)}`);
  }
}

function yamuxRun(parts: readonly Uint8Array[]): unknown[] {
  const events: unknown[] = [];
  const transport = new Duplex({
    read() {},
    write(chunk: Uint8Array, _encoding, done) {
      events.push({ sent: Buffer.from(chunk).toString('hex') });
      done();
    },
  });
  const session = new YamuxSession(transport, {
    onStream: (stream: YamuxStream) => {
      events.push({ stream: stream.id });
      stream.setReceiver({
        data: (chunk) => events.push({ data: stream.id, bytes: Buffer.from(chunk).toString('hex') }),
        end: () => events.push({ end: stream.id }),
        reset: () => events.push({ reset: stream.id }),
      });
    },
    onClose: (reason) => events.push({ closed: reason.kind }),
  });
  for (const part of parts) transport.emit('data', part);
  events.push({ open: session.openStreamCount, closed: session.closed });
  return events;
}

export function fuzzYamux(data: Uint8Array): void {
  const whole = yamuxRun([data]);
  const split = yamuxRun(chunks(data));
  // Data may arrive in different pieces; compare the bytes per stream and the other events in order.
  if (!isDeepStrictEqual(normalize(whole), normalize(split))) {
    throw new Finding(`yamux: chunked input handled differently\n${show(whole)}\nvs\n${show(split)}`);
  }
}

/**
 * What must not depend on chunking: each stream's bytes, the other events in order, and the frames sent back
 * except window updates (credit is returned once half a window was handed over, so its amount and moment
 * follow the chunks, as in Go).
 */
function normalize(events: unknown[]): unknown {
  const data = new Map<number, string>();
  const other: unknown[] = [];
  let sent = '';
  for (const e of events) {
    const cur = e as { data?: number; bytes?: string; sent?: string };
    if (cur.data !== undefined) data.set(cur.data, (data.get(cur.data) ?? '') + cur.bytes);
    else if (cur.sent !== undefined) sent += cur.sent;
    else other.push(e);
  }
  const frames: string[] = [];
  const bytes = Buffer.from(sent, 'hex');
  for (let p = 0; p + 12 <= bytes.length; ) {
    const type = bytes[p + 1]!;
    const length = bytes.readUInt32BE(p + 8);
    const end = p + 12 + (type === 0 ? length : 0);
    if (type !== 1) frames.push(bytes.subarray(p, end).toString('hex'));
    p = end;
  }
  return { data: [...data], other, frames };
}

const keep = ['vmagent_remotewrite_pending_data_bytes', 'vm_persistentqueue_bytes_pending', 'up', 'a_bucket'];

function metricsRun(parts: readonly Uint8Array[]): unknown {
  const parser = new MetricsTextParser({ keep, maxLineBytes: 4096, maxSamples: 1000 });
  try {
    for (const part of parts) parser.push(part);
    const r = parser.end();
    return { samples: r.samples, lines: r.lines, bytes: r.bytes, malformed: r.malformedSkippedLines };
  } catch (err) {
    if (!(err instanceof MetricsTextError)) {
      throw new Finding(`metrics parser threw a non-MetricsTextError: ${String(err)}`);
    }
    return { error: err.message };
  }
}

export function fuzzMetricsText(data: Uint8Array): void {
  const whole = metricsRun([data]);
  const split = metricsRun(chunks(data));
  if (!isDeepStrictEqual(whole, split)) {
    throw new Finding(`metrics parser: chunked input parses differently\n${show(whole)}\nvs\n${show(split)}`);
  }
}

function show(v: unknown): string {
  const s = JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x));
  return s.length > 600 ? `${s.slice(0, 600)}…` : s;
}

export const targets = { gob: fuzzGob, yamux: fuzzYamux, metrics: fuzzMetricsText } as const;
