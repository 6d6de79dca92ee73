/** A real SQLite file in a temp directory, built with the production migrations. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
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

/**
 * Another process takes the file's write lock and holds it for `ms`; resolves once it holds it, with
 * a promise of the process's exit. Another process, because a synchronous commit that waits for
 * the lock on this thread would keep a lock of this thread's from ever being let go.
 */
export async function holdWriteLock(path: string, ms: number): Promise<{ released: Promise<void> }> {
  const script = `const Database = require('better-sqlite3');
const db = new Database(process.argv[1]);
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\\n');
setTimeout(() => { db.exec('COMMIT'); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', script, path], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: ['ignore', 'pipe', 'inherit'] });
  const released = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the lock holder exited with ${String(code)}`))));
  });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', () => resolve());
    released.catch(reject);
  });
  return { released };
}
