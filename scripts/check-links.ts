/**
 * Checks the relative links of the README and the manual (docs/**.md): every `[text](path)`,
 * `[text](path#anchor)` and `[text](#anchor)` must name a file that exists and, in a markdown file,
 * a heading that exists, by GitHub's anchor rules. The manual is split over many files that link into
 * each other; a heading renamed or a section moved must not leave a reader at a dead end.
 *
 * Links to other sites (http, https, mailto) and links in code (fenced blocks, inline code) are not
 * checked. Exits 1 listing each bad link as file:line, else 0.
 *
 * Run: npx tsx scripts/check-links.ts (npm run check:links, part of npm run lint).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The files whose links are checked: README.md and every markdown file under docs/. */
function filesToCheck(): string[] {
  const docs = join(ROOT, 'docs');
  const found = existsSync(docs)
    ? readdirSync(docs, { recursive: true, encoding: 'utf8' })
        .filter((name) => name.endsWith('.md'))
        .map((name) => join(docs, name))
    : [];
  return [join(ROOT, 'README.md'), ...found.sort()];
}

interface Line {
  readonly number: number;
  readonly text: string;
}

/** The lines outside fenced code blocks (``` or ~~~, closed by a fence of the same kind at least as long). */
function proseLines(source: string): Line[] {
  const lines: Line[] = [];
  let fence: string | undefined;
  for (const [index, text] of source.split(/\r?\n/).entries()) {
    const opener = /^ {0,3}(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence === undefined) {
      if (opener !== undefined) fence = opener;
      else lines.push({ number: index + 1, text });
    } else if (opener !== undefined && opener[0] === fence[0] && opener.length >= fence.length && text.trim() === opener) {
      fence = undefined;
    }
  }
  return lines;
}

/** Inline code spans removed (a link written in backticks is an example, not a link). */
function withoutCode(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1/g, (span) => ' '.repeat(span.length));
}

/** A heading's text as GitHub renders it: code, links and emphasis marks reduced to their text. */
function renderedText(markdown: string): string {
  return markdown
    .replace(/`+([^`]*)`+/g, '$1')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[*~]/g, '')
    .trim();
}

/**
 * GitHub's anchor for a heading: lowercased, every character but letters, digits, `_`, `-` and
 * spaces removed, each space a `-`.
 */
function slugOf(heading: string): string {
  return renderedText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a markdown file offers: its headings' slugs (a repeated one gets -1, -2, …) and HTML ids. */
function anchorsOf(source: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const add = (slug: string) => {
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  };
  const lines = proseLines(source);
  for (const [i, line] of lines.entries()) {
    const atx = /^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$/.exec(line.text);
    if (atx !== null) {
      add(slugOf(atx[1] ?? ''));
      continue;
    }
    // A setext heading: a paragraph line underlined with = or -.
    const next = lines[i + 1];
    if (next !== undefined && next.number === line.number + 1 && /^ {0,3}(=+|-+)\s*$/.test(next.text) && /^ {0,3}[^\s|>*+-]/.test(line.text)) {
      add(slugOf(line.text));
    }
    for (const match of line.text.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  }
  return anchors;
}

interface BadLink {
  readonly where: string;
  readonly link: string;
  readonly reason: string;
}

const anchorCache = new Map<string, Set<string>>();

function anchorsOfFile(path: string): Set<string> {
  let anchors = anchorCache.get(path);
  if (anchors === undefined) {
    anchors = anchorsOf(readFileSync(path, 'utf8'));
    anchorCache.set(path, anchors);
  }
  return anchors;
}

/** What is wrong with one link's target, or undefined when it resolves. */
function problemOf(file: string, target: string): string | undefined {
  const hash = target.indexOf('#');
  const pathPart = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const path = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
  if (!existsSync(path)) return `no file ${relative(ROOT, path)}`;
  if (anchor === undefined || !path.endsWith('.md') || statSync(path).isDirectory()) return undefined;
  if (!anchorsOfFile(path).has(anchor)) return `no heading #${anchor} in ${relative(ROOT, path)}`;
  return undefined;
}

function checkFile(file: string): BadLink[] {
  const bad: BadLink[] = [];
  for (const line of proseLines(readFileSync(file, 'utf8'))) {
    // [text](target) or [text](target "title"); images too. The text may hold one level of brackets.
    for (const match of withoutCode(line.text).matchAll(/\[(?:[^\][]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1]!;
      if (target === '' || /^(https?|mailto):/i.test(target)) continue;
      const reason = /^[a-z][a-z0-9+.-]*:/i.test(target) ? `not a relative link` : problemOf(file, target);
      if (reason !== undefined) bad.push({ where: `${relative(ROOT, file)}:${line.number}`, link: match[0], reason });
    }
  }
  return bad;
}

function main(): number {
  const files = filesToCheck();
  const bad = files.flatMap(checkFile);
  for (const { where, link, reason } of bad) process.stderr.write(`${where}: ${link}: ${reason}\n`);
  if (bad.length > 0) {
    process.stderr.write(`${bad.length} broken link(s) in ${files.length} file(s)\n`);
    return 1;
  }
  return 0;
}

process.exitCode = main();
