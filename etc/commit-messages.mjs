#!/usr/bin/env node
// Holds commit messages to CONTRIBUTING's rule: a subject of at most 72 characters in the imperative, a blank
// line, then the why. `node etc/commit-messages.mjs` checks every commit since RULE_SINCE (the last commit
// before the rule); in a shallow clone that lacks it, the commits the clone has. `npm run lint` runs it.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The last commit written before the rule: the history up to it is left as it is. */
export const RULE_SINCE = '6786a38';

/** The longest subject. */
export const SUBJECT_MAX = 72;

/** First words that say what was done or is being done rather than what the commit does. */
const NOT_IMPERATIVE = /^(?:\w+(?:ed|ing)|adds|fixes|makes|moves|removes|updates)$/i;
/** Words ending in -ed or -ing that are imperative verbs all the same. */
const IMPERATIVE_ANYWAY = new Set(['embed', 'feed', 'need', 'seed', 'shed', 'speed', 'bring', 'string', 'ring']);

/** What is wrong with one commit message (its full text), or an empty list. */
export function problemsOf(message) {
  const [subject = '', blank, ...body] = message.replace(/\s+$/, '').split('\n');
  if (/^Merge (?:branch|remote-tracking branch|pull request) /.test(subject)) return [];
  const problems = [];
  if (subject.length > SUBJECT_MAX)
    problems.push(`its subject has ${subject.length} characters (at most ${SUBJECT_MAX})`);
  if (subject.trim() === '') problems.push('it has no subject');
  if (/\.$/.test(subject)) problems.push('its subject ends with a full stop');
  const first = subject.split(/[\s:]/)[0] ?? '';
  if (NOT_IMPERATIVE.test(first) && !IMPERATIVE_ANYWAY.has(first.toLowerCase())) {
    problems.push(`its subject starts with "${first}", not the imperative ("Add", "Fix", "Move")`);
  }
  if (blank !== undefined && blank.trim() !== '') problems.push('its subject is not followed by a blank line');
  else if (body.join('').trim() === '') problems.push('it has no body saying why');
  return problems;
}

/** The commits to check: those since RULE_SINCE, or all a shallow clone has. */
function commits(root) {
  const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' });
  let range;
  try {
    git('cat-file', '-e', `${RULE_SINCE}^{commit}`);
    range = [`${RULE_SINCE}..HEAD`];
  } catch {
    range = ['HEAD'];
  }
  const log = git('log', '--no-merges', '--format=%H%x00%B%x01', ...range);
  return log
    .split('\x01')
    .map((entry) => entry.replace(/^\n/, ''))
    .filter((entry) => entry.includes('\x00'))
    .map((entry) => {
      const [hash, message] = entry.split('\x00');
      return { hash, message };
    });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const bad = commits(root)
    .map(({ hash, message }) => ({ hash, subject: message.split('\n')[0], problems: problemsOf(message) }))
    .filter(({ problems }) => problems.length > 0);
  for (const { hash, subject, problems } of bad) {
    console.error(`${hash.slice(0, 10)} "${subject}": ${problems.join('; ')}`);
  }
  if (bad.length > 0) {
    console.error(`${bad.length} commit message(s) break CONTRIBUTING's rule (## Before a change lands).`);
    process.exit(1);
  }
}
