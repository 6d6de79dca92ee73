/** A real SQLite file in a temp directory, built with the production migrations. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type TollgateDatabase } from '../../src/storage/sqlite/open.js';

export interface TempDatabase {
  readonly path: string;
  readonly dir: string;
  readonly database: TollgateDatabase;
  /** Closes and deletes the file. */
  remove(): void;
}

export function tempDatabasePath(): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-test-'));
  return { dir, path: join(dir, 'tollgate.db') };
}

export function openTempDatabase(): TempDatabase {
  const { dir, path } = tempDatabasePath();
  const database = openDatabase(path);
  return {
    path,
    dir,
    database,
    remove() {
      try {
        database.close();
      } catch {
        // already closed
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
