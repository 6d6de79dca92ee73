/**
 * `POST /v1/files` with `purpose=batch`: the client's multipart upload
 * streams to the upstream as it arrives, and on the way each JSONL line is
 * checked and priced at its worst case (src/batches/), so that creating a
 * batch from the file can be admitted at once, all or none. Nothing holds the
 * file: the memory used is one line, one chunk held back, the streams'
 * buffers, and the `custom_id`s seen (bounded by the 50,000 lines a file may
 * have), whatever the file's size (bench/batch-upload.ts measures it).
 *
 * The last chunk received is held back until every line has been judged:
 * without it the upstream never sees the end of the multipart body, so a file
 * refused at its last line (or one whose `purpose` is not `batch`, a field a
 * client may send after the file) is aborted before the upstream stores it.
 */
import busboy from 'busboy';
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import type { BatchError } from '../batches/batch-errors.js';
import { batchErrorOf, batchLineCost, BatchCost } from '../batches/batch-estimate.js';
import { OpenAiBatchFile } from '../batches/batch-lines.js';
import { JsonlSplitter } from '../batches/jsonl-lines.js';
import { TollgateError } from '../domain/errors.js';
import { EstimateInputError } from '../estimate/errors.js';
import { estimateRequest, type EstimateOptions } from '../estimate/index.js';
import { tooLarge } from '../http/body.js';
import { firstHeader, type HeaderRecord } from '../http/client-request.js';
import type { BatchFileRecord } from '../storage/batches.js';
import type { Upstream, UpstreamResponse } from '../upstreams/pool.js';
import { toUpstreamError } from '../upstreams/pool.js';

/** What an upload learned of its file, once it was judged whole: the stored record less who and when. */
export type JudgedFile = Omit<BatchFileRecord, 'id' | 'keyId' | 'createdAt'>;

export interface UploadInput {
  readonly headers: HeaderRecord;
  readonly body: Readable;
  /** The most bytes the whole multipart body may have. */
  readonly maxBytes: number;
  /** The longest line the file may have, bytes. */
  readonly maxLineBytes: number;
  readonly estimate: EstimateOptions;
  readonly upstream: Upstream;
  /** Headers for the upstream (the client's own, less what stays at the proxy). */
  readonly upstreamHeaders: Record<string, string>;
  readonly signal: AbortSignal;
  readonly owner: string;
}

