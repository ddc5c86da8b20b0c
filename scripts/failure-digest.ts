// What a failed phase said about its failures, in a few lines: CI shows only the end of a run's output, where the
// phase's own output (printed whole when the phase ends) may be long gone, so `npm test` repeats this digest
// just before its closing table.

const maxLines = 40;
const maxWidth = 240;
/** Stack frames kept under each error: enough to name the test file's line. */
const framesKept = 3;

/**
 * The failures in a phase's output: node's spec reporter's closing `✖ failing tests:` section (names, errors,
 * the first stack frames of each), or Go's `--- FAIL` lines with what follows them, or else its last lines.
 */
export function failureDigest(output: string): string[] {
  const lines = output.split('\n').map((l) => l.replace(/\s+$/, ''));
  const failing = lines.lastIndexOf('✖ failing tests:');
  const picked =
    failing >= 0 ? withFewFrames(lines.slice(failing + 1)) : (goFailures(lines) ?? lines.slice(-maxLines));
  const kept = picked.filter((l) => l.trim() !== '').map((l) => cut(l, maxWidth));
  return kept.length > maxLines
    ? [...kept.slice(0, maxLines), `… (${kept.length - maxLines} more lines)`]
    : kept;
}

function withFewFrames(lines: string[]): string[] {
  const kept: string[] = [];
  let frames = 0;
  for (const line of lines) {
    if (/^\s+at /.test(line)) {
      frames += 1;
      if (frames <= framesKept) kept.push(line);
    } else {
      frames = 0;
      kept.push(line);
    }
  }
  return kept;
}

function goFailures(lines: string[]): string[] | undefined {
  const kept: string[] = [];
  lines.forEach((line, i) => {
    if (/^\s*--- FAIL/.test(line)) kept.push(...lines.slice(i, i + 6));
  });
  return kept.length > 0 ? kept : undefined;
}

const reasonWidth = 160;

/**
 * The first error a digest names, on one line: the closing table repeats it beside the failed phase, because CI
 * may show only the table (a failed file's digest above it can be cut off). Undefined when the digest names none.
 */
export function firstReason(digest: readonly string[]): string | undefined {
  const reason = digest
    .map((line) => line.trim())
    .find(
      (line) =>
        line !== '' &&
        !line.startsWith('test at ') &&
        !line.startsWith('✖ ') &&
        !line.startsWith('at ') &&
        !line.startsWith('--- FAIL') &&
        !line.startsWith('…'),
    );
  return reason === undefined ? undefined : cut(reason, reasonWidth);
}

/** `line` with what lies past `width` characters replaced by an ellipsis. */
function cut(line: string, width: number): string {
  return line.length > width ? `${line.slice(0, width)}…` : line;
}
