import { FakeClock } from '../../lib/testing/index.js';
import {
  errorsByPath,
  GRAPHQL_DRIVERS,
  policyNames,
  startGraphQLApp,
  type GraphQLTestApp,
} from '../support/graphql-app.js';
import { alignedStart } from '../support/time.js';
import { LibraryResolver, PER_USER } from './fixtures.js';

const IP = 'ip:127.0.0.1';

describe.each(GRAPHQL_DRIVERS)('GraphQL policies and denials on %s', (driver) => {
  let t: GraphQLTestApp;
  beforeEach(async () => {
    t = await startGraphQLApp(driver, {
      resolvers: [LibraryResolver],
      rateLimit: { defaults: [PER_USER] },
      fieldResolverEnhancers: ['guards'],
      clock: new FakeClock(alignedStart(60_000) + 60_000),
    });
  });
  afterEach(() => t.close());
  const remaining = async (policy: string, key = IP) => (await t.service().peek(policy, key)).remaining;

  it('applies the defaults, then the resolver class, then the handler, in that order, on the HTTP response', async () => {
    const res = await t.gql('{ limited }');
    expect(res.data).toEqual({ limited: 'ok' });
    expect(res.errors).toBeUndefined();
    expect(res.headers['ratelimit-policy']).toBe('"per-user";q=1000;w=60, "library";q=100;w=60, "limited";q=1;w=60');
    expect(res.headers['ratelimit']).toBe('"per-user";r=999;t=60, "library";r=99;t=60, "limited";r=0;t=60');
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('denies the field with a GraphQL error at its path, extensions exact, and resolves the others', async () => {
    await t.gql('{ limited }');
    const res = await t.gql('{ hello limited }');
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ hello: 'hello', limited: null });
    expect(res.errors).toEqual([
      {
        message: 'Rate limit "limited" exceeded; retry in 60 s',
        path: ['limited'],
        locations: [{ line: 1, column: 9 }],
        extensions: { code: 'RATE_LIMITED', policy: 'limited', retryAfter: 60 },
      },
    ]);
    expect(res.headers['retry-after']).toBe('60');
    // Alone, the denied field's headers are the response's: what is left, nothing consumed by the denial.
    const alone = await t.gql('{ limited }');
    expect(alone.errors?.map((e) => e.extensions)).toEqual([
      { code: 'RATE_LIMITED', policy: 'limited', retryAfter: 60 },
    ]);
    expect(alone.headers['ratelimit']).toBe('"per-user";r=998;t=60, "library";r=98;t=60, "limited";r=0;t=60');
    expect(alone.headers['retry-after']).toBe('60');
  });

  it('charges a field selected under two aliases twice', async () => {
    const first = await t.gql('{ a: pair b: pair }');
    expect(first.data).toEqual({ a: 'ok', b: 'ok' });
    expect(await remaining('pair')).toBe(1);
    expect(await remaining('library')).toBe(98);
    const second = await t.gql('{ a: pair b: pair }');
    const values = [second.data?.a, second.data?.b];
    expect(values.filter((v) => v === 'ok')).toHaveLength(1);
    expect(values.filter((v) => v === null)).toHaveLength(1);
    expect(second.errors?.map((e) => [e.path?.length, e.extensions])).toEqual([
      [1, { code: 'RATE_LIMITED', policy: 'pair', retryAfter: 60 }],
    ]);
    expect(await remaining('pair')).toBe(0);
  });

  it('is all-or-nothing across policies: a denial by one consumes nothing of the others', async () => {
    expect((await t.gql('{ both }')).data).toEqual({ both: 'ok' });
    expect([await remaining('tight'), await remaining('loose'), await remaining('library')]).toEqual([0, 9, 99]);
    const denied = await t.gql('{ both }');
    expect(denied.data).toEqual({ both: null });
    expect(denied.errors?.[0]?.extensions).toEqual({ code: 'RATE_LIMITED', policy: 'tight', retryAfter: 60 });
    expect([await remaining('tight'), await remaining('loose'), await remaining('library')]).toEqual([0, 9, 99]);
    expect(await remaining('per-user')).toBe(999);
  });

  it('takes the cost from the query arguments; a cost that can never fit has no retryAfter', async () => {
    const three = await t.gql('{ books(first: 3) { id } }');
    expect(three.data).toEqual({ books: [{ id: 1 }, { id: 2 }, { id: 3 }] });
    expect(await remaining('book-rows')).toBe(7);
    const eight = await t.gql('{ books(first: 8) { id } }');
    expect(eight.data).toEqual({ books: null });
    // One token per 6 s: 8 - 7 = 1 missing.
    expect(eight.errors?.[0]?.extensions).toEqual({ code: 'RATE_LIMITED', policy: 'book-rows', retryAfter: 6 });
    expect(eight.headers['retry-after']).toBe('6');
    expect(await remaining('book-rows')).toBe(7);
    t.clock.advance(6_000);
    expect((await t.gql('{ books(first: 8) { id } }')).data?.books).toHaveLength(8);
    expect(await remaining('book-rows')).toBe(0);

    const never = await t.gql('{ books(first: 50) { id } }');
    expect(never.data).toEqual({ books: null });
    expect(never.errors).toEqual([
      expect.objectContaining({ path: ['books'], extensions: { code: 'RATE_LIMITED', policy: 'book-rows' } }),
    ]);
    expect(never.headers['retry-after']).toBeUndefined();
  });

  it('keys by a function of the GraphQL arguments', async () => {
    expect((await t.gql('{ account(account: "a-1") }')).data).toEqual({ account: 'a-1' });
    expect((await t.gql('{ account(account: "a-2") }')).data).toEqual({ account: 'a-2' });
    const again = await t.gql('{ account(account: "a-1") }');
    expect(again.errors?.[0]?.extensions).toEqual({ code: 'RATE_LIMITED', policy: 'per-account', retryAfter: 60 });
    expect(await remaining('per-account', 'account:a-1')).toBe(0);
  });

  it('decides each field-resolver invocation on its own policies only', async () => {
    const res = await t.gql('{ books(first: 3) { id summary } }');
    const books = res.data?.books as { id: number; summary: string | null }[];
    expect(books.map((b) => b.id)).toEqual([1, 2, 3]);
    expect(books.filter((b) => b.summary !== null)).toHaveLength(2);
    const denied = books.findIndex((b) => b.summary === null);
    expect(Object.keys(errorsByPath(res))).toEqual([`books.${denied}.summary`]);
    expect(res.errors?.[0]?.extensions).toEqual({ code: 'RATE_LIMITED', policy: 'summaries', retryAfter: 60 });
    // The three summaries charged neither the defaults nor the class's policy: only `books` did.
    expect([await remaining('per-user'), await remaining('library'), await remaining('summaries')]).toEqual([
      999, 99, 0,
    ]);
  });

  it('applies defaults to mutations; the response shows the policies of all its resolvers, each once', async () => {
    // Root mutation fields run one after another: `vote` decides first, `comment` last.
    const res = await t.gql('mutation { vote comment }');
    expect(res.data).toEqual({ vote: 1, comment: 2 });
    expect(policyNames(res)).toEqual(['per-user', 'library', 'votes', 'comments']);
    expect(res.headers['ratelimit']).toBe(
      '"per-user";r=998;t=60, "library";r=98;t=60, "votes";r=4;t=60, "comments";r=2;t=60',
    );
    expect(await remaining('votes')).toBe(4);
  });
});
