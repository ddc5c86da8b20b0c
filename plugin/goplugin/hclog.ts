// hclog-compatible JSON logging on stderr. go-plugin's client parses each stderr line as JSON and
// re-logs it at the given level; "@timestamp" must match Go's layout 2006-01-02T15:04:05.000000Z07:00
// (exactly six fractional digits), or the whole line is treated as plain text at Debug level.
// stdout is reserved for the handshake line, so nothing here ever touches it.

import { CodedError } from './failure-codes.ts';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  trace(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger whose "@module" is this one's module plus `.name`. */
  named(name: string): Logger;
}

export interface LoggerOptions {
  /** Lines below this level are dropped. Default: info. */
  readonly level?: LogLevel;
  /** Receives each complete line including the trailing newline. Default: process.stderr. */
  readonly sink?: (line: string) => void;
  /** Clock, for tests. */
  readonly now?: () => Date;
}

export class LoggerConfigError extends CodedError {
  constructor(message: string) {
    super('FlagInvalid', message);
    this.name = 'LoggerConfigError';
  }
}

/** Parses a level name case-insensitively (as hclog does); throws LoggerConfigError on anything else. */
export function parseLogLevel(text: string): LogLevel {
  const lower = text.trim().toLowerCase();
  const level = LOG_LEVELS.find((candidate) => candidate === lower);
  if (level === undefined) {
    throw new LoggerConfigError(`unknown log level "${text}"; expected one of ${LOG_LEVELS.join(', ')}`);
  }
  return level;
}

/** Formats a Date as hclog's JSON timestamp: UTC with exactly six fractional digits. */
export function formatHclogTimestamp(date: Date): string {
  // toISOString gives milliseconds ("...:05.123Z"); hclog wants microseconds.
  return `${date.toISOString().slice(0, -1)}000Z`;
}

const RESERVED_KEYS = new Set(['@level', '@message', '@timestamp', '@module']);

function fieldValue(value: unknown): unknown {
  if (value instanceof Error) return value.message;
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return `<${value.length} bytes>`;
  if (value instanceof Map) return Object.fromEntries(value);
  return value;
}

/** Serialises one hclog JSON line (without newline). Exposed for tests. */
export function formatHclogLine(
  level: LogLevel,
  message: string,
  module: string,
  timestamp: Date,
  fields: LogFields | undefined,
): string {
  const record: Record<string, unknown> = {
    '@level': level,
    '@message': message,
    '@timestamp': formatHclogTimestamp(timestamp),
  };
  if (module !== '') record['@module'] = module;
  if (fields !== undefined) {
    for (const [key, value] of Object.entries(fields)) {
      // A field must not overwrite the keys the client extracts; keep it under another name.
      record[RESERVED_KEYS.has(key) ? `field${key}` : key] = fieldValue(value);
    }
  }
  try {
    return JSON.stringify(record);
  } catch {
    // Cyclic or otherwise unserialisable fields: keep the message, drop the fields.
    return JSON.stringify({
      '@level': level,
      '@message': message,
      '@timestamp': record['@timestamp'],
      ...(module === '' ? {} : { '@module': module }),
      fields_error: 'fields could not be serialised',
    });
  }
}

function writeToStderr(line: string): void {
  process.stderr.write(line);
}

/** A logger whose lines carry `module` as "@module" (omitted when empty). */
export function createLogger(module = '', options: LoggerOptions = {}): Logger {
  const threshold = LOG_LEVELS.indexOf(options.level ?? 'info');
  const sink = options.sink ?? writeToStderr;
  const now = options.now ?? (() => new Date());

  const log = (level: LogLevel, message: string, fields?: LogFields): void => {
    if (LOG_LEVELS.indexOf(level) < threshold) return;
    sink(`${formatHclogLine(level, message, module, now(), fields)}\n`);
  };

  return {
    trace: (message, fields) => log('trace', message, fields),
    debug: (message, fields) => log('debug', message, fields),
    info: (message, fields) => log('info', message, fields),
    warn: (message, fields) => log('warn', message, fields),
    error: (message, fields) => log('error', message, fields),
    named: (name) => createLogger(module === '' ? name : `${module}.${name}`, options),
  };
}

/** A logger that drops everything (for tests and library defaults). */
export const silentLogger: Logger = {
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  named: () => silentLogger,
};
