/** A real HTTP webhook receiver on a free port: records every delivery and answers as the test scripts it. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Delivery {
  readonly headers: IncomingHttpHeaders;
  /** The raw body, as signed. */
  readonly body: string;
  readonly json: Record<string, unknown>;
  /** What the receiver answered. */
  readonly status: number;
  readonly at: number;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly deliveries: Delivery[];
  /** Statuses to answer next, in order; afterwards 200. */
  answerNext(...statuses: number[]): void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(path = '/hooks/tollgate'): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const script: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const status = req.url === path ? (script.shift() ?? 200) : 404;
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(body) as Record<string, unknown>;
      } catch {
        // recorded as received
      }
      deliveries.push({ headers: req.headers, body, json, status, at: Date.now() });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    deliveries,
    answerNext: (...statuses) => script.push(...statuses),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
