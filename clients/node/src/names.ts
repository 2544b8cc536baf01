// The rules of names (docs/protocol.md, "Names"): queue names, task
// types, prefixes, groups and caller's task IDs.

import { ValidationError } from './errors.js';

export const maxNameBytes = 128;

const encoder = new TextEncoder();
// a lone surrogate has no UTF-8 form; paired ones match as one code point
const loneSurrogate = /\p{Cs}/u;
const forbidden = /[{}]|\p{White_Space}|\p{Cc}/u;

/** Returns why s cannot be a name, or '' when it can. */
export function nameProblem(s: unknown): string {
  if (typeof s !== 'string') return `not a string (${typeof s})`;
  if (s === '') return 'empty';
  if (loneSurrogate.test(s)) return 'not valid UTF-8 (a lone surrogate)';
  const n = encoder.encode(s).length;
  if (n > maxNameBytes) return `${n} bytes, at most ${maxNameBytes}`;
  const m = forbidden.exec(s);
  if (m) {
    const c = m[0];
    if (c === '{' || c === '}') return `contains ${JSON.stringify(c)}`;
    return `contains white space or a control character U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return '';
}

/** Throws a ValidationError naming what and the value when s is not a name. */
export function checkName(what: string, s: unknown): string {
  const why = nameProblem(s);
  if (why) throw new ValidationError(`shardq: ${what} ${JSON.stringify(s)}: ${why}`);
  return s as string;
}

export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}
