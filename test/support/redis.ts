/**
 * Starts real `redis-server` processes for tests: one standalone server on a
 * free port, or a three-master Cluster. Fails loudly when redis-server is
 * missing — tests never skip silently. Never touches the shared Redis on 6379.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const REDIS_CLI = process.env.REDIS_CLI_BIN ?? 'redis-cli';

/** A running redis-server owned by the test. */
export interface RedisHandle {
  readonly url: string;
  readonly port: number;
  /** Stops the server gracefully (SIGTERM) and removes its directory. */
  stop(): Promise<void>;
  /** Kills the server with SIGKILL, as a crash would. */
  kill9(): Promise<void>;
  /** Starts the server again on the same port (after stop or kill9), empty. */
  restart(): Promise<void>;
}

/** A running three-master Redis Cluster. */
export interface RedisClusterHandle {
  readonly nodes: readonly { host: string; port: number }[];
  stop(): Promise<void>;
}

function assertBinary(bin: string): void {
  const probe = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `${bin} is required by this test but could not be run (${probe.error?.message ?? `exit ${probe.status}`}). ` +
        'Install Redis 7 (e.g. apt-get install redis-server) or set REDIS_SERVER_BIN / REDIS_CLI_BIN.',
    );
  }
}

/** A port that was free a moment ago (the OS picks it). */
async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Sends one inline command over a raw socket and returns the reply text. */
async function sendRaw(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply from 127.0.0.1:${port} to ${command}`));
    }, timeoutMs);
    socket.on('error', (error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    });
    socket.on('data', (chunk) => {
      data += chunk.toString('utf8');
      // A reply is complete once we have a full line (simple/error/integer) or a bulk string.
      const bulk = /^\$(\d+)\r\n/.exec(data);
      if ((bulk && data.length >= bulk[0].length + Number(bulk[1]) + 2) || (!data.startsWith('$') && data.endsWith('\r\n'))) {
        clearTimeout(timer);
        socket.end();
        resolve(data);
      }
    });
    socket.connect(port, '127.0.0.1', () => socket.write(`${command}\r\n`));
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? ` (${lastError})` : ''}`);
}

interface ServerProcess {
  child: ChildProcess;
  exited: Promise<void>;
  stderr: () => string;
}

function spawnServer(port: number, dir: string, extra: readonly string[]): ServerProcess {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra];
  const child = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited, stderr: () => stderr };
}

async function startOn(port: number, dir: string, extra: readonly string[]): Promise<ServerProcess> {
  const server = spawnServer(port, dir, extra);
  let exited = false;
  void server.exited.then(() => {
    exited = true;
  });
  await waitFor(`redis-server on port ${port}`, async () => {
    if (exited) throw new Error(`redis-server exited: ${server.stderr().trim() || 'no output'}`);
    return (await sendRaw(port, 'PING', 500)).startsWith('+PONG');
  });
  return server;
}

async function killProcess(server: ServerProcess, signal: NodeJS.Signals): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill(signal);
  await server.exited;
}

/** Starts a standalone redis-server on a free port with persistence off. */
export async function startRedis(): Promise<RedisHandle> {
  assertBinary(REDIS_SERVER);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-'));
  let port = 0;
  let server: ServerProcess | undefined;
  // A port found free can be taken before redis binds it; try a few.
  for (let attempt = 0; attempt < 5 && !server; attempt++) {
    port = await findFreePort();
    try {
      server = await startOn(port, dir, []);
    } catch (error) {
      if (attempt === 4) throw error;
    }
  }
  let current = server!;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      await killProcess(current, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
    async kill9() {
      await killProcess(current, 'SIGKILL');
    },
    async restart() {
      await killProcess(current, 'SIGTERM');
      current = await startOn(port, dir, []);
    },
  };
}

/** Starts `size` cluster-enabled masters, creates the cluster, waits for `cluster_state:ok`. */
export async function startRedisCluster(size = 3): Promise<RedisClusterHandle> {
  assertBinary(REDIS_SERVER);
  assertBinary(REDIS_CLI);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-cluster-'));
  const servers: ServerProcess[] = [];
  const ports: number[] = [];
  try {
    for (let i = 0; i < size; i++) {
      const nodeDir = join(dir, String(i));
      mkdirSync(nodeDir);
      const port = await findFreePort();
      ports.push(port);
      servers.push(
        await startOn(port, nodeDir, ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000']),
      );
    }
    const create = spawnSync(REDIS_CLI, ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (create.status !== 0) {
      throw new Error(`redis-cli --cluster create failed: ${create.stderr || create.stdout}`);
    }
    for (const port of ports) {
      await waitFor(`cluster_state:ok on ${port}`, async () => (await sendRaw(port, 'CLUSTER INFO')).includes('cluster_state:ok'), 20_000);
    }
  } catch (error) {
    await Promise.all(servers.map((s) => killProcess(s, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    nodes: ports.map((port) => ({ host: '127.0.0.1', port })),
    async stop() {
      await Promise.all(servers.map((s) => killProcess(s, 'SIGTERM')));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
