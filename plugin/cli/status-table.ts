// Drawing `vmzones status`: a header line about the Rollout, then one row per zone in walk order, kubectl-style
// (left-aligned columns, two spaces apart). Plain ASCII, so it looks the same in any terminal, log or CI job.
// The zone being walked is marked `>>` with a progress bar of its steps (and, under --watch on a terminal, a
// spinner); walked zones `ok`, zones whose steps were passed over (promote --full) `--`, zones no step walks `!!`.

import { driftMessage } from '../observe/zone-states.ts';
import type { RolloutStatus, ZoneStatus } from './status-model.ts';

export interface TableOptions {
  /** Times (`since`) are shown as ages from this instant. */
  now: Date;
  /** `-o wide`: the zone's object (kind, namespace/name), observed generation, lease revision, AnalysisRun, messages unshortened. */
  wide?: boolean;
  /** Spinner frame for the current zone (--watch on a terminal); undefined draws none. */
  frame?: number;
  /** Terminal width: the message column is cut to fit (not with wide). */
  columns?: number;
}

const spinner = ['|', '/', '-', '\\'];

/** kubectl's age style: 45s, 3m12s, 2h5m, 3d4h. */
export function age(from: string | undefined, now: Date): string {
  if (from === undefined) return '-';
  const ms = now.getTime() - Date.parse(from);
  if (!Number.isFinite(ms)) return '?';
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : ''}`;
  if (s < 86_400)
    return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? `${Math.floor((s % 3600) / 60)}m` : ''}`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600) ? `${Math.floor((s % 86_400) / 3600)}h` : ''}`;
}

/** 0B, 512B, 12.3KiB, 4.0MiB. */
export function bytes(n: number): string {
  if (n < 1024) return `${n}B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)}${units[unit]}`;
}

function marker(zone: ZoneStatus): string {
  switch (zone.walk) {
    case 'current':
      return '>>';
    case 'done':
      return 'ok';
    case 'skipped':
      return '--';
    case 'unwalked':
      return '!!';
    default:
      return '';
  }
}

function progressCell(zone: ZoneStatus, frame: number | undefined): string {
  const p = zone.progress;
  if (p === undefined) return '-';
  const bar = `[${'#'.repeat(p.done)}${'-'.repeat(Math.max(0, p.total - p.done))}]`;
  if (zone.walk !== 'current') return bar;
  const spin = frame === undefined ? '' : ` ${spinner[frame % spinner.length]}`;
  return `${bar} ${p.doing ?? '?'}${spin}`;
}

function gateCell(zone: ZoneStatus): string {
  const g = zone.gate;
  if (g === undefined) return '-';
  const parts = [g.phase];
  if (g.pendingBytes !== undefined) parts.push(bytes(g.pendingBytes));
  if (g.rounds !== undefined) parts.push(`${g.rounds.good}/${g.rounds.required ?? '?'}`);
  else if (g.readings !== undefined) parts.push(`${g.readings}r`);
  return parts.join(' ');
}

function messageCell(zone: ZoneStatus): string {
  const text = (zone.message ?? '').replace(/\s+/g, ' ').trim();
  // A drifted zone says what it lacks and how to walk it, which says more than whose change it holds.
  const note =
    zone.drift !== undefined
      ? driftMessage(zone.drift)
      : zone.notChangedBy === undefined
        ? undefined
        : `not changed by revision ${zone.notChangedBy}`;
  if (note === undefined) return text || '-';
  return text === '' ? note : `${note}; ${text}`;
}

function leaseCell(zone: ZoneStatus, status: RolloutStatus, wide: boolean): string {
  const lease = zone.lease;
  if (lease === undefined) return '-';
  const own = lease.rollout === `${status.namespace}/${status.rollout}`;
  const who = own ? lease.rollout.split('/')[1] : lease.rollout;
  return wide ? `${who}@${lease.revision || '?'}` : (who ?? lease.rollout);
}

function cut(text: string, width: number): string {
  if (text.length <= width) return text;
  return width <= 3 ? text.slice(0, width) : `${text.slice(0, width - 3)}...`;
}

export function headerLine(status: RolloutStatus): string {
  const revision =
    status.revision === undefined
      ? 'revision ?'
      : status.stableRevision !== undefined && status.stableRevision !== status.revision
        ? `revision ${status.revision} (stable ${status.stableRevision})`
        : `revision ${status.revision}`;
  const step =
    status.step.index >= status.step.total
      ? `all ${status.step.total} steps done`
      : `step ${status.step.index + 1}/${status.step.total} (${status.step.kind})`;
  const phase = `${status.phase ?? 'Unknown'}${status.message ? `: ${status.message}` : ''}`;
  return `Rollout ${status.namespace}/${status.rollout}  ${revision}  ${step}  ${phase}`;
}

/** The table, header line first, problems last; every line ends with '\n'. */
export function formatStatusTable(status: RolloutStatus, options: TableOptions): string {
  const wide = options.wide === true;
  const head = wide
    ? [
        '',
        'ZONE',
        'KIND',
        'OBJECT',
        'STEPS',
        'STATE',
        'SINCE',
        'GEN',
        'OBSERVED',
        'UPDATE',
        'ROUTED',
        'LEASE',
        'GATE',
        'ANALYSISRUN',
        'MESSAGE',
      ]
    : ['', 'ZONE', 'STEPS', 'STATE', 'SINCE', 'GEN', 'UPDATE', 'ROUTED', 'LEASE', 'GATE', 'MESSAGE'];
  const rows = status.zones.map((zone) => {
    const routed = zone.routed === undefined ? '?' : zone.routed ? 'yes' : 'no';
    const cells = {
      mark: marker(zone),
      zone: zone.zone,
      kind: zone.kind,
      vmcluster: `${zone.cluster === undefined ? '' : `${zone.cluster}:`}${zone.namespace}/${zone.vmcluster}`,
      steps: progressCell(zone, options.frame),
      state: zone.state,
      since: age(zone.since, options.now),
      gen: zone.generation === undefined ? '-' : String(zone.generation),
      observed: zone.observedGeneration === undefined ? '-' : String(zone.observedGeneration),
      update: zone.updateStatus ?? '-',
      routed,
      lease: leaseCell(zone, status, wide),
      gate: gateCell(zone),
      run: zone.gate?.analysisRun ?? '-',
      message: messageCell(zone),
    };
    return wide
      ? [
          cells.mark,
          cells.zone,
          cells.kind,
          cells.vmcluster,
          cells.steps,
          cells.state,
          cells.since,
          cells.gen,
          cells.observed,
          cells.update,
          cells.routed,
          cells.lease,
          cells.gate,
          cells.run,
          cells.message,
        ]
      : [
          cells.mark,
          cells.zone,
          cells.steps,
          cells.state,
          cells.since,
          cells.gen,
          cells.update,
          cells.routed,
          cells.lease,
          cells.gate,
          cells.message,
        ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => {
    const body = cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ');
    const trimmed = body.trimEnd();
    return !wide && options.columns !== undefined ? cut(trimmed, options.columns) : trimmed;
  };
  const lines = [
    line([headerLine(status)]),
    '',
    line(head),
    ...rows.map(line),
    ...healthLines(status, line),
    ...status.problems.map((p) => (wide ? `! ${p}` : line([`! ${p}`]))),
  ];
  return `${lines.join('\n')}\n`;
}

/** Each zone object's health as Argo CD shows it with vmzones' checks (docs/gitops.md, "Zone health in Argo CD"):
 *  the same verdict and sentence, from plugin/observe/zone-health.ts. */
function healthLines(status: RolloutStatus, line: (cells: string[]) => string): string[] {
  const rows = status.zones.flatMap((zone) =>
    zone.health === undefined ? [] : [[zone.zone, zone.health.status, zone.health.message]],
  );
  if (rows.length === 0) return [];
  const head = ['ZONE', 'HEALTH', 'HEALTH MESSAGE (as Argo CD shows the zone object)'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const aligned = (cells: string[]) =>
    line([cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')]);
  return ['', aligned(head), ...rows.map(aligned)];
}
