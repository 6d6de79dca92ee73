/**
 * The WAL checkpointer (src/storage/sqlite/checkpointer.ts) keeps the WAL file
 * bounded while commits keep coming: a WAL past its restart size starts again
 * from its beginning (so the file stops growing) without the commits ever
 * waiting for a truncation, and a file a burst left large is truncated once the
 * WAL is nearly empty again.
 */
import { statSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { startCheckpointer, type Checkpointer } from '../../../src/storage/sqlite/checkpointer.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';

let db: TempDatabase | undefined;
let checkpointer: Checkpointer | undefined;

afterEach(async () => {
  await checkpointer?.stop();
  db?.remove();
  checkpointer = undefined;
  db = undefined;
});

const PAGE = 4096;
const ROW = 'x'.repeat(3000);

function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

/** Commits `commits` transactions of `rows` rows each, a millisecond apart, as a busy ledger would; returns the largest WAL file seen. */
async function commitSteadily(commits: number, rows: number): Promise<number> {
  const sqlite = db!.database.sqlite;
  sqlite.exec('CREATE TABLE IF NOT EXISTS filler (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  const insert = sqlite.prepare('INSERT INTO filler (body) VALUES (?)');
  const commit = sqlite.transaction(() => {
    for (let i = 0; i < rows; i += 1) insert.run(ROW);
  });
  let largest = 0;
  for (let i = 0; i < commits; i += 1) {
    commit.immediate();
    largest = Math.max(largest, walBytes(db!.path));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return largest;
}

it('restarts a WAL past its restart size, so steady commits do not grow the file without end', async () => {
  db = openTempDatabase();
  checkpointer = startCheckpointer(db.database, { intervalMs: 10, restartPages: 64, truncateBytes: 1024 ** 3 });
  // 600 commits of 4 rows of 3 KB: at least 2,400 pages written (9.4 MB); without restarts the file holds them all.
  const written = 600 * 4 * PAGE;
  const largest = await commitSteadily(600, 4);
  expect(largest).toBeLessThan(written / 3);
});

it('truncates a WAL file a burst left large once the WAL is nearly empty again', async () => {
  db = openTempDatabase();
  const sqlite = db.database.sqlite;
  // The burst: commits with no checkpoint at all, as between two ticks of a stalled worker.
  sqlite.pragma('wal_autocheckpoint = 0');
  await commitSteadily(200, 4);
  expect(walBytes(db.path)).toBeGreaterThan(200 * 4 * PAGE * 0.9);
  checkpointer = startCheckpointer(db.database, { intervalMs: 10, restartPages: 64, truncateBytes: 256 * 1024 });
  // A fully copied WAL past its restart size restarts; with only a few commits after it, the WAL is nearly empty and the file is cut.
  await waitFor(async () => {
    sqlite.prepare('INSERT INTO filler (body) VALUES (?)').run('small');
    await new Promise((resolve) => setTimeout(resolve, 20));
    return walBytes(db!.path) < 256 * 1024;
  }, 'the WAL file truncated below 256 KB');
  const rows = sqlite.prepare('SELECT count(*) AS n FROM filler').get() as { n: number };
  expect(rows.n).toBeGreaterThan(800);
});

it("turns SQLite's own checkpoints off on the ledger writer's connection too, opened before it started or after", async () => {
  db = openTempDatabase();
  const before = db.database.ledgerConnection();
  expect(before).not.toBe(db.database.sqlite);
  checkpointer = startCheckpointer(db.database, { intervalMs: 10 });
  // A commit on any of them would otherwise checkpoint on the event loop once the WAL passes 1,000 pages.
  expect(db.database.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
  expect(before.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
  await checkpointer.stop();
  db.remove();

  db = openTempDatabase();
  checkpointer = startCheckpointer(db.database, { intervalMs: 10 });
  expect(db.database.ledgerConnection().pragma('wal_autocheckpoint', { simple: true })).toBe(0);
});
