/** Alert claims as unique rows of the SQLite file's `alert_claims` (src/storage/alert-claims.ts). */
import type Database from 'better-sqlite3';
import type { AlertClaims } from '../alert-claims.js';

export function sqliteClaims(sqlite: Database.Database): AlertClaims {
  const insert = sqlite.prepare('INSERT INTO alert_claims (id, claimed_at, expires_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const prune = sqlite.prepare('DELETE FROM alert_claims WHERE expires_at < ?');
  return {
    kind: 'sqlite',
    claim: (id, now, expiresAt) => Promise.resolve(insert.run(id, now, expiresAt).changes === 1),
    prune: async (now) => {
      prune.run(now);
    },
  };
}
