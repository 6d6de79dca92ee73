/** Configuration: defaults, fallbacks, and clear messages for bad values. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';

describe('loadConfig', () => {
  it('has working defaults with an empty environment', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8787);
    expect(config.host).toBe('127.0.0.1');
    expect(config.upstream.url).toBe('https://api.openai.com/v1');
    expect(config.upstream.apiKey).toBeUndefined();
    expect(config.maxBodyBytes).toBe(32 * 1024 * 1024);
    expect(config.largeBodiesPerKey).toBe(4);
    expect(config.bodyMemoryBytes).toBeGreaterThanOrEqual(64 * 1024 * 1024);
    expect(config.bodyMemoryBytes).toBeLessThanOrEqual(1024 ** 3);
    expect(config.connections).toEqual({ max: undefined, perAddress: undefined, headersTimeoutMs: 10_000 });
  });

  it('reads the intake and connection bounds', () => {
    const config = loadConfig({
      TOLLGATE_LARGE_BODIES_PER_KEY: '2',
      TOLLGATE_BODY_MEMORY: '128mb',
      TOLLGATE_MAX_CONNECTIONS: '5000',
      TOLLGATE_MAX_CONNECTIONS_PER_ADDRESS: '100',
      TOLLGATE_HEADERS_TIMEOUT: '3s',
    });
    expect(config.largeBodiesPerKey).toBe(2);
    expect(config.bodyMemoryBytes).toBe(128 * 1024 * 1024);
    expect(config.connections).toEqual({ max: 5000, perAddress: 100, headersTimeoutMs: 3000 });
    expect(() => loadConfig({ TOLLGATE_MAX_CONNECTIONS: '0' })).toThrow(/TOLLGATE_MAX_CONNECTIONS/);
  });

  it('falls back to OPENAI_API_KEY and prefers TOLLGATE_UPSTREAM_KEY', () => {
    expect(loadConfig({ OPENAI_API_KEY: 'sk-a' }).upstream.apiKey).toBe('sk-a');
    expect(loadConfig({ OPENAI_API_KEY: 'sk-a', TOLLGATE_UPSTREAM_KEY: 'sk-b' }).upstream.apiKey).toBe('sk-b');
  });

  it('reads sizes and durations with units and trims a trailing slash from the upstream URL', () => {
    const config = loadConfig({
      TOLLGATE_MAX_BODY: '512kb',
      TOLLGATE_UPSTREAM_IDLE_TIMEOUT: '2m',
      TOLLGATE_UPSTREAM_CONNECT_TIMEOUT: '250ms',
      TOLLGATE_UPSTREAM_URL: 'http://localhost:9000/v1/',
    });
    expect(config.maxBodyBytes).toBe(512 * 1024);
    expect(config.upstream.idleTimeoutMs).toBe(120_000);
    expect(config.upstream.connectTimeoutMs).toBe(250);
    expect(config.upstream.url).toBe('http://localhost:9000/v1');
  });

  it('serves unknown models at the fallback price unless told to refuse them', () => {
    expect(loadConfig({}).unknownModels).toBe('refuse-capped');
    expect(loadConfig({ TOLLGATE_UNKNOWN_MODELS: 'fallback' }).unknownModels).toBe('fallback');
    expect(loadConfig({ TOLLGATE_UNKNOWN_MODELS: 'refuse' }).unknownModels).toBe('refuse');
    expect(() => loadConfig({ TOLLGATE_UNKNOWN_MODELS: 'ignore' })).toThrow(/TOLLGATE_UNKNOWN_MODELS/);
  });

  it('listens with a backlog of 4096 connections unless told otherwise, and refuses a backlog of none', () => {
    expect(loadConfig({}).listenBacklog).toBe(4096);
    expect(loadConfig({ TOLLGATE_LISTEN_BACKLOG: '1000' }).listenBacklog).toBe(1000);
    expect(() => loadConfig({ TOLLGATE_LISTEN_BACKLOG: '0' })).toThrow(/TOLLGATE_LISTEN_BACKLOG: must be greater than zero/);
    expect(() => loadConfig({ TOLLGATE_LISTEN_BACKLOG: 'lots' })).toThrow(/TOLLGATE_LISTEN_BACKLOG: must be a whole number/);
  });

  it("decides the helper threads' nice value by the CPUs (auto) unless told a number, 0 for none, and refuses what nice cannot be", () => {
    expect(loadConfig({}).helperNice).toBe('auto');
    expect(loadConfig({ TOLLGATE_HELPER_NICE: 'auto' }).helperNice).toBe('auto');
    expect(loadConfig({ TOLLGATE_HELPER_NICE: '0' }).helperNice).toBe(0);
    expect(loadConfig({ TOLLGATE_HELPER_NICE: '19' }).helperNice).toBe(19);
    for (const bad of ['20', '-5', 'high']) {
      expect(() => loadConfig({ TOLLGATE_HELPER_NICE: bad })).toThrow(/TOLLGATE_HELPER_NICE: must be auto or a whole number from 0 to 19/);
    }
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ TOLLGATE_PORT: '' }).port).toBe(8787);
  });

  it('names every bad variable in one error', () => {
    let error: unknown;
    try {
      loadConfig({ TOLLGATE_PORT: '99999', TOLLGATE_UPSTREAM_URL: 'ftp://x', TOLLGATE_MAX_BODY: 'lots', TOLLGATE_LOG_LEVEL: 'loud' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('TOLLGATE_PORT: must be between 0 and 65535');
    expect(message).toContain('TOLLGATE_UPSTREAM_URL: must be an http(s) URL');
    expect(message).toContain('TOLLGATE_MAX_BODY: "lots" is not a size');
    expect(message).toContain('TOLLGATE_LOG_LEVEL');
  });
});