/** The upstream's answer and what the file holds, or the refusal (the upstream request aborted). */
export async function streamUpload(input: UploadInput): Promise<{ readonly response: UpstreamResponse; readonly file: JudgedFile }> {
  const type = firstHeader(input.headers['content-type']);
  if (type === undefined || !/^multipart\/form-data/i.test(type)) {
    throw new TollgateError('invalid_request', "A file is uploaded as multipart/form-data with the fields 'file' and 'purpose'.", { param: 'file' });
  }
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { 'content-type': type }, limits: { files: 1, fields: 8, fieldSize: 1024, parts: 10 } });
  } catch (error) {
    throw new TollgateError('invalid_request', `The multipart body cannot be read: ${(error as Error).message}.`, { param: 'file' });
  }
  const judge = new FileJudge(input);
  let failure: TollgateError | undefined;
  const fail = (error: TollgateError): void => {
    failure ??= error;
  };
  let purpose: string | undefined;
  let sawFile = false;
  let judged: Promise<void> = Promise.resolve();
  parser.on('field', (name, value) => {
    if (name === 'purpose') purpose = value;
  });
  parser.on('file', (name, stream, info) => {
    if (name !== 'file' || sawFile) {
      stream.resume();
      return;
    }
    sawFile = true;
    judged = judge.read(stream, info.filename ?? '').catch((error: unknown) => fail(asError(error)));
  });
  parser.on('error', (error: unknown) => fail(new TollgateError('invalid_request', `The multipart body cannot be read: ${(error as Error).message}.`)));
  const parsed = once(parser, 'close').catch(() => undefined);

  const abort = new AbortController();
  const stop = (): void => abort.abort();
  input.signal.addEventListener('abort', stop, { once: true });
  const toUpstream = new PassThrough();
  const contentLength = firstHeader(input.headers['content-length']);
  const sent = input.upstream.send({
    method: 'POST',
    path: '/files',
    headers: { ...input.upstreamHeaders, 'content-type': type, ...(contentLength === undefined ? {} : { 'content-length': contentLength }) },
    body: toUpstream,
    signal: abort.signal,
    owner: input.owner,
  });
  let upstreamFailed: unknown;
  const failedEarly = sent.then(
    () => undefined,
    (error: unknown) => {
      upstreamFailed = error;
    },
  );

  try {
    let total = 0;
    let held: Buffer | undefined;
    for await (const chunk of input.body as AsyncIterable<Buffer>) {
      total += chunk.byteLength;
      if (total > input.maxBytes) fail(tooLarge(input.maxBytes));
      if (failure !== undefined || upstreamFailed !== undefined) break;
      if (!parser.write(chunk)) await Promise.race([once(parser, 'drain'), parsed]);
      if (held !== undefined && !toUpstream.write(held)) await Promise.race([once(toUpstream, 'drain'), failedEarly]);
      held = chunk;
    }
    if (failure === undefined && upstreamFailed === undefined) {
      parser.end();
      await parsed;
      await judged;
      if (!sawFile) fail(new TollgateError('invalid_request', "The upload has no 'file' field.", { param: 'file' }));
      else if (purpose !== 'batch') {
        fail(
          new TollgateError('invalid_value', `Tollgate takes files for batches only: 'purpose' must be "batch" (got ${JSON.stringify(purpose ?? null)}).`, {
            param: 'purpose',
          }),
        );
      } else {
        const refused = judge.finish();
        if (refused !== undefined) fail(batchError(refused));
      }
    }
    if (failure !== undefined) throw failure;
    if (upstreamFailed !== undefined) throw toUpstreamError(upstreamFailed);
    toUpstream.end(held);
    const response = await sent;
    return { response, file: judge.result() };
  } catch (error) {
    abort.abort();
    toUpstream.destroy();
    parser.destroy();
    sent.catch(() => undefined);
    throw error;
  } finally {
    input.signal.removeEventListener('abort', stop);
  }
}

/** The file's lines, checked and priced as they stream past. */
class FileJudge {
  private readonly splitter: JsonlSplitter;
  private readonly file = new OpenAiBatchFile();
  private readonly cost = new BatchCost();
  private filename = '';
  private bytes = 0;

  constructor(private readonly input: Pick<UploadInput, 'maxLineBytes' | 'estimate'>) {
    this.splitter = new JsonlSplitter(input.maxLineBytes);
  }

  async read(stream: Readable, filename: string): Promise<void> {
    this.filename = filename.slice(0, 255);
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      this.bytes += chunk.byteLength;
      for (const line of this.splitter.feed(chunk)) await this.line(line);
    }
    for (const line of this.splitter.end()) await this.line(line);
  }

  private async line(line: Parameters<OpenAiBatchFile['add']>[0]): Promise<void> {
    const checked = this.file.add(line);
    if (!checked.ok) throw batchError(checked.error);
    const request = checked.value;
    try {
      const estimate = await estimateRequest(request.target.endpoint, request.body, this.input.estimate);
      this.cost.add(batchLineCost(estimate, request.target.endpoint));
    } catch (error) {
      if (error instanceof EstimateInputError) throw batchError(batchErrorOf(error, request));
      throw error;
    }
    const tooMany = this.cost.inputsError(request.target, request.line);
    if (tooMany !== undefined) throw batchError(tooMany);
  }

  finish(): BatchError | undefined {
    return this.file.finish();
  }

  result(): JudgedFile {
    const total = this.cost.total;
    return {
      filename: this.filename,
      bytes: this.bytes,
      lines: this.file.requests,
      endpoint: this.file.url ?? '',
      model: this.file.model ?? '',
      promptTokens: total.promptTokens,
      completionTokens: total.completionTokens,
      costMicros: total.microUsd,
    };
  }
}

/** A batch check's error, as the client is told it: OpenAI's shape, the line in the message. */
function batchError(error: BatchError): TollgateError {
  const where = error.line === null ? '' : `Line ${error.line}: `;
  return new TollgateError('invalid_value', `${where}${error.message} [${error.code}]`, { param: error.param ?? 'file' });
}

function asError(error: unknown): TollgateError {
  return error instanceof TollgateError ? error : new TollgateError('invalid_request', 'The file could not be read.', { cause: error });
}
