import { existsSync, readFileSync } from 'node:fs';

import { type DefaultTheme, defineConfig } from 'vitepress';

import { cutSampleSetup } from './cut-sample.js';

/**
 * The documentation site, deployed to GitHub Pages at package.json's `homepage`, so under `/nest-rate-limit/`;
 * `DOCS_BASE` serves it under another path. Dead links fail the build (VitePress's default, kept on).
 */
const base = process.env.DOCS_BASE ?? '/nest-rate-limit/';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  name: string;
  version: string;
};
const REPOSITORY = 'https://github.com/nest-rate-limit/nest-rate-limit';

/** The API reference's own tree, written by etc/docs-generate.mjs beside the pages it generates. */
const API_SIDEBAR = new URL('../api/sidebar.json', import.meta.url);
const apiSidebar: DefaultTheme.SidebarItem[] = existsSync(API_SIDEBAR)
  ? (JSON.parse(readFileSync(API_SIDEBAR, 'utf8')) as DefaultTheme.SidebarItem[])
  : [];

export default defineConfig({
  title: 'nest-rate-limit',
  description: 'Atomic, multi-policy rate limiting for NestJS',
  base,
  // A favicon of the site's own: without one, browsers ask for /favicon.ico at the host's root, outside the base.
  head: [['link', { rel: 'icon', type: 'image/svg+xml', href: `${base}favicon.svg` }]],
  cleanUrls: false,
  lastUpdated: false,
  ignoreDeadLinks: false,
  markdown: {
    config: (md) => cutSampleSetup(md),
  },
  themeConfig: {
    search: { provider: 'local' },
    outline: { level: [2, 3] },
    nav: [
      { text: 'Guide', link: '/getting-started' },
      { text: 'Playground', link: '/playground' },
      { text: 'Operations', link: '/operations' },
      { text: 'API', link: '/api/' },
      {
        text: `v${pkg.version}`,
        items: [
          { text: 'Changelog', link: `${REPOSITORY}/blob/main/CHANGELOG.md` },
          { text: 'npm', link: `https://www.npmjs.com/package/${pkg.name}` },
          { text: 'Repository', link: REPOSITORY },
          { text: 'Issues', link: `${REPOSITORY}/issues` },
        ],
      },
    ],
    socialLinks: [{ icon: 'github', link: REPOSITORY, ariaLabel: 'The repository on GitHub' }],
    sidebar: {
      '/api/': apiSidebar,
      '/': [
        {
          text: 'Introduction',
          items: [
            { text: 'Getting started', link: '/getting-started' },
            { text: 'Versions, formats and bundlers', link: '/compatibility' },
            { text: 'Choosing an algorithm', link: '/algorithms' },
            { text: 'Playground', link: '/playground' },
          ],
        },
        {
          text: 'Policies',
          items: [
            { text: 'Layering, scope, keys and costs', link: '/policies' },
            { text: 'Keys and proxies', link: '/keys-and-proxies' },
            { text: 'Limits per plan', link: '/plans' },
            { text: 'Shadow mode', link: '/shadow' },
            { text: 'Penalties (block)', link: '/block' },
            { text: 'Allow and deny lists', link: '/lists' },
            { text: 'Counting by outcome', link: '/counting-by-outcome' },
            { text: 'Concurrency limits', link: '/concurrency' },
            { text: 'Shedding load', link: '/shedding-load' },
            { text: 'Quotas', link: '/quotas' },
            { text: 'Hot keys (lease)', link: '/hot-keys' },
          ],
        },
        {
          text: 'Running it',
          items: [
            { text: 'Module options', link: '/options' },
            { text: 'Stores', link: '/stores' },
            { text: 'Every Nest context', link: '/contexts' },
            { text: 'What clients see', link: '/responses' },
            { text: 'Failure: timeouts, breaker, fail modes', link: '/failure' },
            { text: 'Changing a policy', link: '/changing-a-policy' },
            { text: 'RateLimitService and acquire()', link: '/service' },
            { text: 'Limiting AI endpoints', link: '/ai-endpoints' },
            { text: 'Testing', link: '/testing' },
            { text: 'Operations', link: '/operations' },
            { text: 'Operating it: overrides and the command line', link: '/operating-it' },
            { text: 'Dashboard and alerts', link: '/operations-dashboard' },
            { text: 'Troubleshooting', link: '/troubleshooting' },
          ],
        },
        {
          text: 'Reference',
          items: [
            { text: 'Migrating from @nestjs/throttler', link: '/migration-from-throttler' },
            { text: 'Benchmarks', link: '/benchmarks' },
            { text: 'Fleet simulation', link: '/fleet-simulation' },
            { text: 'How it is tested', link: '/how-it-is-tested' },
            { text: 'API reference', link: '/api/' },
          ],
        },
      ],
    },
  },
});
