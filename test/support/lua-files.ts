import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { luaConstants } from '../../lib/stores/redis/lua-constants.js';

const ROOT = join(import.meta.dirname, '../..');

/**
 * The constants of the Redis store's program (lua-constants.ts) and the .lua `files` (paths from the repository's
 * root, in the program's order), for a test that runs a part of the program in Redis.
 */
export function luaFiles(...files: string[]): string {
  return [luaConstants(), ...files.map((file) => readFileSync(join(ROOT, file), 'utf8'))].join('\n');
}

export const PRELUDE_LUA = 'lib/stores/redis/lua/prelude.lua';
export const STATE_CODEC_LUA = 'lib/stores/redis/lua/state-codec.lua';
export const GCRA_LUA = 'lib/algorithms/gcra/gcra.lua';
