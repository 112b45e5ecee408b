import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { ALGORITHM_CODES, ALGORITHM_STEPS, type AlgorithmKernel } from '../../../lib/algorithms/index.js';
import { TWINS } from '../../../lib/algorithms/twins.js';
import { LUA_CONSTANTS } from '../../../lib/stores/redis/lua-constants.js';

const ALGORITHMS_DIR = join(import.meta.dirname, '../../../lib/algorithms');
const DISPATCHER = join(import.meta.dirname, '../../../lib/stores/redis/lua/dispatcher.lua');
const KERNELS = Object.keys(ALGORITHM_CODES) as AlgorithmKernel[];

/** The name of a kernel's code among the Lua's constants: CODE_FIXED_WINDOW for 'fixed-window'. */
const codeName = (kernel: AlgorithmKernel) => `CODE_${kernel.toUpperCase().replaceAll('-', '_')}`;

describe('the twin table (lib/algorithms/twins.ts)', () => {
  it('names every algorithm kernel, and nothing else', () => {
    expect(Object.keys(TWINS).sort()).toEqual([...KERNELS].sort());
    expect(Object.keys(ALGORITHM_STEPS).sort()).toEqual([...KERNELS].sort());
  });

  it.each(KERNELS)('%s: its TypeScript step, Lua file and SQL exist', (kernel) => {
    const { step, lua, sql } = TWINS[kernel];
    for (const file of [step, lua, sql])
      expect({ file, exists: existsSync(join(ALGORITHMS_DIR, file)) }).toEqual({ file, exists: true });
  });

  it.each(KERNELS)('%s: its step is the one ALGORITHM_STEPS decides by', async (kernel) => {
    const { step, stepExport } = TWINS[kernel];
    const module = (await import(join(ALGORITHMS_DIR, step))) as Record<string, unknown>;
    expect(module[stepExport]).toBe(ALGORITHM_STEPS[kernel]);
  });

  it.each(KERNELS)("%s: its Lua file provides its maker, which the dispatcher's MAKERS picks by its code", (kernel) => {
    const { lua, maker } = TWINS[kernel];
    const text = readFileSync(join(ALGORITHMS_DIR, lua), 'utf8');
    expect(text).toMatch(new RegExp(`^local function ${maker}\\(\\)`, 'm'));
    const provides = /^-- provides: (.*)$/m.exec(text)?.[1] ?? '';
    expect(provides.split(', ')).toContain(maker);
    expect((LUA_CONSTANTS as Record<string, unknown>)[codeName(kernel)]).toBe(ALGORITHM_CODES[kernel]);
    expect(readFileSync(DISPATCHER, 'utf8')).toContain(`  [${codeName(kernel)}] = ${maker},\n`);
  });
});
