// Streaming parser for the Prometheus text exposition format (what vmagent serves on /metrics), built for
// pages of tens of MB of which we need a handful of series: it keeps only samples whose metric name is in
// `keep`, decides that from the first bytes of each line, and never buffers a line it is going to skip.
// Memory is bounded by the kept samples plus one kept line (at most `maxLineBytes`), whatever the page size.
//
// Strict where it matters: a malformed line of a kept metric is a MetricsTextError naming the line number and
// the problem. Lines of other metrics are not parsed at all; the only ones counted as malformed are those
// whose first character cannot begin a metric name (checking more would mean parsing every line).

import { CodedError } from '../goplugin/failure-codes.ts';

export interface MetricSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface MetricsTextOptions {
  /** Exact metric names of the sample lines to keep (for a histogram: `x_bucket`, `x_sum`, `x_count`). */
  readonly keep: Iterable<string>;
  /** Longest kept line accepted; a longer one is an error. Skipped lines may be any length. Default 1 MiB. */
  readonly maxLineBytes?: number;
  /** Most kept samples accepted before the page is rejected, so that memory stays bounded. Default 100 000. */
  readonly maxSamples?: number;
  /** Most bytes of kept lines (what the kept samples are made of) accepted before the page is rejected. Default
   *  unlimited; plugin/vm/scrape.ts sets it from its process-wide budget. */
  readonly maxKeptBytes?: number;
}

export interface MetricsTextResult {
  readonly samples: MetricSample[];
  /** Lines seen, the last one counted even without a trailing newline. */
  readonly lines: number;
  readonly bytes: number;
  /** Lines of other metrics skipped because their first character cannot begin a metric name. */
  readonly malformedSkippedLines: number;
  /** Line number of the first such line, for a log message. */
  readonly firstMalformedSkippedLine: number | undefined;
  /** Most bytes of an unfinished line held at once (evidence of the memory bound; tests check it). */
  readonly maxBufferedBytes: number;
}

export class MetricsTextError extends CodedError {
  readonly line: number;
  readonly metric: string | undefined;
  readonly problem: string;
  /** The page broke a size limit (line length, samples, kept bytes) rather than the format: too large, not malformed. */
  readonly overLimit: boolean;

  constructor(line: number, metric: string | undefined, problem: string, overLimit = false) {
    super(
      'MetricsMalformed',
      `metrics text line ${line}${metric === undefined ? '' : ` (${metric})`}: ${problem}`,
    );
    this.name = 'MetricsTextError';
    this.line = line;
    this.metric = metric;
    this.problem = problem;
    this.overLimit = overLimit;
  }
}

const defaultMaxLineBytes = 1024 * 1024;
const defaultMaxSamples = 100_000;

const newline = 0x0a;
const carriageReturn = 0x0d;
const space = 0x20;
const tab = 0x09;
const hash = 0x23;
const openBrace = 0x7b;

// Line classes; a kept line is classified by the index (>= 0) of its name in the keep list.
const skipLine = -1;
const commentLine = -2;
const malformedLine = -3;
const undecidedLine = -4; // an unfinished line whose name is not complete yet
const blankLine = -5;

const nameStart = byteTable(
  (c) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c === 0x3a,
);
const nameChar = byteTable((c) => nameStart[c] === 1 || (c >= 0x30 && c <= 0x39));

function byteTable(member: (c: number) => boolean): Uint8Array {
  const table = new Uint8Array(256);
  for (let c = 0; c < 256; c++) table[c] = member(c) ? 1 : 0;
  return table;
}

