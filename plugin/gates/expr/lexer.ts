// Tokenizer following expr-lang's lexer (parser/lexer/state.go): the same token kinds and operator
// spellings, so that what expr-lang splits one way we split the same way — including its operators that our
// subset refuses later with a clear message.

import { syntaxError } from './errors.ts';

export type TokenKind = 'identifier' | 'number' | 'string' | 'operator' | 'bracket' | 'eof';

export interface Token {
  readonly kind: TokenKind;
  /** Operator / bracket / identifier spelling, the number as written, or the decoded string. */
  readonly value: string;
  /** 0-based offset in the expression. */
  readonly position: number;
}

// Words the lexer turns into operators rather than identifiers.
const wordOperators = new Set([
  'not',
  'in',
  'or',
  'and',
  'matches',
  'contains',
  'startsWith',
  'endsWith',
  'let',
  'if',
  'else',
]);

export function isSpace(char: string): boolean {
  return /^\s$/u.test(char);
}

export function isAlphabetic(char: string): boolean {
  return char === '_' || char === '$' || /^\p{L}$/u.test(char);
}

export function isAlphaNumeric(char: string): boolean {
  return isAlphabetic(char) || /^\p{Nd}$/u.test(char);
}

export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  const chars = [...source]; // by code point, as Go reads runes
  const offsets: number[] = [];
  let offset = 0;
  for (const char of chars) {
    offsets.push(offset);
    offset += char.length;
  }
  offsets.push(offset);
  let index = 0;
  const at = (i: number) => chars[i] ?? '';
  const emit = (kind: TokenKind, value: string, start: number) =>
    tokens.push({ kind, value, position: offsets[start] ?? 0 });

  while (index < chars.length) {
    const start = index;
    const char = at(index);
    if (isSpace(char)) {
      index++;
      continue;
    }
    if (char === '"' || char === "'") {
      const [value, end] = scanQuoted(chars, index, offsets);
      emit('string', value, start);
      index = end;
      continue;
    }
    if (char === '`') {
      const close = chars.indexOf('`', index + 1);
      if (close < 0) throw syntaxError('literal not terminated', offsets[start]);
      emit('string', chars.slice(index + 1, close).join(''), start);
      index = close + 1;
      continue;
    }
    if (/^[0-9]$/.test(char) || (char === '.' && /^[0-9]$/.test(at(index + 1)))) {
      index = scanNumber(chars, index, offsets);
      emit('number', chars.slice(start, index).join(''), start);
      continue;
    }
    if (char === '/' && (at(index + 1) === '/' || at(index + 1) === '*')) {
      index = skipComment(chars, index, offsets);
      continue;
    }
    if (char === '#') {
      emit('operator', '#', start);
      index++;
      const nameStart = index;
      while (index < chars.length && isAlphaNumeric(at(index))) index++;
      if (index > nameStart) emit('identifier', chars.slice(nameStart, index).join(''), nameStart);
      continue;
    }
    if ('([{)]}'.includes(char)) {
      emit('bracket', char, start);
      index++;
      continue;
    }
    if (isAlphabetic(char)) {
      while (index < chars.length && isAlphaNumeric(at(index))) index++;
      const word = chars.slice(start, index).join('');
      emit(wordOperators.has(word) ? 'operator' : 'identifier', word, start);
      continue;
    }
    let operator = char;
    if (char === '?' && (at(index + 1) === '.' || at(index + 1) === '?')) operator += at(index + 1);
    else if (char === '|' && at(index + 1) === '|') operator = '||';
    else if (char === ':' && at(index + 1) === ':') operator = '::';
    else if (char === '.' && at(index + 1) === '.') operator = '..';
    else if ('&!=*<>'.includes(char) && '&=*'.includes(at(index + 1)) && at(index + 1) !== '')
      operator += at(index + 1);
    else if (!'?|:.,;%+-^/&!=*<>'.includes(char)) {
      const code = char.codePointAt(0)?.toString(16).toUpperCase().padStart(4, '0');
      throw syntaxError(`unrecognized character: U+${code} '${char}'`, offsets[start]);
    }
    emit('operator', operator, start);
    index += [...operator].length;
  }
  tokens.push({ kind: 'eof', value: '', position: offset });
  return tokens;
}

