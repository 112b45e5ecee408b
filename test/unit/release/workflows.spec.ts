import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { parse } from 'yaml';

import { changelogEntry } from '../../../.ci/changelog-entry.mjs';

// The GitHub Actions workflows cannot run here. What a tool can check, is: each is a valid workflow (the schema
// check of @action-validator/core, offline), CI runs .ci/run's commands in .ci/run's order, the docs site is
// built under the base its address has, and a release publishes with provenance from a CHANGELOG entry.

const ROOT = join(import.meta.dirname, '..', '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const { validateWorkflow } = createRequire(import.meta.url)('@action-validator/core') as {
  validateWorkflow(src: string): { errors: unknown[] };
};

interface Step {
  run?: string;
  uses?: string;
  if?: string;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
}
interface Job {
  steps?: Step[];
  needs?: string | string[];
  uses?: string;
  permissions?: Record<string, string>;
  strategy?: { matrix?: { node?: number[] } };
  services?: Record<string, { image?: string }>;
  env?: Record<string, string | number>;
}
interface Workflow {
  on: Record<string, unknown>;
  permissions?: Record<string, string>;
  jobs: Record<string, Job>;
}
const workflow = (name: string) => parse(read(`.github/workflows/${name}`)) as Workflow;

/** A command with its whitespace collapsed, so that a step's `|` block compares with .ci/run's lines. */
const flat = (command: string) => command.replace(/\s+/g, ' ').trim();

/**
 * The commands of .ci/run in order: one per line, a quoted argument running on over lines; without the shell's
 * set-up (`set`, `cd`, the status variable) and with the `|| status=…` that lets the run go on after a failure.
 */
