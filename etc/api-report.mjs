// The public surface of nest-rate-limit, as a report checked into etc/public-api.md: every name each entry
// point exports, with its kind and type as TypeScript sees it (public members of classes and interfaces,
// signatures of functions). `node etc/api-report.mjs` writes the report; `--check` (run by `npm run lint`)
// fails when the exports differ from it, so that any change of the public surface is a visible diff.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REPORT = `${ROOT}etc/public-api.md`;
/**
 * Each entry point of package.json's `exports` (every one, so a new subpath cannot go unreported), by the source
 * its ES module build is compiled from: `./dist/<path>.js` from `lib/<path>.ts`.
 */
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8'));
const ENTRIES = Object.fromEntries(
  Object.entries(pkg.exports)
    .filter(([, target]) => typeof target === 'object')
    .map(([subpath, target]) => [
      pkg.name + subpath.slice(1),
      target.import.default.replace(/^\.\/dist\//, 'lib/').replace(/\.js$/, '.ts'),
    ]),
);

const config = ts.getParsedCommandLineOfConfigFile(
  `${ROOT}tsconfig.build.json`,
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
);
const program = ts.createProgram(
  Object.values(ENTRIES).map((f) => ROOT + f),
  { ...config.options, noEmit: true },
);
const checker = program.getTypeChecker();
const FLAGS = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseFullyQualifiedType;

/**
 * A type as the checker prints it, with `import("/abs/path/node_modules/pkg/index")` shortened to
 * `import("pkg")`: the report must not depend on where the checkout lives (CI clones elsewhere).
 */
const portable = (text) =>
  text.replace(/import\("([^"]*)"\)/g, (_, path) => {
    const inModules = path.lastIndexOf('node_modules/');
    const local = inModules >= 0 ? path.slice(inModules + 'node_modules/'.length) : path.replace(ROOT, '');
    return `import("${local.replace(/\/index$/, '')}")`;
  });
const typeOf = (symbol, at) => portable(checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, at), at, FLAGS));
/** A member marked `@internal` is left out of the .d.ts (tsconfig.build.json's stripInternal), so of the report. */
const isInternal = (declaration) => ts.getJSDocTags(declaration).some((tag) => tag.tagName.text === 'internal');
const isHidden = (symbol) =>
  symbol.name.startsWith('#') ||
  (symbol.declarations ?? []).every(isInternal) ||
  (symbol.declarations ?? []).some(
    (d) => (ts.getCombinedModifierFlags(d) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0,
  );

/** A member's type; for a method with an `@internal` overload, the signatures that stay in the .d.ts. */
function memberType(symbol, at) {
  const declarations = symbol.declarations ?? [];
  if (!declarations.some(isInternal)) return typeOf(symbol, at);
  const shown = declarations
    .filter((d) => !isInternal(d) && ts.isMethodDeclaration(d) && d.body === undefined)
    .map((d) =>
      portable(
        checker.signatureToString(
          checker.getSignatureFromDeclaration(d),
          at,
          FLAGS | ts.TypeFormatFlags.WriteArrowStyleSignature,
        ),
      ),
    );
  return shown.length === 1 ? shown[0] : `{ ${shown.map((s) => `${s};`).join(' ')} }`;
}

/** `name: type` of each public member, sorted. */
function members(symbols, at) {
  return symbols
    .filter((s) => !isHidden(s) && s.name !== 'prototype')
    .map((s) => `  ${s.name}${s.flags & ts.SymbolFlags.Optional ? '?' : ''}: ${memberType(s, at)}`)
    .sort();
}

function describe(symbol) {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const at = target.declarations?.[0];
  const lines = [];
  if (target.flags & ts.SymbolFlags.Class) {
    const instance = checker.getDeclaredTypeOfSymbol(target);
    const statics = checker.getTypeOfSymbolAtLocation(target, at);
    const ctor = statics.getConstructSignatures().map((s) => `  new ${checker.signatureToString(s, at, FLAGS)}`);
    lines.push(`class ${symbol.name}`, ...ctor);
    lines.push(...members(checker.getPropertiesOfType(statics), at).map((l) => `  static${l.slice(1)}`));
    lines.push(...members(checker.getPropertiesOfType(instance), at));
  } else if (target.flags & ts.SymbolFlags.Interface) {
    const type = checker.getDeclaredTypeOfSymbol(target);
    lines.push(`interface ${symbol.name}`, ...members(checker.getPropertiesOfType(type), at));
    for (const s of type.getCallSignatures()) lines.push(`  ${checker.signatureToString(s, at, FLAGS)}`);
  } else if (target.flags & ts.SymbolFlags.TypeAlias) {
    const type = checker.getDeclaredTypeOfSymbol(target);
    lines.push(`type ${symbol.name} = ${checker.typeToString(type, at, FLAGS | ts.TypeFormatFlags.InTypeAlias)}`);
  } else if (target.flags & ts.SymbolFlags.Function) {
    const type = checker.getTypeOfSymbolAtLocation(target, at);
    for (const s of type.getCallSignatures())
      lines.push(`function ${symbol.name}${checker.signatureToString(s, at, FLAGS)}`);
  } else {
    lines.push(`const ${symbol.name}: ${typeOf(target, at)}`);
  }
  // A name that is a value and a type (a DI token beside its interface) shows both.
  if (target.flags & ts.SymbolFlags.Interface && target.flags & ts.SymbolFlags.Variable) {
    lines.push(`const ${symbol.name}: ${typeOf(target, at)}`);
  }
  return portable(lines.join('\n'));
}

function report() {
  const parts = [
    '# The public API of nest-rate-limit',
    '',
    'Generated by `node etc/api-report.mjs` from the sources of each entry point; `npm run lint` checks it. A change',
    'here is a change of what users import: say it in CHANGELOG.md.',
  ];
  for (const [entry, file] of Object.entries(ENTRIES)) {
    const source = program.getSourceFile(ROOT + file);
    const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(source));
    parts.push('', `## ${entry}`, '', `${exports.length} exports.`, '', '```text');
    for (const symbol of [...exports].sort((a, b) => a.name.localeCompare(b.name))) parts.push(describe(symbol), '');
    parts[parts.length - 1] = '```';
  }
  return `${parts.join('\n')}\n`;
}

const current = report();
if (process.argv.includes('--check')) {
  let saved = '';
  try {
    saved = readFileSync(REPORT, 'utf8');
  } catch {
    // no report yet: it differs
  }
  if (saved !== current) {
    const was = new Set(saved.split('\n'));
    const now = new Set(current.split('\n'));
    const gone = [...was].filter((l) => !now.has(l)).slice(0, 20);
    const added = [...now].filter((l) => !was.has(l)).slice(0, 20);
    console.error(
      'The public API differs from etc/public-api.md (run `node etc/api-report.mjs` and say it in CHANGELOG.md):',
    );
    for (const line of gone) console.error(`- ${line}`);
    for (const line of added) console.error(`+ ${line}`);
    process.exit(1);
  }
} else {
  writeFileSync(REPORT, current);
}