function skipComment(chars: string[], index: number, offsets: number[]): number {
  if (chars[index + 1] === '/') {
    while (index < chars.length && chars[index] !== '\n') index++;
    return index;
  }
  for (let i = index + 2; i < chars.length; i++) {
    if (chars[i] === '*' && chars[i + 1] === '/') return i + 2;
  }
  throw syntaxError('unclosed comment', offsets[index]);
}

/** expr-lang's scanNumber: digits with `_`, 0x / 0o / 0b prefixes, a fraction, an exponent. */
function scanNumber(chars: string[], index: number, offsets: number[]): number {
  const start = index;
  let digits = '0123456789_';
  const accept = (set: string) => {
    if (index < chars.length && set.includes(chars[index] as string)) {
      index++;
      return true;
    }
    return false;
  };
  const acceptRun = (set: string) => {
    while (accept(set));
  };
  if (accept('0')) {
    if (accept('xX')) digits = '0123456789abcdefABCDEF_';
    else if (accept('oO')) digits = '01234567_';
    else if (accept('bB')) digits = '01_';
  }
  acceptRun(digits);
  if (chars[index] === '.' && chars[index + 1] !== '.') {
    index++;
    acceptRun(digits);
  }
  if (accept('eE')) {
    accept('+-');
    acceptRun(digits);
  }
  if (index < chars.length && isAlphaNumeric(chars[index] as string)) {
    throw syntaxError(
      `bad number syntax: ${JSON.stringify(chars.slice(start, index + 1).join(''))}`,
      offsets[start],
    );
  }
  return index;
}

const simpleEscapes: Record<string, string> = {
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '`': '`',
  '?': '?',
};

/** A quoted string with expr-lang's escapes (those of Go plus `\?` and `\u{…}`); CRLF reads as LF. */
function scanQuoted(chars: string[], index: number, offsets: number[]): [string, number] {
  const quote = chars[index];
  const start = index;
  let value = '';
  index++;
  for (;;) {
    const char = chars[index];
    if (char === undefined) throw syntaxError('literal not terminated', offsets[start]);
    index++;
    if (char === quote) return [value, index];
    if (char === '\r') {
      if (chars[index] === '\n') index++;
      value += '\n';
      continue;
    }
    if (char !== '\\') {
      value += char;
      continue;
    }
    const escaped = chars[index];
    index++;
    if (escaped === undefined) throw syntaxError('literal not terminated', offsets[start]);
    const simple = simpleEscapes[escaped];
    if (simple !== undefined) {
      value += simple;
      continue;
    }
    const fail = () => syntaxError('unable to unescape string', offsets[start]);
    let codePoint: number;
    if (escaped === 'u' && chars[index] === '{') {
      const close = chars.indexOf('}', index);
      const hex = close < 0 ? '' : chars.slice(index + 1, close).join('');
      if (!/^[0-9a-fA-F]{1,6}$/.test(hex)) throw fail();
      codePoint = Number.parseInt(hex, 16);
      index = close + 1;
    } else if ('xXuU'.includes(escaped)) {
      const length = escaped === 'u' ? 4 : escaped === 'U' ? 8 : 2;
      const hex = chars.slice(index, index + length).join('');
      if (hex.length !== length || !/^[0-9a-fA-F]+$/.test(hex)) throw fail();
      codePoint = Number.parseInt(hex, 16);
      index += length;
    } else if ('0123'.includes(escaped)) {
      const octal = escaped + chars.slice(index, index + 2).join('');
      if (!/^[0-3][0-7]{2}$/.test(octal))
        throw syntaxError('unable to unescape octal sequence in string', offsets[start]);
      codePoint = Number.parseInt(octal, 8);
      index += 2;
    } else {
      throw fail();
    }
    if (codePoint > 0x10ffff || (codePoint >= 0xd800 && codePoint <= 0xdfff)) throw fail();
    value += String.fromCodePoint(codePoint);
  }
}
