import { parseArgs } from 'node:util';

import { CliError } from './cli-error.js';
import { type CommandOptions, type CommandResult, Commands } from './commands.js';
import { type CliStore, connect } from './connection.js';

const CONNECTION_HELP = `Connection (as the app's RateLimitModule options; each also from the environment):
  --redis <url>        NEST_RATE_LIMIT_REDIS_URL      redis://host:port, rediss://…, unix:///path
  --postgres <url>     NEST_RATE_LIMIT_POSTGRES_URL   postgres://user@host/db
  --schema <name>      NEST_RATE_LIMIT_SCHEMA         PostgreSQL schema (default public)
  --prefix <prefix>    NEST_RATE_LIMIT_KEY_PREFIX     the app's keyPrefix (default rl:)
  --readable-keys      NEST_RATE_LIMIT_READABLE_KEYS=1
  the identity secret: NEST_RATE_LIMIT_IDENTITY_SECRET only (never on a command line, where ps shows it)
  --json               print JSON for scripts`;

/** Each command's usage and what it does. */
const COMMANDS: Record<string, { usage: string; about: string }> = {
  inspect: {
    usage: 'inspect <policy> <identity>',
    about: 'remaining, reset, blocked-until and the override in force, read with the recorded shape',
  },
  reset: { usage: 'reset <policy> <identity>', about: 'forget what the identity consumed (and its block)' },
  block: { usage: 'block <policy> <identity> --for <duration>', about: 'deny the identity for a while (15m, 2h)' },
  unblock: { usage: 'unblock <policy> <identity>', about: 'lift a block' },
  'override set': {
    usage: 'override set <policy> <identity> [--limit N] [--burst N] [--ttl 2h] [--reason …] [--shadow]',
    about: "change the identity's limit on every instance (--shadow: a dry run)",
  },
  'override rm': { usage: 'override rm <policy> <identity>', about: 'remove an override' },
  'override ls': { usage: 'override ls [policy]', about: 'the overrides in force (identities as their hash)' },
  policies: { usage: 'policies', about: 'the policies the running instances recorded, with their shapes' },
};

const usage = (): string =>
  [
    'Usage: npx nest-rate-limit <command> [options]',
    '',
    'Commands:',
    ...Object.values(COMMANDS).map(({ usage: u, about }) => `  ${u}\n      ${about}`),
    '',
    CONNECTION_HELP,
    '',
    "<identity> is what the policy counts by: ip:<address>, user:<id>, or a key function's value.",
    "Changes reach every instance through the store's feed of changes, as RateLimitService's do.",
  ].join('\n');

const commandHelp = (name: string): string => {
  const command = COMMANDS[name] as { usage: string; about: string };
  return `Usage: npx nest-rate-limit ${command.usage}\n\n${command.about}\n\n${CONNECTION_HELP}`;
};

/** Where the command writes. */
export interface CliOutput {
  write(text: string): void;
  error(text: string): void;
}

/**
 * Runs the command line `argv` (without node and the script) and resolves with its exit code: 0 done, 1 a command
 * that could not be carried out (a store it cannot reach, a policy it does not know, a secret that is not the
 * instances'), 2 a command line it does not understand.
 */
export async function runCli(argv: readonly string[], env: NodeJS.ProcessEnv, out: CliOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        redis: { type: 'string' },
        postgres: { type: 'string' },
        schema: { type: 'string' },
        prefix: { type: 'string' },
        'readable-keys': { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        for: { type: 'string' },
        limit: { type: 'string' },
        burst: { type: 'string' },
        ttl: { type: 'string' },
        reason: { type: 'string' },
        shadow: { type: 'boolean' },
      },
    });
  } catch (error) {
    out.error(`${(error as Error).message}\n\n${usage()}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [first, second] = positionals;
  const name = first === 'override' && second !== undefined ? `override ${second}` : first;
  if (name === undefined || COMMANDS[name] === undefined) {
    if (values.help === true || name === undefined) {
      out.write(usage());
      return values.help === true ? 0 : 2;
    }
    out.error(`unknown command "${positionals.join(' ')}"\n\n${usage()}`);
    return 2;
  }
  if (values.help === true) {
    out.write(commandHelp(name));
    return 0;
  }
  const args = positionals.slice(name.startsWith('override ') ? 2 : 1);
  const wanted = (COMMANDS[name]?.usage.match(/<[a-z]+>/g) ?? []).filter((a) => a !== '<duration>' && a !== '<url>');
  if (args.length < wanted.length || args.length > wanted.length + (name === 'override ls' ? 1 : 0)) {
    out.error(`${name} takes ${wanted.join(' ') || 'no arguments'}\n\n${commandHelp(name)}`);
    return 2;
  }
  let connection: CliStore | undefined;
  try {
    connection = await connect({
      redis: values.redis ?? env.NEST_RATE_LIMIT_REDIS_URL,
      postgres: values.postgres ?? env.NEST_RATE_LIMIT_POSTGRES_URL,
      schema: values.schema ?? env.NEST_RATE_LIMIT_SCHEMA,
      keyPrefix: values.prefix ?? env.NEST_RATE_LIMIT_KEY_PREFIX ?? 'rl:',
      identitySecret: env.NEST_RATE_LIMIT_IDENTITY_SECRET,
      readableKeys: values['readable-keys'] === true || env.NEST_RATE_LIMIT_READABLE_KEYS === '1',
    });
    const result = await dispatch(new Commands(connection), name, args, values);
    out.write(values.json === true ? JSON.stringify(result.json, null, 2) : result.text);
    return 0;
  } catch (error) {
    out.error(`nest-rate-limit ${name}: ${error instanceof CliError ? error.message : String(error)}`);
    return 1;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

function dispatch(
  commands: Commands,
  name: string,
  args: readonly string[],
  options: CommandOptions,
): Promise<CommandResult> {
  const [policy = '', identity = ''] = args;
  switch (name) {
    case 'policies':
      return commands.policies();
    case 'inspect':
      return commands.inspect(policy, identity);
    case 'reset':
      return commands.reset(policy, identity);
    case 'block':
      return commands.block(policy, identity, options);
    case 'unblock':
      return commands.unblock(policy, identity);
    case 'override set':
      return commands.overrideSet(policy, identity, options);
    case 'override rm':
      return commands.overrideRemove(policy, identity);
    default:
      return commands.overrideList(args[0]);
  }
}
