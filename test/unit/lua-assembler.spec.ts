import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

/** A sound program: a constant, a file that uses it, the call file. */
const SOUND: Record<string, string> = {
  'lib/stores/redis/lua-constants.ts': 'export const LUA_CONSTANTS = { ANSWER: 42 };\n',
  'lib/one.lua': '-- requires: ANSWER\n-- provides: twice\nlocal function twice(n) return 2 * n * ANSWER end\n',
  'lib/stores/redis/lua/call.lua': '-- requires: twice\n-- provides: (nothing)\nreturn twice(1)\n',
};

/** etc/lua/assemble.mjs on a repository of `files` (SOUND's, changed): its exit code and what it printed. */
function assemble(files: Record<string, string | undefined>): { status: number | null; stderr: string } {
  const root = mkdtempSync(join(tmpdir(), 'lua-assembler-'));
  try {
    copyFileSync(join(ROOT, '.stylua.toml'), join(root, '.stylua.toml'));
    for (const [file, text] of Object.entries({ ...SOUND, ...files })) {
      if (text === undefined) continue;
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), text);
    }
    const run = spawnSync(process.execPath, [join(ROOT, 'etc/lua/assemble.mjs')], {
      env: { ...process.env, LUA_ASSEMBLE_ROOT: root },
      encoding: 'utf8',
    });
    return { status: run.status, stderr: run.stderr };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

describe('the Lua assembler (etc/lua/assemble.mjs)', () => {
  it('assembles a sound program', () => {
    expect(assemble({})).toEqual({ status: 0, stderr: '' });
  });

  it.each<[string, Record<string, string | undefined>, string]>([
    [
      'a local never used',
      { 'lib/one.lua': `${SOUND['lib/one.lua']}local x = twice(1)\n` },
      'lib/one.lua:4: local `x` is never used',
    ],
    [
      'files that require what the other provides (each would be used before it is defined)',
      {
        'lib/one.lua': '-- requires: half\n-- provides: twice\nlocal function twice(n) return 2 * half(n) end\n',
        'lib/two.lua':
          '-- requires: twice, ANSWER\n-- provides: half\nlocal function half(n) return twice(n) / ANSWER end\n',
      },
      'a cycle of requires among lib/one.lua, lib/two.lua',
    ],
    [
      'a name used before its local (in the same file)',
      {
        'lib/one.lua':
          '-- requires: ANSWER\n-- provides: twice\nlocal function twice(n) return half(n) * ANSWER end\nlocal function half(n) return n end\n',
      },
      'lib/one.lua:3: `half` is used but not defined',
    ],
    [
      'a name defined twice',
      { 'lib/two.lua': '-- requires: (nothing)\n-- provides: twice\nlocal function twice(n) return n end\n' },
      '`twice` is defined twice: lib/one.lua:3 and lib/two.lua:3',
    ],
    [
      'a name required but never provided',
      { 'lib/stores/redis/lua/call.lua': '-- requires: twice, thrice\n-- provides: (nothing)\nreturn twice(thrice)\n' },
      'lib/stores/redis/lua/call.lua: requires `thrice`, which no file provides and LUA_CONSTANTS does not define',
    ],
    [
      'a name provided but never used',
      {
        'lib/one.lua': `${SOUND['lib/one.lua']}local function thrice(n) return 3 * n end\n`.replace(
          'provides: twice',
          'provides: twice, thrice',
        ),
      },
      'lib/one.lua: provides `thrice`, which no file requires',
    ],
    [
      'a global that is not Redis’',
      { 'lib/stores/redis/lua/call.lua': '-- requires: twice\n-- provides: (nothing)\nreturn twice(os.time())\n' },
      'lib/stores/redis/lua/call.lua:3: `os` is used but not defined',
    ],
  ])('fails on %s, naming the file and the name', (_, files, problem) => {
    const { status, stderr } = assemble(files);
    expect(status).toBe(1);
    expect(stderr).toContain(problem);
  });
});