/** Push-based core: feed chunks with `push`, then call `end`. `parseMetricsText` wraps it for streams. */
export class MetricsTextParser {
  private readonly keptNames: string[];
  private readonly keptBytes: Uint8Array[];
  private readonly candidatesByFirstByte: (number[] | undefined)[];
  private readonly longestKeptName: number;
  private readonly maxLineBytes: number;
  private readonly maxSamples: number;
  private readonly maxKeptBytes: number;
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });

  private readonly samples: MetricSample[] = [];
  private lineNumber = 1; // number of the line being read
  private bytes = 0;
  private keptBytesTotal = 0;
  private malformedSkippedLines = 0;
  private firstMalformedSkippedLine: number | undefined;
  private maxBufferedBytes = 0;

  // An unfinished line carried from one chunk to the next: either skipped to its newline, or collected
  // (a kept line, or one whose name is not decided yet) from its first non-blank byte.
  private skippingToNewline = false;
  private collecting = false;
  private carry = new Uint8Array(256);
  private carryLength = 0;
  private carryClass = undecidedLine;
  private ended = false;

  constructor(options: MetricsTextOptions) {
    this.keptNames = [...new Set(options.keep)];
    const encoder = new TextEncoder();
    this.keptBytes = this.keptNames.map((name) => {
      if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name))
        throw new TypeError(`not a metric name: ${JSON.stringify(name)}`);
      return encoder.encode(name);
    });
    this.candidatesByFirstByte = new Array<number[] | undefined>(256).fill(undefined);
    this.keptBytes.forEach((name, index) => {
      const first = name[0] ?? 0;
      const list = this.candidatesByFirstByte[first] ?? [];
      list.push(index);
      this.candidatesByFirstByte[first] = list;
    });
    this.longestKeptName = Math.max(0, ...this.keptBytes.map((name) => name.length));
    this.maxLineBytes = options.maxLineBytes ?? defaultMaxLineBytes;
    this.maxSamples = options.maxSamples ?? defaultMaxSamples;
    this.maxKeptBytes = options.maxKeptBytes ?? Number.POSITIVE_INFINITY;
    if (!(this.maxLineBytes > 0) || !(this.maxSamples > 0) || !(this.maxKeptBytes > 0))
      throw new TypeError('maxLineBytes, maxSamples and maxKeptBytes must be positive');
  }

  push(chunk: Uint8Array): void {
    if (this.ended) throw new Error('MetricsTextParser: push after end');
    this.bytes += chunk.length;
    let position = 0;
    if (this.skippingToNewline) {
      const lineEnd = chunk.indexOf(newline);
      if (lineEnd < 0) return;
      this.skippingToNewline = false;
      this.lineNumber++;
      position = lineEnd + 1;
    } else if (this.collecting) {
      position = this.continueCarriedLine(chunk);
      if (position < 0) return;
    }
    while (position < chunk.length) {
      const lineEnd = chunk.indexOf(newline, position);
      if (lineEnd < 0) {
        this.startCarriedLine(chunk, position);
        return;
      }
      this.completeLine(chunk, position, lineEnd);
      position = lineEnd + 1;
    }
  }

  end(): MetricsTextResult {
    if (!this.ended) {
      this.ended = true;
      if (this.collecting) {
        this.collecting = false;
        this.completeLine(this.carry, 0, this.carryLength);
        this.carryLength = 0;
      } else if (this.skippingToNewline) {
        this.skippingToNewline = false;
        this.lineNumber++;
      }
    }
    return {
      samples: this.samples,
      lines: this.lineNumber - 1,
      bytes: this.bytes,
      malformedSkippedLines: this.malformedSkippedLines,
      firstMalformedSkippedLine: this.firstMalformedSkippedLine,
      maxBufferedBytes: this.maxBufferedBytes,
    };
  }

  /** Handles a complete line `buffer[start, end)` (newline excluded) and advances the line number. */
  private completeLine(buffer: Uint8Array, start: number, end: number): void {
    const lineClass = this.classify(buffer, start, end, true);
    if (lineClass >= 0) this.keepLine(buffer, start, end, lineClass);
    else if (lineClass === malformedLine) this.countMalformed();
    this.lineNumber++;
  }

  /** The chunk ends inside a line that starts at `start`: skip it or carry its bytes to the next chunk. */
  private startCarriedLine(chunk: Uint8Array, start: number): void {
    const lineClass = this.classify(chunk, start, chunk.length, false);
    if (lineClass === skipLine || lineClass === commentLine || lineClass === malformedLine) {
      if (lineClass === malformedLine) this.countMalformed();
      this.skippingToNewline = true;
      return;
    }
    let first = start;
    while (first < chunk.length && (chunk[first] === space || chunk[first] === tab)) first++;
    this.collecting = true;
    this.carryClass = lineClass;
    this.carryLength = 0;
    this.appendToCarry(chunk, first, chunk.length);
  }

  /** Continues a carried line with the next chunk; returns where the next line starts, or -1 if not here. */
  private continueCarriedLine(chunk: Uint8Array): number {
    const lineEnd = chunk.indexOf(newline);
    const available = lineEnd < 0 ? chunk.length : lineEnd;
    let position = 0;
    if (this.carryClass === undecidedLine) {
      if (this.carryLength === 0) {
        while (position < available && (chunk[position] === space || chunk[position] === tab)) position++;
      }
      // Append only as much as can decide the line, so that a long line we are going to skip is never held.
      const decisive = Math.min(available, position + this.longestKeptName + 2);
      this.appendToCarry(chunk, position, decisive);
      position = decisive;
      const lineClass = this.classify(this.carry, 0, this.carryLength, lineEnd >= 0 && decisive === lineEnd);
      if (lineClass === undecidedLine && lineEnd < 0) return -1;
      if (lineClass < 0 && lineClass !== undecidedLine) {
        if (lineClass === malformedLine) this.countMalformed();
        this.collecting = false;
        this.carryLength = 0;
        if (lineEnd < 0) {
          this.skippingToNewline = true;
          return -1;
        }
        this.lineNumber++;
        return lineEnd + 1;
      }
      this.carryClass = lineClass;
    }
    this.appendToCarry(chunk, position, available);
    if (lineEnd < 0) return -1;
    this.collecting = false;
    this.completeLine(this.carry, 0, this.carryLength);
    this.carryLength = 0;
    if (this.carry.length > 64 * 1024) this.carry = new Uint8Array(256); // don't keep a big buffer for the page
    return lineEnd + 1;
  }

  private appendToCarry(source: Uint8Array, start: number, end: number): void {
    const needed = this.carryLength + (end - start);
    if (needed > this.maxLineBytes + 1) {
      // Only kept (or still undecided) lines are carried, so this line is one we would have to keep.
      const name = this.carryClass >= 0 ? this.keptNames[this.carryClass] : undefined;
      throw new MetricsTextError(
        this.lineNumber,
        name,
        `line is longer than the limit of ${this.maxLineBytes} bytes`,
        true,
      );
    }
    if (needed > this.carry.length) {
      const grown = new Uint8Array(Math.max(needed, this.carry.length * 2));
      grown.set(this.carry.subarray(0, this.carryLength));
      this.carry = grown;
    }
    this.carry.set(source.subarray(start, end), this.carryLength);
    this.carryLength = needed;
    if (needed > this.maxBufferedBytes) this.maxBufferedBytes = needed;
  }

  private countMalformed(): void {
    this.malformedSkippedLines++;
    this.firstMalformedSkippedLine ??= this.lineNumber;
  }

  /**
   * Decides from the first bytes of `buffer[start, end)` whether the line is kept (its name's index),
   * skipped, a comment, blank, malformed, or — when `complete` is false and the name runs to `end` — undecided.
   */
  private classify(buffer: Uint8Array, start: number, end: number, complete: boolean): number {
    let position = start;
    while (position < end && (buffer[position] === space || buffer[position] === tab)) position++;
    if (position === end) return complete ? blankLine : undecidedLine;
    const first = buffer[position] ?? 0;
    if (first === hash) return commentLine;
    if (nameStart[first] !== 1) {
      if (first === carriageReturn && position + 1 === end) return complete ? blankLine : undecidedLine;
      // `{"name", ...}` is the quoted-name form of newer exposition formats: valid, and never one of ours.
      return first === openBrace ? skipLine : malformedLine;
    }
    const candidates = this.candidatesByFirstByte[first];
    if (candidates === undefined) return skipLine;
    let undecided = false;
    for (const index of candidates) {
      const match = matchName(buffer, position, end, this.keptBytes[index] as Uint8Array, complete);
      if (match === nameMatches) return index;
      if (match === nameMayMatch) undecided = true;
    }
    return undecided ? undecidedLine : skipLine;
  }

  private keepLine(buffer: Uint8Array, start: number, end: number, keptIndex: number): void {
    const name = this.keptNames[keptIndex] as string;
    if (end - start > this.maxLineBytes) {
      throw new MetricsTextError(
        this.lineNumber,
        name,
        `line is longer than the limit of ${this.maxLineBytes} bytes`,
        true,
      );
    }
    if (end > start && buffer[end - 1] === carriageReturn) end--;
    let text: string;
    try {
      text = this.decoder.decode(buffer.subarray(start, end));
    } catch {
      throw new MetricsTextError(this.lineNumber, name, 'line is not valid UTF-8');
    }
    if (this.samples.length >= this.maxSamples) {
      throw new MetricsTextError(
        this.lineNumber,
        name,
        `more than ${this.maxSamples} samples of kept metrics`,
        true,
      );
    }
    this.keptBytesTotal += end - start;
    if (this.keptBytesTotal > this.maxKeptBytes) {
      throw new MetricsTextError(
        this.lineNumber,
        name,
        `the kept lines take more than the limit of ${this.maxKeptBytes} bytes`,
        true,
      );
    }
    this.samples.push(parseSampleLine(text, name, this.lineNumber));
  }
}

