/**
 * The dashboard's layout checks for the browser tests: at 1280×900 no table
 * (nor the panel it scrolls in) is wider than its box and nothing sticks out
 * of a card; at 390×844 the header is whole and the page does not scroll
 * sideways (a wide table may scroll inside its own panel). Each size leaves a
 * screenshot in test-artifacts/dashboard/.
 */
import { expect } from 'vitest';
import type { Page } from 'playwright-core';

const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

/** Tables (and their scroll containers) wider than their box, named by the nearest heading; by-model bars or cells outside their card. */
function clippedAt(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const name = (el: Element): string => {
      const section = el.closest('section, .card, .panel');
      const heading = section?.querySelector('h1, h2, h3, .label');
      return `${el.tagName.toLowerCase()}${el.className ? '.' + String(el.className).split(' ').join('.') : ''} in "${heading?.textContent?.trim().replace(/\s+/g, ' ') ?? '?'}"`;
    };
    const found: string[] = [];
    const boxes = new Set<Element>();
    for (const table of Array.from(document.querySelectorAll('table'))) {
      boxes.add(table);
      let parent = table.parentElement;
      while (parent !== null && parent !== document.body) {
        const overflow = getComputedStyle(parent).overflowX;
        if (overflow === 'auto' || overflow === 'scroll' || overflow === 'hidden') boxes.add(parent);
        parent = parent.parentElement;
      }
    }
    for (const box of boxes) {
      if (box.scrollWidth > box.clientWidth) found.push(`${name(box)} scrolls: ${box.scrollWidth} > ${box.clientWidth}`);
    }
    // Whatever a card or panel holds stays inside it (bars, meters, the last column).
    for (const card of Array.from(document.querySelectorAll('.card, .panel'))) {
      const outer = card.getBoundingClientRect();
      for (const inner of Array.from(card.querySelectorAll('td, th, meter, .bar, canvas'))) {
        const rect = inner.getBoundingClientRect();
        if (rect.width === 0) continue;
        if (rect.right > outer.right + 0.5 || rect.left < outer.left - 0.5)
          found.push(
            `${name(inner)} sticks out of its card: ${Math.round(rect.left)}–${Math.round(rect.right)} outside ${Math.round(outer.left)}–${Math.round(outer.right)}`,
          );
      }
    }
    const root = document.scrollingElement!;
    if (root.scrollWidth > root.clientWidth) found.push(`the page scrolls sideways: ${root.scrollWidth} > ${root.clientWidth}`);
    return found;
  });
}

/** The page's body does not scroll sideways and the header's parts (Log out too) are inside the window. */
function phoneProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const root = document.scrollingElement!;
    if (root.scrollWidth > root.clientWidth) found.push(`the page scrolls sideways: ${root.scrollWidth} > ${root.clientWidth}`);
    for (const el of Array.from(document.querySelectorAll('header.top a, header.top button, header.top .live'))) {
      const rect = el.getBoundingClientRect();
      if (rect.left < 0 || rect.right > root.clientWidth)
        found.push(`"${el.textContent?.trim()}" in the header is cut: ${Math.round(rect.left)}–${Math.round(rect.right)} of ${root.clientWidth}`);
    }
    // Nothing but a table's own scroll container may be wider than the window.
    for (const el of Array.from(document.querySelectorAll('main *'))) {
      if (el.closest('table') !== null || el.closest('.uplot') !== null) continue;
      const rect = el.getBoundingClientRect();
      if (rect.width > 0 && rect.right > root.clientWidth + 0.5)
        found.push(`${el.tagName.toLowerCase()}.${String(el.className)} ends at ${Math.round(rect.right)} of ${root.clientWidth}`);
    }
    return found;
  });
}

/** Checks the page at 1280×900 and at 390×844 and screenshots both (as `${name}-1280.png`, `${name}-390.png`). */
export async function expectFits(page: Page, artifacts: string, name: string): Promise<void> {
  await page.setViewportSize(DESKTOP);
  await page.waitForTimeout(250); // the charts resize on the window's resize event
  await page.screenshot({ path: `${artifacts}${name}-1280.png`, fullPage: true });
  expect(await clippedAt(page), `${name} at 1280×900`).toEqual([]);
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(250);
  await page.screenshot({ path: `${artifacts}${name}-390.png`, fullPage: true });
  expect(await phoneProblems(page), `${name} at 390×844`).toEqual([]);
  await page.setViewportSize(DESKTOP);
}

/** The legends' values of every chart on the page, before any pointer moved over them. */
export function legendValues(page: Page): Promise<string[]> {
  return page.evaluate(() => Array.from(document.querySelectorAll('.u-legend .u-series:not(:first-child) .u-value')).map((el) => el.textContent ?? ''));
}
