import { createHash } from 'node:crypto';

import { luaConstants } from './lua-constants.js';
import { LUA_CALL, LUA_DEFINITIONS } from './program.generated.js';

/**
 * The Redis store's Lua program, as a script (EVALSHA) and as a Redis 7 function (FCALL): the constants it shares
 * with TypeScript (lua-constants.ts), then the .lua files of lib/ that etc/lua/assemble.mjs assembled into
 * program.generated.ts (its definitions, then call.lua).
 */
export interface LuaProgram {
  /** The script: the definitions run again at every EVALSHA, then the call. */
  readonly script: string;
  /** SHA1 of the script, computed here so that the caller's client needs no defineCommand. */
  readonly sha: string;
  /** The function's name: after the script's hash, so that versions of the module can share a Redis. */
  readonly functionName: string;
  /** The library that registers the function (`FUNCTION LOAD REPLACE`). */
  readonly library: string;
}

/**
 * The program. `lean: false` assembles it without its lean path (every consume decided by the twins' path), which
 * the conformance suite runs beside the program as shipped (lean-path.spec.ts); never the store's own.
 */
export function luaProgram({ lean = true }: { lean?: boolean } = {}): LuaProgram {
  const definitions = `${luaConstants({ LEAN_PATH: lean })}${LUA_DEFINITIONS}`;
  const script = `${definitions}${LUA_CALL}`;
  const sha = createHash('sha1').update(script).digest('hex');
  const functionName = `nest_rate_limit_${sha.slice(0, 16)}`;
  // The library builds the twins once, at the first call (the standard libraries are not there while a library
  // loads), and each call then runs only the dispatcher — a script runs all its definitions again at every EVALSHA.
  const library = [
    `#!lua name=${functionName}`,
    'local function build()',
    definitions,
    'return function(KEYS, ARGV)',
    LUA_CALL,
    'end',
    'end',
    'local decide',
    `redis.register_function('${functionName}', function(KEYS, ARGV)`,
    '  if not decide then decide = build() end',
    '  return decide(KEYS, ARGV)',
    'end)',
  ].join('\n');
  return { script, sha, functionName, library };
}

/** The program as shipped, with its lean path. */
export const RATE_LIMIT_PROGRAM: LuaProgram = luaProgram();

/** The one script of the Redis store: every algorithm's Lua twin and the multi-item dispatcher. */
export const RATE_LIMIT_SCRIPT = RATE_LIMIT_PROGRAM.script;

/** SHA1 of the script, computed here so that the caller's client needs no defineCommand. */
export const RATE_LIMIT_SCRIPT_SHA = RATE_LIMIT_PROGRAM.sha;

/**
 * The function (Redis 7 `FCALL`) of the same code: its library builds the twins once, at the first call, and each
 * call then runs only the dispatcher. Named after the script's hash, so that applications on different versions of
 * the module can share a Redis.
 */
export const RATE_LIMIT_FUNCTION = RATE_LIMIT_PROGRAM.functionName;

/** The library that registers RATE_LIMIT_FUNCTION (`FUNCTION LOAD REPLACE`). */
export const RATE_LIMIT_LIBRARY = RATE_LIMIT_PROGRAM.library;