const nameDiffers = 0;
const nameMatches = 1;
const nameMayMatch = 2; // the buffer ends before the name could be told apart

function matchName(
  buffer: Uint8Array,
  position: number,
  end: number,
  name: Uint8Array,
  complete: boolean,
): number {
  const available = Math.min(end - position, name.length);
  for (let offset = 0; offset < available; offset++) {
    if (buffer[position + offset] !== name[offset]) return nameDiffers;
  }
  if (available < name.length) return complete ? nameDiffers : nameMayMatch;
  const next = position + name.length;
  if (next === end) return complete ? nameMatches : nameMayMatch;
  // A longer name (`name` followed by more name characters) is another metric; anything else ends the name.
  return nameChar[buffer[next] ?? 0] === 1 ? nameDiffers : nameMatches;
}

/** Parses one kept sample line (already known to start, after blanks, with `name`). */
function parseSampleLine(text: string, name: string, lineNumber: number): MetricSample {
  const fail = (problem: string): never => {
    throw new MetricsTextError(lineNumber, name, problem);
  };
  let position = skipBlanks(text, 0);
  if (!text.startsWith(name, position)) fail(`expected metric name ${name}`);
  position += name.length;
  const nameEnd = position;
  position = skipBlanks(text, position);
  const labels: Record<string, string> = {};
  const hasLabels = text[position] === '{';
  if (hasLabels) position = parseLabels(text, position + 1, labels, fail);
  position = skipBlanks(text, position);
  if (!hasLabels && position === nameEnd && position < text.length) {
    fail(`unexpected character ${JSON.stringify(text[position])} after the metric name`);
  }
  if (position === text.length) fail('missing sample value');
  const valueEnd = tokenEnd(text, position);
  const value = parseSampleValue(text.slice(position, valueEnd));
  if (value === undefined) fail(`invalid sample value ${JSON.stringify(text.slice(position, valueEnd))}`);
  position = skipBlanks(text, valueEnd);
  if (position < text.length) {
    const timestampEnd = tokenEnd(text, position);
    const timestamp = text.slice(position, timestampEnd);
    if (!/^-?\d+$/.test(timestamp)) fail(`invalid timestamp ${JSON.stringify(timestamp)}`);
    position = skipBlanks(text, timestampEnd);
    if (position < text.length)
      fail(`unexpected text after the timestamp: ${JSON.stringify(text.slice(position, position + 40))}`);
  }
  return { name, labels, value: value as number };
}

