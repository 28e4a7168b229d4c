// Reads a TypeScript file's imports and its uses of process.env / process.exit
// with the compiler's parser (not regexes), for the dependency-boundary test.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface ImportRef {
  specifier: string;
  /** `import type` / `export type` (erased at runtime under verbatimModuleSyntax). */
  typeOnly: boolean;
  line: number;
}

export interface ScanResult {
  imports: ImportRef[];
  /** "process.env" / "process.exit" with line numbers. */
  processUses: Array<{ what: string; line: number }>;
}

const PROCESS_MEMBERS = new Set(['env', 'exit']);

/** Scans TypeScript source text. */
export function scanSource(source: string, fileName = 'file.ts'): ScanResult {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const imports: ImportRef[] = [];
  const processUses: ScanResult['processUses'] = [];
  const line = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;

  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      imports.push({ specifier: node.moduleSpecifier.text, typeOnly: !!node.importClause?.isTypeOnly, line: line(node) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      imports.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly, line: line(node) });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const e = node.moduleReference.expression;
      if (ts.isStringLiteral(e)) imports.push({ specifier: e.text, typeOnly: node.isTypeOnly, line: line(node) });
    } else if (ts.isCallExpression(node)) {
      const [arg] = node.arguments;
      const isDynamic = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(node.expression) && node.expression.text === 'require';
      if ((isDynamic || isRequire) && arg && ts.isStringLiteralLike(arg)) {
        imports.push({ specifier: arg.text, typeOnly: false, line: line(node) });
      }
    } else if (ts.isImportTypeNode(node)) {
      // import('x').T in a type position: type-only.
      const a = node.argument;
      if (ts.isLiteralTypeNode(a) && ts.isStringLiteral(a.literal)) {
        imports.push({ specifier: a.literal.text, typeOnly: true, line: line(node) });
      }
    } else if (ts.isPropertyAccessExpression(node) && isProcess(node.expression) && PROCESS_MEMBERS.has(node.name.text)) {
      processUses.push({ what: `process.${node.name.text}`, line: line(node) });
    } else if (
      ts.isElementAccessExpression(node) &&
      isProcess(node.expression) &&
      ts.isStringLiteralLike(node.argumentExpression) &&
      PROCESS_MEMBERS.has(node.argumentExpression.text)
    ) {
      processUses.push({ what: `process.${node.argumentExpression.text}`, line: line(node) });
    } else if (ts.isVariableDeclaration(node) && node.initializer && isProcess(node.initializer) && ts.isObjectBindingPattern(node.name)) {
      // const { env } = process
      for (const el of node.name.elements) {
        const key = el.propertyName ?? el.name;
        if (ts.isIdentifier(key) && PROCESS_MEMBERS.has(key.text)) processUses.push({ what: `process.${key.text}`, line: line(node) });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { imports, processUses };
}

/** `process` or `globalThis.process`. */
function isProcess(e: ts.Expression): boolean {
  if (ts.isIdentifier(e)) return e.text === 'process';
  return (
    ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === 'globalThis' && e.name.text === 'process'
  );
}

/** Every .ts / .tsx / .mts file under `dir` (recursively); [] when the dir is missing. */
export function listSourceFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const e of entries.sort()) {
    const full = path.join(dir, e);
    if (statSync(full).isDirectory()) out.push(...listSourceFiles(full));
    else if (/\.(m?ts|tsx)$/.test(e) && !e.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

export function scanFile(file: string): ScanResult {
  return scanSource(readFileSync(file, 'utf8'), file);
}

/** Absolute path a relative specifier points at, or undefined for a package import. */
export function resolveRelative(fromFile: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.') && !specifier.startsWith('/')) return undefined;
  return path.resolve(path.dirname(fromFile), specifier);
}

/** The package name of a bare specifier: 'hono/client' -> 'hono', '@hono/x/y' -> '@hono/x', 'node:fs' -> 'node:fs'. */
export function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}
