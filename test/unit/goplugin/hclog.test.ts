import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createLogger,
  formatHclogTimestamp,
  LoggerConfigError,
  parseLogLevel,
} from '../../../plugin/goplugin/hclog.ts';

function capture(level?: Parameters<typeof parseLogLevel>[0]) {
  const lines: string[] = [];
  const fixed = new Date(Date.UTC(2026, 7, 17, 10, 0, 0, 123));
  const logger = createLogger('vmz', {
    sink: (line) => lines.push(line),
    now: () => fixed,
    ...(level === undefined ? {} : { level: parseLogLevel(level) }),
  });
  return { logger, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('hclog logger', () => {
  it('formats timestamps in UTC with exactly six fractional digits', () => {
    assert.equal(
      formatHclogTimestamp(new Date(Date.UTC(2026, 7, 17, 10, 0, 0, 123))),
      '2026-08-17T10:00:00.123000Z',
    );
    assert.equal(
      formatHclogTimestamp(new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 0))),
      '2026-01-01T00:00:00.000000Z',
    );
    assert.match(formatHclogTimestamp(new Date()), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it('writes one JSON object per line with @level, @message, @timestamp, @module and fields', () => {
    const { logger, lines, parsed } = capture('trace');
    logger.warn('disk almost full', { free: 3, big: 2n ** 70n, err: new Error('boom') });
    assert.equal(lines.length, 1);
    assert.ok(lines[0]?.endsWith('}\n'));
    assert.equal(lines[0]?.indexOf('\n'), (lines[0]?.length ?? 0) - 1, 'a single line');
    assert.deepEqual(parsed()[0], {
      '@level': 'warn',
      '@message': 'disk almost full',
      '@timestamp': '2026-08-17T10:00:00.123000Z',
      '@module': 'vmz',
      free: 3,
      big: '1180591620717411303424',
      err: 'boom',
    });
  });

  it('keeps messages with newlines on one line', () => {
    const { logger, lines, parsed } = capture();
    logger.error('first\nsecond');
    assert.equal(lines[0]?.split('\n').length, 2);
    assert.equal(parsed()[0]?.['@message'], 'first\nsecond');
  });

  it('drops lines below the level and emits every level at trace', () => {
    const info = capture('INFO');
    info.logger.trace('t');
    info.logger.debug('d');
    info.logger.info('i');
    info.logger.warn('w');
    info.logger.error('e');
    assert.deepEqual(
      info.parsed().map((l) => l['@level']),
      ['info', 'warn', 'error'],
    );
    const all = capture('trace');
    for (const level of ['trace', 'debug', 'info', 'warn', 'error'] as const) all.logger[level](level);
    assert.deepEqual(
      all.parsed().map((l) => l['@level']),
      ['trace', 'debug', 'info', 'warn', 'error'],
    );
  });

  it('does not let fields overwrite the keys the host extracts', () => {
    const { logger, parsed } = capture();
    logger.info('real', { '@message': 'fake', '@level': 'error' });
    const line = parsed()[0];
    assert.equal(line?.['@message'], 'real');
    assert.equal(line?.['@level'], 'info');
    assert.equal(line?.['field@message'], 'fake');
  });

  it('survives unserialisable fields', () => {
    const { logger, parsed } = capture();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    logger.info('cyclic', { cyclic });
    assert.equal(parsed()[0]?.['@message'], 'cyclic');
  });

  it('names sub-loggers module.name', () => {
    const { logger, parsed } = capture();
    logger.named('yamux').info('x');
    assert.equal(parsed()[0]?.['@module'], 'vmz.yamux');
  });

  it('rejects unknown level names with a typed error', () => {
    assert.throws(() => parseLogLevel('verbose'), LoggerConfigError);
  });

  it('writes to stderr by default, never to stdout', () => {
    const out: string[] = [];
    const err: string[] = [];
    const originalOut = process.stdout.write;
    const originalErr = process.stderr.write;
    process.stdout.write = ((chunk: string) => out.push(chunk) > 0) as typeof process.stdout.write;
    process.stderr.write = ((chunk: string) => err.push(chunk) > 0) as typeof process.stderr.write;
    try {
      createLogger('x').error('to stderr');
    } finally {
      process.stdout.write = originalOut;
      process.stderr.write = originalErr;
    }
    assert.deepEqual(out, []);
    assert.equal(err.length, 1);
  });
});
