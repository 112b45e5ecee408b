import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

import { luaProgram } from '../../lib/stores/redis/rate-limit.lua.js';

const ROOT = join(import.meta.dirname, '../..');

/** What `node etc/lua/assemble.mjs --check` says (npm run lint runs it), and whether it passed. */
function assemblerCheck(): { ok: boolean; output: string } {
  try {
    execFileSync(process.execPath, ['etc/lua/assemble.mjs', '--check'], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
    return { ok: true, output: '' };
  } catch (error) {
    return { ok: false, output: String((error as { stderr?: string }).stderr ?? error) };
  }
}

describe("the Redis store's Lua program", () => {
  it('is the assembly of the .lua files as they are: program.generated.ts is not stale, the files pass the lint', () => {
    expect(assemblerCheck()).toEqual({ ok: true, output: '' });
  });

  it('differs without its lean path only in LEAN_PATH, and by its SHA and function name', () => {
    const shipped = luaProgram();
    const twinsOnly = luaProgram({ lean: false });
    expect(shipped.script).toContain('local LEAN_PATH = true\n');
    expect(twinsOnly.script).toBe(shipped.script.replace('local LEAN_PATH = true\n', 'local LEAN_PATH = false\n'));
    expect(twinsOnly.sha).not.toBe(shipped.sha);
    expect(twinsOnly.library).toContain(`#!lua name=${twinsOnly.functionName}`);
    expect(twinsOnly.functionName).not.toBe(shipped.functionName);
  });
});