function parseLabels(
  text: string,
  start: number,
  labels: Record<string, string>,
  fail: (problem: string) => never,
): number {
  let position = skipBlanks(text, start);
  while (text[position] !== '}') {
    const nameMatch = /[a-zA-Z_][a-zA-Z0-9_]*/y;
    nameMatch.lastIndex = position;
    const labelName = nameMatch.exec(text)?.[0];
    if (labelName === undefined) {
      if (position >= text.length) fail('unterminated label set');
      fail(`invalid label name at ${JSON.stringify(text.slice(position, position + 20))}`);
    }
    const label = labelName as string;
    position = skipBlanks(text, position + label.length);
    if (text[position] !== '=') fail(`expected '=' after label name ${label}`);
    position = skipBlanks(text, position + 1);
    if (text[position] !== '"') fail(`expected '"' to open the value of label ${label}`);
    const [value, afterValue] = parseLabelValue(text, position + 1, label, fail);
    if (Object.hasOwn(labels, label)) fail(`duplicate label ${label}`);
    labels[label] = value;
    position = skipBlanks(text, afterValue);
    if (text[position] === ',') {
      position = skipBlanks(text, position + 1);
    } else if (text[position] !== '}') {
      fail(
        position >= text.length
          ? 'unterminated label set'
          : `expected ',' or '}' after the value of label ${label}`,
      );
    }
  }
  return position + 1;
}

