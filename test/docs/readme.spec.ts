import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// The README is the npm page: a short landing page whose links lead to the docs site and the repository. The
// registry renders it with no repository around it, so a relative link is dead there: every link is absolute,
// built on package.json's "homepage" (the docs site) or "repository", and still names a page or file that exists.

const ROOT = join(import.meta.dirname, '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  homepage?: string;
  repository?: { type?: string; url?: string };
  bugs?: { url?: string };
};
const SITE = 'https://nest-rate-limit.github.io/nest-rate-limit/';
const REPO = 'https://github.com/nest-rate-limit/nest-rate-limit';

/** The targets of the README's Markdown links, in order. */
const links = [...README.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] ?? '');

/** The anchor VitePress gives a heading: `## A login` is `#a-login`. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** Why a link does not lead anywhere from the registry's page, or undefined when it does. */
function brokenBecause(link: string): string | undefined {
  const [target = '', hash] = link.split('#');
  if (target.startsWith(SITE)) {
    // The site builds docs/<page>.md into <page>.html, a folder into its index.
    const path = target.slice(SITE.length).replace(/\.html$/, '.md');
    if (path.startsWith('api/')) return path === 'api/' ? undefined : 'an API page the README cannot check';
    const page = join(ROOT, 'docs', path === '' ? 'index.md' : path);
    if (!existsSync(page)) return 'no such page in docs/';
    const headings = [...readFileSync(page, 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((match) => slug(match[1] ?? ''));
    return hash === undefined || headings.includes(hash) ? undefined : 'no such heading on the page';
  }
  if (target.startsWith(`${REPO}/blob/main/`)) {
    return existsSync(join(ROOT, target.slice(`${REPO}/blob/main/`.length))) ? undefined : 'no such file';
  }
  if (target === REPO || target === `${REPO}/issues`) return undefined;
  if (target.startsWith(REPO)) return 'a part of the repository the README cannot check';
  if (!/^https:\/\//.test(target)) return 'not absolute: dead on the registry';
  return undefined; // another site
}

describe('the README, the landing page', () => {
  it('is under 15 KB', () => {
    expect(statSync(join(ROOT, 'README.md')).size).toBeLessThan(15_000);
  });

  it('names the public home in package.json, which the registry links from the page', () => {
    expect(pkg.homepage).toBe(SITE);
    expect(pkg.repository).toEqual({ type: 'git', url: `git+${REPO}.git` });
    expect(pkg.bugs?.url).toBe(`${REPO}/issues`);
  });

  it('links to the getting-started page and to a page of the site for each feature', () => {
    const pages = links.filter((link) => link.startsWith(SITE));
    expect(pages.length).toBeGreaterThan(20);
    expect(pages).toContain(`${SITE}getting-started.html`);
    expect(links).toEqual(expect.arrayContaining([`${REPO}/blob/main/CHANGELOG.md`, `${REPO}/blob/main/SECURITY.md`]));
  });

  it('links only through "homepage" or "repository", to pages, headings and files that exist', () => {
    const broken = links.flatMap((link) => {
      const why = brokenBecause(link);
      return why === undefined ? [] : [`${link}: ${why}`];
    });
    expect(broken).toEqual([]);
  });

  // A reader of the npm page installed the package; the repository's scripts are not there. A contributor's
  // two commands (issue 35) are said once, in the section for those who cloned it.
  it('tells its reader no command that needs a clone of the repository, but where it says it is in a clone', () => {
    const contributing = README.indexOf('\n## Support and contributing\n');
    const section = README.slice(contributing, README.indexOf('\n## ', contributing + 1));
    const commands = /npm (start|test|run [\w:-]+)\b/g;
    expect(README.replace(section, '').match(commands) ?? []).toEqual([]);
    expect(section.match(commands)).toEqual(['npm start', 'npm test']);
    expect(section).toMatch(/In a clone, after\s+`npm install`, two commands/);
  });

  it('has a Quick start of one policy on one route, with its main.ts, the 429 it gives, and the login next', () => {
    const section = README.slice(
      README.indexOf('\n## Quick start\n'),
      README.indexOf('\n## ', README.indexOf('\n## Quick start\n') + 1),
    );
    const code = /```ts\n([\s\S]*?)\n```/.exec(section)?.[1] ?? '';
    expect(code.match(/@RateLimit\(/g)).toHaveLength(1);
    expect(code).not.toMatch(/defaults:/);
    expect(code).toContain('NestFactory.create(AppModule)');
    expect(code).toMatch(/app\.listen\(/);
    const http = /```http\n([\s\S]*?)\n```/.exec(section)?.[1] ?? '';
    expect(http).toMatch(/^HTTP\/1\.1 429 Too Many Requests\n/);
    expect(http).toMatch(/^Retry-After: \d+$/m);
    expect(http).toMatch(/^RateLimit: /m);
    expect(http).toMatch(/\n\n\{"statusCode":429,/);
    expect(section).toContain(`${SITE}getting-started.html#a-login`);
  });
});
