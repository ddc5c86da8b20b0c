// A gate over a wave (issue 24): the analysis step `vmzones render` writes for a wave passes its zones as one arg,
// `zone: "zone-b,zone-c"`. Each zone is read as its own gate (its own config, its own state between readings), and
// the wave passes only when every zone has its evidence; a failure, or a wait, names the zone.

import type { GateReading } from './gate-reading.ts';

/** The zones of a gate config's `zone` arg: several when it lists a wave (comma-separated), else undefined. */
export function waveZonesOf(raw: unknown): string[] | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const zone = (raw as { zone?: unknown }).zone;
  if (typeof zone !== 'string' || !zone.includes(',')) return undefined;
  return zone.split(',').map((z) => z.trim());
}

/** The state a zone's reading left in the wave's state, for its next reading. */
export function zoneStateIn(state: unknown, zone: string): unknown {
  if (typeof state !== 'object' || state === null) return undefined;
  return (state as Record<string, unknown>)[zone];
}

/** Reads every zone (one after another: the zones share the API server and the vmagents' pods) and sums up. */
export async function readWave(
  zones: readonly string[],
  readZone: (zone: string) => Promise<GateReading>,
): Promise<GateReading> {
  const readings: { zone: string; reading: GateReading }[] = [];
  for (const zone of zones) readings.push({ zone, reading: await readZone(zone) });
  const say = (list: typeof readings) =>
    list.map(({ zone, reading }) => `zone ${zone}: ${reading.message}`).join('; ');
  const failing = readings.filter(({ reading }) => reading.verdict === 'fail');
  const waiting = readings.filter(({ reading }) => reading.verdict === 'wait');
  const states = readings.filter(({ reading }) => reading.state !== undefined);
  const verdict = failing.length > 0 ? 'fail' : waiting.length > 0 ? 'wait' : 'pass';
  const message =
    verdict === 'fail'
      ? `${failing.map(({ zone }) => `zone ${zone}`).join(', ')} of wave ${zones.join(', ')} failed: ${say(failing)}`
      : verdict === 'wait'
        ? `wave ${zones.join(', ')}: waiting for ${waiting.map(({ zone }) => `zone ${zone}`).join(', ')}: ${say(waiting)}`
        : `wave ${zones.join(', ')}: every zone passed: ${say(readings)}`;
  return {
    verdict,
    message,
    figures: { zones: Object.fromEntries(readings.map(({ zone, reading }) => [zone, reading.figures])) },
    ...(states.length === 0
      ? {}
      : { state: Object.fromEntries(states.map(({ zone, reading }) => [zone, reading.state])) }),
    timeoutMs: Math.max(...readings.map(({ reading }) => reading.timeoutMs)),
    pollMs: Math.min(...readings.map(({ reading }) => reading.pollMs)),
    // Worth waiting for in the call only when every waiting zone is counting its evidence.
    ...(waiting.length > 0 &&
      waiting.every(({ reading }) => reading.evidenceDueInMs !== undefined) && {
        evidenceDueInMs: Math.max(...waiting.map(({ reading }) => reading.evidenceDueInMs ?? 0)),
      }),
  };
}
