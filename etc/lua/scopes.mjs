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
 * (each with its first line) and the locals never read (parameters and `_`-names aside).
 */
export function analyse(chunk, outer) {
  const topLevel = [];
  const usedOuter = new Set();
  const free = new Map();
  const unused = [];
  const scopes = [];
  const declare = (id, kind) => {
    const scope = scopes[scopes.length - 1];
    const entry = { name: id.name, line: id.loc.start.line, kind, reads: 0, top: scopes.length === 1 };
    scope.push(entry);
    if (scopes.length === 1) topLevel.push(entry);
  };
  const lookup = (name) => {
    for (let s = scopes.length - 1; s >= 0; s--) {
      const scope = scopes[s];
      for (let i = scope.length - 1; i >= 0; i--) if (scope[i].name === name) return scope[i];
    }
    return undefined;
  };
  const read = (id) => {
    const local = lookup(id.name);
    if (local) local.reads++;
    else if (outer.has(id.name)) usedOuter.add(id.name);
    else if (!REDIS_GLOBALS.has(id.name) && !free.has(id.name)) free.set(id.name, id.loc.start.line);
  };
  const open = () => scopes.push([]);
  const close = () => {
    for (const entry of scopes.pop()) {
      if (entry.kind !== 'parameter' && entry.reads === 0 && !entry.name.startsWith('_')) unused.push(entry);
    }
  };
  const block = (body, declareFirst = () => {}) => {
    open();
    declareFirst();
    body.forEach(statement);
    close();
  };
  const expressions = (list) => list.forEach(expression);
  function expression(node) {
    if (!node) return;
    switch (node.type) {
      case 'Identifier':
        return read(node);
      case 'MemberExpression':
        return expression(node.base);
      case 'IndexExpression':
        expression(node.base);
        return expression(node.index);
      case 'CallExpression':
        expression(node.base);
        return expressions(node.arguments);
      case 'TableCallExpression':
        expression(node.base);
        return expression(node.arguments);
      case 'StringCallExpression':
        return expression(node.base);
      case 'TableConstructorExpression':
        for (const field of node.fields) {
          if (field.type === 'TableKey') expression(field.key);
          expression(field.value);
        }
        return;
      case 'BinaryExpression':
      case 'LogicalExpression':
        expression(node.left);
        return expression(node.right);
      case 'UnaryExpression':
        return expression(node.argument);
      case 'FunctionDeclaration':
        return functionBody(node);
      default:
        return; // literals, `...`
    }
  }
  function functionBody(node) {
    block(node.body, () => node.parameters.forEach((p) => p.type === 'Identifier' && declare(p, 'parameter')));
  }
  // an assignment's target: a name is written, not read; a field's table and index are read
  function target(node) {
    if (node.type === 'Identifier') {
      const local = lookup(node.name);
      if (!local && !outer.has(node.name)) free.set(node.name, free.get(node.name) ?? node.loc.start.line);
      if (!local && outer.has(node.name)) usedOuter.add(node.name);
    } else expression(node);
  }
  function statement(node) {
    switch (node.type) {
      case 'LocalStatement':
        expressions(node.init);
        return node.variables.forEach((v) => declare(v, 'local'));
      case 'AssignmentStatement':
        expressions(node.init);
        return node.variables.forEach(target);
      case 'CallStatement':
        return expression(node.expression);
      case 'FunctionDeclaration':
        if (node.isLocal) {
          declare(node.identifier, 'local');
          return functionBody(node);
        }
        if (node.identifier) target(node.identifier);
        return functionBody(node);
      case 'IfStatement':
        return node.clauses.forEach((clause) => {
          expression(clause.condition);
          block(clause.body);
        });
      case 'WhileStatement':
        expression(node.condition);
        return block(node.body);
      case 'DoStatement':
        return block(node.body);
      case 'RepeatStatement':
        open();
        node.body.forEach(statement);
        expression(node.condition);
        return close();
      case 'ForNumericStatement':
        expressions([node.start, node.end, node.step]);
        return block(node.body, () => declare(node.variable, 'loop'));
      case 'ForGenericStatement':
        expressions(node.iterators);
        return block(node.body, () => node.variables.forEach((v) => declare(v, 'loop')));
      case 'ReturnStatement':
        return expressions(node.arguments);
      default:
        return; // break, goto, labels
    }
  }
  open();
  chunk.body.forEach(statement);
  close();
  return { topLevel, usedOuter, free, unused };
}
