import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/**
 * The layering of lib/ (CONTRIBUTING.md, "Layers"): algorithms know no store; stores know no engine, module
 * or options; the engine knows no context, request or Nest; planning knows no request; the policy types sit
 * below the math. Each module's imports are read from its source.
 */
const LIB = join(import.meta.dirname, '../../lib');

/** Each module of lib/ (its path under lib/) with what it imports: lib/ paths, or package names. */
const modules = readdirSync(LIB, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts'))
  .map((file) => {
    const source = readFileSync(join(LIB, file), 'utf8');
    const imports = [...source.matchAll(/^(?:import|export)\b[^'"]*?from '([^']+)'/gms)].map(([, spec = '']) =>
      spec.startsWith('.') ? relative(LIB, normalize(join(LIB, dirname(file), spec))).replace(/\.js$/, '.ts') : spec,
    );
    return { file, imports };
  });

/** The imports of the modules under `from` that match `forbidden`, as "module -> import". */
function crossings(from: RegExp, forbidden: RegExp): string[] {
  return modules
    .filter(({ file }) => from.test(file))
    .flatMap(({ file, imports }) => imports.filter((i) => forbidden.test(i)).map((i) => `${file} -> ${i}`));
}

/** What sits above the stores and the engine: the module, its options, the request path, Nest's parts. */
const ABOVE =
  /^(engine|planning|request|contexts|service|lists)\/|^(rate-limit[.-]|rate-limiter|limiter-settings|module-stores)/;

describe('the layers of lib/', () => {
  it('reads the imports of every module', () => {
    expect(modules.length).toBeGreaterThan(100);
    expect(modules.find((m) => m.file === join('engine', 'decision-engine.ts'))?.imports).toContain(
      join('stores', 'rate-limit-store.ts'),
    );
  });

  it('algorithms know no store, engine or module', () => {
    expect(crossings(/^algorithms\//, /^(stores|engine|planning|request|contexts|rate-limit)/)).toEqual([]);
  });

  it('stores know no engine, module or options', () => {
    expect(crossings(/^stores\//, ABOVE)).toEqual([]);
    expect(crossings(/^stores\//, /^@nestjs\/core/)).toEqual([]);
  });

  it('the engine knows no context, request or Nest', () => {
    expect(crossings(/^engine\//, /^(planning|request|contexts|service)\/|^rate-limit|^@nestjs\//)).toEqual([]);
  });

  it('planning knows no request and no context adapter', () => {
    expect(crossings(/^planning\//, /^(request|contexts)\//)).toEqual([]);
  });

  it('the policy types import nothing but policy', () => {
    expect(crossings(/^policy\/policy\.types\.ts$/, /^(?!policy\/|@nestjs\/)/)).toEqual([]);
  });
});