function ciRunCommands(script: string): string[] {
  const commands: string[] = [];
  let pending = '';
  for (const line of script.split('\n')) {
    if (pending === '' && (line.trim() === '' || line.trim().startsWith('#'))) continue;
    pending += (pending === '' ? '' : '\n') + line;
    if ((pending.match(/'/g) ?? []).length % 2 === 1) continue; // inside a quoted argument
    commands.push(pending);
    pending = '';
  }
  return commands
    .map((command) => flat(command.replace(/\s*\|\|\s*status=\S+\s*$/, '')))
    .filter((command) => !/^(set |cd |status=|exit )/.test(command));
}

describe('the GitHub Actions workflows', () => {
  it.each(['ci.yml', 'docs.yml', 'release.yml'])('%s is a valid workflow', (name) => {
    expect(validateWorkflow(read(`.github/workflows/${name}`)).errors).toEqual([]);
  });

  it('the schema check finds a mistake (a job without runs-on)', () => {
    const broken = read('.github/workflows/docs.yml').replace(/runs-on:/g, 'runs-onn:');
    expect(validateWorkflow(broken).errors).not.toEqual([]);
  });

  it("CI runs .ci/run's commands, in its order, on Node 22 and 24 with PostgreSQL", () => {
    const local = ciRunCommands(read('.ci/run'));
    expect(local).toContain('npm publish --dry-run --force');
    expect(local.length).toBeGreaterThan(8);
    const job = workflow('ci.yml').jobs.test;
    const steps = (job?.steps ?? []).flatMap((step) => (step.run === undefined ? [] : [flat(step.run)]));
    // .ci/run runs the other Node lines through .ci/node-lines; here the matrix is the line, and .ci/node-lines
    // runs the lines no matrix entry does.
    const nodeLines = (commands: string[]) => commands.filter((command) => command.startsWith('.ci/node-lines'));
    const others = (commands: string[]) => commands.filter((command) => !command.startsWith('.ci/node-lines'));
    expect(others(steps)).toEqual(others(local));
    expect(steps.indexOf(nodeLines(steps)[0] ?? '')).toBe(steps.length - 1);

    const matrix = job?.strategy?.matrix?.node ?? [];
    expect(matrix).toEqual([22, 24]);
    const lines = (commands: string[]) =>
      nodeLines(commands).flatMap((command) => command.split(' ').slice(1).map(Number));
    const covered = new Set([...matrix, ...lines(steps)]);
    const { engines } = JSON.parse(read('package.json')) as { engines: { node: string } };
    const majors = [...engines.node.matchAll(/\^(\d+)/g)].map((match) => Number(match[1]));
    for (const line of [...lines(local), ...majors]) expect([line, covered.has(line)]).toEqual([line, true]);

    expect(job?.services?.postgres?.image).toMatch(/^postgres:\d+/);
    expect(job?.env?.PGHOST).toBe('postgres');
  });

  it('deploys the docs site from main, built under the base path of "homepage"', () => {
    const docs = workflow('docs.yml');
    expect(docs.on.push).toEqual({ branches: ['main'] });
    const { homepage } = JSON.parse(read('package.json')) as { homepage: string };
    const steps = Object.values(docs.jobs).flatMap((job) => job.steps ?? []);
    const build = steps.find((step) => step.run === 'npm run docs:build');
    expect(build?.env?.DOCS_BASE).toBe(new URL(homepage).pathname);
    const upload = steps.find((step) => step.uses?.startsWith('actions/upload-pages-artifact@'));
    expect(upload?.with?.path).toBe('docs/.vitepress/dist');
    expect(steps.some((step) => step.uses?.startsWith('actions/deploy-pages@'))).toBe(true);
    expect(docs.permissions).toMatchObject({ pages: 'write', 'id-token': 'write' });
  });

  it('publishes a version tag with provenance, after CI, with its CHANGELOG entry as the notes', () => {
    const release = workflow('release.yml');
    expect(release.on.push).toEqual({ tags: ['v*'] });
    expect(release.jobs.ci?.uses).toBe('./.github/workflows/ci.yml');
    expect(workflow('ci.yml').on).toHaveProperty('workflow_call');
    const publish = release.jobs.publish;
    expect(publish?.needs).toBe('ci');
    expect(publish?.permissions).toMatchObject({ 'id-token': 'write' });
    const runs = (publish?.steps ?? []).map((step) => step.run ?? '');
    const entry = runs.findIndex((run) => run.startsWith('node .ci/changelog-entry.mjs'));
    const npmPublish = runs.findIndex((run) => /^npm publish .*--provenance/.test(run));
    expect(entry).toBeGreaterThanOrEqual(0);
    expect(npmPublish).toBeGreaterThan(entry);
  });

  it("finds the CHANGELOG entry of package.json's version, and refuses a version without one", () => {
    const { version } = JSON.parse(read('package.json')) as { version: string };
    expect(changelogEntry(read('CHANGELOG.md'), version)).not.toBe('');
    expect(() => changelogEntry('# Changelog\n\n## Unreleased\n\n- a fix\n', '9.9.9')).toThrow(
      'CHANGELOG.md has no "## 9.9.9" entry',
    );
  });
});

describe('the files of the public repository', () => {
  it('has a security policy, issue and pull-request templates and a dependency-update config', () => {
    for (const file of [
      'SECURITY.md',
      '.github/ISSUE_TEMPLATE/bug_report.yml',
      '.github/ISSUE_TEMPLATE/feature_request.yml',
      '.github/ISSUE_TEMPLATE/config.yml',
      '.github/pull_request_template.md',
    ]) {
      expect([file, existsSync(join(ROOT, file))]).toEqual([file, true]);
    }
    expect(read('SECURITY.md')).toMatch(/## Reporting a vulnerability[\s\S]*## Supported versions/);
    const dependabot = parse(read('.github/dependabot.yml')) as { updates: { 'package-ecosystem': string }[] };
    expect(dependabot.updates.map((update) => update['package-ecosystem'])).toEqual(
      expect.arrayContaining(['npm', 'github-actions']),
    );
  });
});
