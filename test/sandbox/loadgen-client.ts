// Reading the load generator's sample stream back (test/sandbox/loadgen.ts): its /status figures, and which
// sequence numbers of series 0 a zone holds. Shared by the smoke test, the e2e tests and the benchmark.

import { fetchFrom } from './http.ts';
import type { SandboxState } from './sandbox.ts';

/** The load generator's /status (the fields the tests read). */
export interface LoadgenStatus {
  lastSeq: number;
  sent: number;
  failed: number;
  /** The last push's error ('' if none yet). */
  lastError: string;
}

export async function loadgenStatus(sandbox: { state: SandboxState }): Promise<LoadgenStatus> {
  const url = sandbox.state.loadgenUrl;
  if (url === undefined) throw new Error('the sandbox has no load generator');
  return (await (await fetchFrom('the load generator', url)).json()) as LoadgenStatus;
}

/** The sequence numbers of series 0 stored in the zone at `zoneUrl` (its export API). */
export async function exportedSeqs(zoneUrl: string, timeoutMs?: number): Promise<Set<number>> {
  const url = `${zoneUrl}/api/v1/export?match[]=${encodeURIComponent('vmzones_sandbox_seq{series="0"}')}`;
  const signal = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
  const text = await (await fetchFrom('a zone’s export API', url, signal ? { signal } : {})).text();
  const seqs = new Set<number>();
  for (const line of text.split('\n').filter(Boolean)) {
    for (const v of (JSON.parse(line) as { values: number[] }).values) seqs.add(v);
  }
  return seqs;
}

/** The `app` field (the log stream) of every line the load generator writes in its logs mode. */
export const logStream = 'vmzones-loadgen';

/** How many of the log lines `fromSeq..toSeq` a VictoriaLogs zone lacks, and how many it holds more than once. */
export interface LogLinesCheck {
  missing: number;
  duplicates: number;
}

/** The `seq` field of every load-generator line in `fromSeq..toSeq` stored in the victoria-logs at `zoneUrl`. */
export async function storedLogSeqs(
  zoneUrl: string,
  fromSeq: number,
  toSeq: number,
  timeoutMs = 10_000,
): Promise<number[]> {
  const query = `app:=${logStream} seq:range[${fromSeq}, ${toSeq}] | fields seq`;
  const url = `${zoneUrl}/select/logsql/query`;
  const response = await fetchFrom('a zone’s LogsQL query API', url, {
    method: 'POST',
    body: new URLSearchParams({ query }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}: ${text}`);
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => Number((JSON.parse(line) as { seq: string }).seq));
}

export function checkLogSeqs(seqs: number[], fromSeq: number, toSeq: number): LogLinesCheck {
  const seen = new Set<number>();
  let duplicates = 0;
  for (const seq of seqs) {
    if (seen.has(seq)) duplicates++;
    seen.add(seq);
  }
  let missing = 0;
  for (let seq = fromSeq; seq <= toSeq; seq++) if (!seen.has(seq)) missing++;
  return { missing, duplicates };
}
