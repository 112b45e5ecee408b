import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { ALGORITHM_CODES } from '../../lib/algorithms/index.js';
import { BLOCK_FLAG, NEVER_FITS, REPLY } from '../../lib/stores/protocol.js';

/**
 * The constants the Lua and SQL twins share with TypeScript (protocol.ts, ALGORITHM_CODES) are interpolated,
 * never copied: the .lua files of lib/ (which name them: lua-constants.ts defines them for the Lua) and the SQL
 * sources (their template literals, `${...}` left out) hold no literal that stands for one of them.
 */
const LIB = join(import.meta.dirname, '../../lib');

/** The files of lib/ whose names end with `suffix`: their template literals' text, or (`whole`) all of it. */
function sources(suffix: string, whole = false): { file: string; text: string }[] {
  return readdirSync(LIB, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith(suffix))
    .map((file) => {
      const text = readFileSync(join(LIB, file), 'utf8');
      return { file, text: whole ? text : templateText(text) };
    });
}

/** The text of a module's template literals, without their interpolations: what the twins' code says itself. */
function templateText(source: string): string {
  const parts: string[] = [];
  for (const [, body] of source.matchAll(/`((?:[^`\\]|\\.)*)`/gs))
    parts.push((body ?? '').replace(/\$\{[^}]*\}/g, ' '));
  return parts.join('\n');
}

/** Lines of `text` that match `pattern`, outside comments. */
function offending(text: string, pattern: RegExp, comment: RegExp): string[] {
  return text
    .split('\n')
    .map((line) => line.replace(comment, ''))
    .filter((line) => pattern.test(line));
}

const lua = sources('.lua', true);
const sql = sources('.sql.ts');
const LUA_COMMENT = /--.*$/;
const SQL_COMMENT = /--.*$/;

describe('constants shared with Lua and SQL are interpolated, never copied', () => {
  it('finds the twins it checks', () => {
    expect(lua.map(({ file }) => file)).toEqual(
      expect.arrayContaining([join('stores/redis/lua/dispatcher.lua'), join('stores/redis/lua/requests.lua')]),
    );
    expect(sql.map(({ file }) => file)).toEqual(
      expect.arrayContaining([
        join('stores/postgres/consume-statement.sql.ts'),
        join('stores/postgres/operations.sql.ts'),
      ]),
    );
  });

  it('has the values the checks below look for', () => {
    expect([NEVER_FITS, BLOCK_FLAG, REPLY.blocked, ALGORITHM_CODES.quota]).toEqual([-1, 16, 2, 6]);
  });

  it('no Lua names the block flag, a reply code or an algorithm code by its number', () => {
    const patterns = [
      /\b16\b/, // BLOCK_FLAG
      /\{\s*[0-2]\s*,/, // a reply table that starts with its code
      /\bcode\s*[=~]=\s*\d/, // an algorithm code
      /\[\d\]\s*[=~]=\s*[0-2]\b/, // a reply's code compared
    ];
    for (const { file, text } of lua) {
      const found = patterns.flatMap((pattern) => offending(text, pattern, LUA_COMMENT));
      expect({ file, found }).toEqual({ file, found: [] });
    }
  });

  it('no SQL names NEVER_FITS, a reply code or an algorithm code by its number', () => {
    const patterns = [
      /(?<!,\s)-1\b/, // NEVER_FITS (split_part's index -1, after a comma, is not it)
      /'[0-2],/, // a reply text that starts with its code
      /ARRAY\[[0-2],/, // a reply array that starts with its code
      /\balgos?(\[i\])?\s*=\s*\d/, // an algorithm code
      /\ballowed\s*=\s*\d/, // a reply code compared
    ];
    for (const { file, text } of sql) {
      const found = patterns.flatMap((pattern) => offending(text, pattern, SQL_COMMENT));
      expect({ file, found }).toEqual({ file, found: [] });
    }
  });
});
