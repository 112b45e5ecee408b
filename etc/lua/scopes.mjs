// The names a Lua chunk uses and defines, by a walk of its luaparse tree with Lua's scoping rules: a `local`
// is in scope after its statement (a `local function`, in its own body too), a parameter or loop variable in
// its body, a `repeat` body's locals in its `until` condition.
import luaparse from 'luaparse';

/** What Redis' Lua (5.1) gives every script, and nothing else: any other free name is an error. */
export const REDIS_GLOBALS = new Set([
  'redis',
  'KEYS',
  'ARGV',
  'cjson',
  'cmsgpack',
  'bit',
  'struct',
  'string',
  'math',
  'table',
  'tonumber',
  'tostring',
  'type',
  'pairs',
  'ipairs',
  'next',
  'select',
  'unpack',
  'error',
  'pcall',
  'xpcall',
  'assert',
  'rawget',
  'rawset',
  'rawequal',
  'setmetatable',
  'getmetatable',
  '_VERSION',
]);

/** Parses `text` (Lua 5.1, with line numbers); a syntax error names `file` and the line. */
export function parseLua(text, file) {
  try {
    return luaparse.parse(text, { luaVersion: '5.1', locations: true, comments: false, encodingMode: 'none' });
  } catch (error) {
    throw new Error(`${file}: ${error.message}`, { cause: error });
  }
}

/**
 * Walks a chunk. `outer` holds the names defined ahead of it (a file's requires). Returns the chunk's top-level
 * locals (name and line, in order), the outer names it uses, the free names that are neither outer nor Redis'
 * (each with its first line) and the locals never read (parameters and `_`-names aside; `top` for a top-level
 * one).
 */
export function analyse(chunk, outer) {
  const walker = new Walker(outer);
  walker.block(chunk.body);
  return { topLevel: walker.topLevel, usedOuter: walker.usedOuter, free: walker.free, unused: walker.unused };
}

class Walker {
  topLevel = [];
  usedOuter = new Set();
  free = new Map();
  unused = [];
  scopes = [];

  constructor(outer) {
    this.outer = outer;
  }

  declare(id, kind) {
    const entry = { name: id.name, line: id.loc.start.line, kind, reads: 0, top: this.scopes.length === 1 };
    this.scopes[this.scopes.length - 1].push(entry);
    if (entry.top) this.topLevel.push(entry);
  }

  lookup(name) {
    for (let s = this.scopes.length - 1; s >= 0; s--) {
      const scope = this.scopes[s];
      for (let i = scope.length - 1; i >= 0; i--) if (scope[i].name === name) return scope[i];
    }
    return undefined;
  }

  /** A name read (`write`: assigned, which is no read of a local). */
  use(id, write = false) {
    const local = this.lookup(id.name);
    if (local) {
      if (!write) local.reads++;
    } else if (this.outer.has(id.name)) this.usedOuter.add(id.name);
    else if ((write || !REDIS_GLOBALS.has(id.name)) && !this.free.has(id.name))
      this.free.set(id.name, id.loc.start.line);
  }

  /** Statements in a scope of their own, after the names `first` declares in it (parameters, loop variables). */
  block(body, first = () => {}, last = () => {}) {
    this.scopes.push([]);
    first();
    body.forEach((node) => this.statement(node));
    last();
    for (const entry of this.scopes.pop()) {
      if (entry.kind !== 'parameter' && entry.reads === 0 && !entry.name.startsWith('_')) this.unused.push(entry);
    }
  }

  expressions(list) {
    list.forEach((node) => this.expression(node));
  }

  expression(node) {
    if (!node) return;
    switch (node.type) {
      case 'Identifier':
        return this.use(node);
      case 'MemberExpression':
      case 'StringCallExpression':
        return this.expression(node.base);
      case 'IndexExpression':
        return this.expressions([node.base, node.index]);
      case 'CallExpression':
        return this.expressions([node.base, ...node.arguments]);
      case 'TableCallExpression':
        return this.expressions([node.base, node.arguments]);
      case 'TableConstructorExpression':
        return node.fields.forEach((field) =>
          this.expressions([field.type === 'TableKey' ? field.key : null, field.value]),
        );
      case 'BinaryExpression':
      case 'LogicalExpression':
        return this.expressions([node.left, node.right]);
      case 'UnaryExpression':
        return this.expression(node.argument);
      case 'FunctionDeclaration':
        return this.functionBody(node);
      default:
        return; // literals, `...`
    }
  }

  functionBody(node) {
    this.block(node.body, () =>
      node.parameters.forEach((p) => p.type === 'Identifier' && this.declare(p, 'parameter')),
    );
  }

  /** An assignment's target: a name is written, not read; a field's table and index are read. */
  target(node) {
    if (node.type === 'Identifier') this.use(node, true);
    else this.expression(node);
  }

  statement(node) {
    switch (node.type) {
      case 'LocalStatement':
        this.expressions(node.init);
        return node.variables.forEach((v) => this.declare(v, 'local'));
      case 'AssignmentStatement':
        this.expressions(node.init);
        return node.variables.forEach((v) => this.target(v));
      case 'CallStatement':
        return this.expression(node.expression);
      case 'FunctionDeclaration':
        if (node.isLocal) this.declare(node.identifier, 'local');
        else if (node.identifier) this.target(node.identifier);
        return this.functionBody(node);
      case 'IfStatement':
        return node.clauses.forEach((clause) => {
          this.expression(clause.condition);
          this.block(clause.body);
        });
      case 'WhileStatement':
        this.expression(node.condition);
        return this.block(node.body);
      case 'DoStatement':
        return this.block(node.body);
      case 'RepeatStatement':
        return this.block(node.body, undefined, () => this.expression(node.condition));
      case 'ForNumericStatement':
        this.expressions([node.start, node.end, node.step]);
        return this.block(node.body, () => this.declare(node.variable, 'loop'));
      case 'ForGenericStatement':
        this.expressions(node.iterators);
        return this.block(node.body, () => node.variables.forEach((v) => this.declare(v, 'loop')));
      case 'ReturnStatement':
        return this.expressions(node.arguments);
      default:
        return; // break, goto, labels
    }
  }
}
