import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// The README is the npm page: a short landing page whose links lead to the docs. package.json's "homepage",
// when set, is the one definition of where the docs site lives, and every link to a page of the site starts
// with it; until it is set, the links are relative (docs/<page>.md, which GitHub and any clone render).

const ROOT = join(import.meta.dirname, '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const { homepage } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { homepage?: string };

/** The targets of the README's Markdown links, in order. */
const links = [...README.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] ?? '');

describe('the README, the landing page', () => {
  it('is under 15 KB', () => {
    expect(statSync(join(ROOT, 'README.md')).size).toBeLessThan(15_000);
  });

  it('links to the getting-started page and to a page of the site for each feature', () => {
    const pages = links.filter((link) => link.includes('docs/') || (homepage && link.startsWith(homepage)));
    expect(pages.length).toBeGreaterThan(15);
    expect(pages.some((link) => link.includes('getting-started'))).toBe(true);
  });

  it('links only to files that exist, or to the docs site through package.json "homepage"', () => {
    const broken = links.filter((link) => {
      if (link.startsWith('#')) return false;
      if (homepage !== undefined && link.startsWith(homepage)) {
        // The site builds docs/<page>.md into <page>.html.
        const page =
          link
            .slice(homepage.length)
            .replace(/#.*$/, '')
            .replace(/\.html$/, '.md') || 'index.md';
        return !existsSync(join(ROOT, 'docs', page));
      }
      if (/^[a-z]+:/i.test(link)) return false; // another site
      if (homepage !== undefined && link.startsWith('docs/')) return true; // must go through homepage
      return !existsSync(join(ROOT, link.replace(/#.*$/, '')));
    });
    expect(broken).toEqual([]);
  });
});
