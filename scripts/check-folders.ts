/**
 * Lint: the top-level folders of src/ form no import cycle, type imports
 * included, and no source file is over 400 lines. A cycle between folders
 * means two layers each need the other, which is how the domain ended up in
 * the limiter once (docs/architecture.md has the layering).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '..', 'src');
const MAX_LINES = 400;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** `src/limits/x.ts` → `limits`; files directly in src/ are their own unit (`config.ts`). */
function unitOf(file: string): string {
  const rel = relative(ROOT, file).split(sep);
  return rel.length === 1 ? rel[0]!.replace(/\.tsx?$/, '') : rel[0]!;
}

const files = sourceFiles(ROOT);
const problems: string[] = [];
const edges = new Map<string, Map<string, string>>();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > MAX_LINES) problems.push(`${relative(ROOT, file)} has ${lines} lines (at most ${MAX_LINES})`);
  for (const ref of ts.preProcessFile(text, true, true).importedFiles) {
    if (!ref.fileName.startsWith('.')) continue;
    const target = resolve(dirname(file), ref.fileName);
    if (!target.startsWith(ROOT + sep)) continue;
    const from = unitOf(file);
    const to = unitOf(target.replace(/\.js$/, '.ts'));
    if (from === to) continue;
    const out = edges.get(from) ?? new Map<string, string>();
    if (!out.has(to)) out.set(to, `${relative(ROOT, file)} → ${ref.fileName}`);
    edges.set(from, out);
  }
}

// Tarjan's strongly connected components: any component of more than one folder is a cycle.
let index = 0;
const indices = new Map<string, number>();
const low = new Map<string, number>();
const stack: string[] = [];
const onStack = new Set<string>();
const components: string[][] = [];
function visit(node: string): void {
  indices.set(node, index);
  low.set(node, index++);
  stack.push(node);
  onStack.add(node);
  for (const next of edges.get(node)?.keys() ?? []) {
    if (!indices.has(next)) {
      visit(next);
      low.set(node, Math.min(low.get(node)!, low.get(next)!));
    } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, indices.get(next)!));
  }
  if (low.get(node) === indices.get(node)) {
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) components.push(component.sort());
  }
}
for (const node of new Set([...files.map(unitOf)])) if (!indices.has(node)) visit(node);

for (const component of components) {
  const inside = new Set(component);
  const links = component.flatMap((from) =>
    [...(edges.get(from) ?? new Map<string, string>())].filter(([to]) => inside.has(to)).map(([to, where]) => `    ${from} → ${to}  (${where})`),
  );
  problems.push(`import cycle between src/ folders ${component.join(', ')}:\n${links.join('\n')}`);
}

if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
