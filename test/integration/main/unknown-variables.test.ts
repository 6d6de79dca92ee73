/** A misspelled TOLLGATE_* variable is heard: in the server's start-up log, and on a CLI command's stderr. */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cli } from '../../support/cli.js';
import { tempDatabasePath } from '../../support/db.js';
import { startTestProxy } from '../../support/proxy.js';

const WARNING = 'TOLLGATE_UPSTEAM_URL is not a Tollgate setting and is ignored; did you mean TOLLGATE_UPSTREAM_URL?';

describe('an unknown TOLLGATE_ variable', () => {
  it('is logged once at start, at warn level, with the nearest known name', async () => {
    const proxy = await startTestProxy({ TOLLGATE_UPSTEAM_URL: 'http://127.0.0.1:9/v1' });
    try {
      const warnings = proxy.logs.lines.filter((line) => typeof line.msg === 'string' && line.msg.includes('TOLLGATE_UPSTEAM_URL'));
      expect(warnings).toEqual([expect.objectContaining({ level: 'warn', msg: WARNING })]);
    } finally {
      await proxy.close();
    }
  });

  it('is printed on stderr by a CLI command, which still succeeds', async () => {
    const { dir, path } = tempDatabasePath();
    process.env.TOLLGATE_UPSTEAM_URL = 'http://127.0.0.1:9/v1';
    try {
      const result = await cli('--db', path, 'keys', 'list', '--json');
      expect(result.code).toBe(0);
      expect(result.stderr).toContain(`tollgate: warning: ${WARNING}\n`);
    } finally {
      delete process.env.TOLLGATE_UPSTEAM_URL;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