function parseLabelValue(
  text: string,
  start: number,
  label: string,
  fail: (problem: string) => never,
): [string, number] {
  let value = '';
  let runStart = start;
  for (let position = start; position < text.length; position++) {
    const c = text.charCodeAt(position);
    if (c === 0x22) return [value + text.slice(runStart, position), position + 1];
    if (c !== 0x5c) continue;
    value += text.slice(runStart, position);
    const escaped = text[position + 1];
    if (escaped === '\\') value += '\\';
    else if (escaped === '"') value += '"';
    else if (escaped === 'n') value += '\n';
    else fail(`invalid escape ${JSON.stringify(`\\${escaped ?? ''}`)} in the value of label ${label}`);
    position++;
    runStart = position + 1;
  }
  return fail(`unterminated value of label ${label}`);
}

const floatPattern = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Go's strconv.ParseFloat forms that appear in exposition text: decimals, exponents, NaN, ±Inf. */
export function parseSampleValue(token: string): number | undefined {
  if (floatPattern.test(token)) return Number(token);
  const lower = token.toLowerCase();
  const unsigned = lower.startsWith('+') || lower.startsWith('-') ? lower.slice(1) : lower;
  if (unsigned === 'inf' || unsigned === 'infinity') return lower.startsWith('-') ? -Infinity : Infinity;
  if (lower === 'nan') return Number.NaN;
  return undefined;
}

function skipBlanks(text: string, position: number): number {
  while (position < text.length && (text[position] === ' ' || text[position] === '\t')) position++;
  return position;
}

function tokenEnd(text: string, position: number): number {
  while (position < text.length && text[position] !== ' ' && text[position] !== '\t') position++;
  return position;
}

/** Parses a byte stream (e.g. an undici response body), keeping only the samples named in `options.keep`. */
export async function parseMetricsText(
  body: AsyncIterable<Uint8Array>,
  options: MetricsTextOptions,
): Promise<MetricsTextResult> {
  const parser = new MetricsTextParser(options);
  for await (const chunk of body) parser.push(chunk);
  return parser.end();
}
