/** Hints the CLI prints name `tollgate` the way this process was started, so they paste back as they are. */
import { describe, expect, it } from 'vitest';
import { commandName } from '../../../src/cli/command-name.js';

describe('commandName', () => {
  it('is `npm run tollgate --` from a checkout, where tsx runs the source', () => {
    expect(commandName('/home/me/tollgate/src/cli/index.ts', { npm_lifecycle_event: 'tollgate' }, '/home/me/tollgate')).toBe('npm run tollgate --');
    expect(commandName('/home/me/tollgate/src/cli/index.ts', { npm_lifecycle_event: 'start' }, '/home/me/tollgate')).toBe('npm run tollgate --');
  });

  it('is `tollgate` for the installed bin, global or in a project', () => {
    expect(commandName('/usr/local/bin/tollgate', {}, '/srv')).toBe('tollgate');
    expect(commandName('/srv/app/node_modules/.bin/tollgate', { npm_lifecycle_event: 'proxy' }, '/srv/app')).toBe('tollgate');
  });

  it('is `npx tollgate` when npx started it', () => {
    expect(commandName('/root/.npm/_npx/1a2b/node_modules/.bin/tollgate', { npm_lifecycle_event: 'npx' }, '/srv')).toBe('npx tollgate');
  });

  it('is `node <file>` when the compiled entry was given to node, as in the Docker image', () => {
    expect(commandName('/app/dist/cli/index.js', {}, '/app')).toBe('node dist/cli/index.js');
  });

  it('falls back to `tollgate` without a script path', () => {
    expect(commandName(undefined, {}, '/')).toBe('tollgate');
  });
});
