import { defineConfig } from 'vitepress';

/**
 * The documentation site. `DOCS_BASE` sets the path it is served under (default `/`), for a deployment
 * under a sub-path such as `/nest-rate-limit/`.
 */
export default defineConfig({
  title: 'nest-rate-limit',
  description: 'Atomic, multi-policy rate limiting for NestJS',
  base: process.env.DOCS_BASE ?? '/',
  cleanUrls: false,
  lastUpdated: false,
  themeConfig: {
    nav: [{ text: 'Guide', link: '/' }],
    sidebar: [{ text: 'Guide', items: [{ text: 'Introduction', link: '/' }] }],
  },
});
