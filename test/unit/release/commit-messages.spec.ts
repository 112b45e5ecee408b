import { problemsOf, SUBJECT_MAX } from '../../../etc/commit-messages.mjs';

describe('commit messages (CONTRIBUTING: a subject of at most 72 characters, imperative, then the why)', () => {
  const why = '\n\nThe why: what broke, and what a maintainer reading the history needs.';

  it('takes a short imperative subject, a blank line and a body', () => {
    expect(problemsOf(`Move the Lua into .lua files${why}`)).toEqual([]);
    expect(problemsOf(`Embed the shape in the key's hash${why}\n`)).toEqual([]);
  });

  it(`refuses a subject over ${SUBJECT_MAX} characters, naming its length`, () => {
    const subject = `Fix ${'x'.repeat(SUBJECT_MAX - 3)}`;
    expect(problemsOf(`${subject}${why}`)).toEqual([`its subject has ${SUBJECT_MAX + 1} characters (at most 72)`]);
    expect(problemsOf(`${subject.slice(1)}${why}`)).toEqual([]);
  });

  it('refuses a subject in the past tense or the -ing form, and one ending with a full stop', () => {
    expect(problemsOf(`Added the lint${why}`)).toEqual([
      'its subject starts with "Added", not the imperative ("Add", "Fix", "Move")',
    ]);
    expect(problemsOf(`Fixing the lint${why}`)[0]).toMatch(/starts with "Fixing"/);
    expect(problemsOf(`Adds the lint${why}`)[0]).toMatch(/starts with "Adds"/);
    expect(problemsOf(`Add the lint.${why}`)).toEqual(['its subject ends with a full stop']);
  });

  it('refuses a message without the why, or without the blank line before it', () => {
    expect(problemsOf('Add the lint')).toEqual(['it has no body saying why']);
    expect(problemsOf('Add the lint\n\n')).toEqual(['it has no body saying why']);
    expect(problemsOf('Add the lint\nbecause')).toEqual(['its subject is not followed by a blank line']);
  });

  it("leaves git's merge commits alone", () => {
    expect(problemsOf("Merge branch 'h2-lua'")).toEqual([]);
  });
});
