import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { SLOW, SLOW_PROJECT, TIERS } from '../provision/tiers.mjs';

// The tiers of test/provision/tiers.mjs: every spec file runs in exactly one folder tier (npm run test:tier --
// <name>), npm test runs all but the slow ones, and CI runs those in a step of their own.

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Every spec file of the repository (node_modules and the consumer apps' own tests aside). */
function specFiles(): string[] {
  return readdirSync(ROOT, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.spec.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .filter((path) => !path.split('/').includes('node_modules') && /^(test|packages\/simulator\/test)\//.test(path))
    .sort();
}

const within = (path: string, file: string) => (path.endsWith('/') ? file.startsWith(path) : file === path);

describe('the tiers of the suite', () => {
  const files = specFiles();

  it('finds the spec files', () => {
    expect(files.length).toBeGreaterThan(150);
    expect(files).toContain('test/unit/tiers.spec.ts');
  });

  it('puts every spec file in exactly one tier of folders (the slow tier aside, which cuts across them)', () => {
    const folderTiers = Object.entries(TIERS).filter(([name]) => name !== 'slow');
    const tiersOf = (file: string) =>
      folderTiers.filter(([, tier]) => tier.paths.some((path) => within(path, file))).map(([name]) => name);
    expect(files.map((file) => ({ file, tiers: tiersOf(file) })).filter(({ tiers }) => tiers.length !== 1)).toEqual([]);
  });

  it('runs each consumer app of test/consumers in a spec file of its own', () => {
    const apps = readdirSync(join(ROOT, 'test', 'consumers'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && /^(nest|contexts-nest)\d+/.test(entry.name))
      .map((entry) => entry.name);
    expect(apps.length).toBeGreaterThanOrEqual(7);
    const spec = (app: string) => `test/consumers/${app.startsWith('nest') ? 'consumers-' : ''}${app}.spec.ts`;
    expect(apps.filter((app) => !files.includes(spec(app)))).toEqual([]);
  });

  it('has a slow tier of the files of SLOW, each naming files that exist', () => {
    expect(TIERS.slow.paths).toEqual(SLOW);
    for (const path of SLOW) expect([path, files.some((file) => within(path, file))]).toEqual([path, true]);
    for (const [name, tier] of Object.entries(TIERS)) {
      const slow = tier.paths.every((path) => SLOW.some((s) => within(s, path) || s === path));
      expect([name, tier.slow === true]).toEqual([name, slow]);
    }
  });

  it('leaves the slow files out of npm test, and runs them in CI in a step of their own', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    const test = /^NODE_OPTIONS=.* jest (--ignoreProjects \S+)$/.exec(scripts.test ?? '')?.[1];
    expect(test).toBe(`--ignoreProjects ${SLOW_PROJECT}`);
    // What Jest itself finds, with npm test's projects and with the slow one.
    const listed = (...args: string[]) => {
      const jest = join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');
      const run = spawnSync(process.execPath, [jest, '--listTests', ...args], { cwd: ROOT, encoding: 'utf8' });
      expect(run.status).toBe(0);
      return run.stdout
        .split('\n')
        .filter((line) => line.endsWith('.spec.ts'))
        .map((line) => relative(ROOT, line))
        .sort();
    };
    const slow = files.filter((file) => SLOW.some((path) => within(path, file)));
    expect(listed('--selectProjects', SLOW_PROJECT)).toEqual(slow);
    expect(listed('--ignoreProjects', SLOW_PROJECT)).toEqual(files.filter((file) => !slow.includes(file)));
    expect(scripts['test:slow']).toBe('node test/provision/run-tier.mjs slow');
    expect(read('.ci/run')).toMatch(/^\.ci\/jest-exits npm run test:slow -- --json --outputFile=\S+/m);
  }, 30_000);
});
