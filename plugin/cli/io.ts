// Where the CLI reads and writes: stdout for output, stderr for diagnostics, files (or stdin as `-`).

import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CodedError } from '../goplugin/failure-codes.ts';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** The text of a file; `-` is stdin. */
  readFile(path: string): string;
  /** Replaces a file's content at once (a reader never sees half a file); `-` is stdout. */
  writeFile(path: string, text: string): void;
}

export const stdinPath = '-';

let pipeWatched = false;
/** `vmzones render … | head -1`: a reader that goes away ends the command quietly, as it does for cat. */
function watchPipe(): void {
  if (pipeWatched) return;
  pipeWatched = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

export const processIo: CliIo = {
  out: (text) => {
    watchPipe();
    process.stdout.write(text);
  },
  err: (text) => process.stderr.write(text),
  readFile: (path) => readFileSync(path === stdinPath ? 0 : path, 'utf8'),
  writeFile: (path, text) => {
    if (path === stdinPath) {
      watchPipe();
      process.stdout.write(text);
      return;
    }
    const temporary = join(dirname(path), `.${basename(path)}.vmzones-${process.pid}`);
    writeFileSync(temporary, text, { mode: statSync(path).mode });
    renameSync(temporary, path);
  },
};

/** Reads a file the user named; a failure is one line naming the file (no stack). */
export function readInput(io: CliIo, path: string): string {
  try {
    return io.readFile(path);
  } catch (err) {
    throw new InputError(`cannot read ${path === stdinPath ? 'stdin' : path}: ${(err as Error).message}`);
  }
}

/** A file that cannot be read or written, or holds nothing the command can use: exit 1, one line. */
export class InputError extends CodedError {
  constructor(message: string) {
    super('InputInvalid', message);
  }
  override readonly name = 'InputError';
}
