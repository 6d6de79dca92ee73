/**
 * Input Tollgate cannot count, and the ids a request refers to. Pure.
 *
 * Some input lives only upstream: a stored response's history (`previous_response_id`), a
 * conversation, stored items, files by id or URL, remote images, reusable prompts, and what
 * MCP servers and built-in tools bring back (their results are billed as input). The counters
 * note each occurrence here by kind, with the ids it names, and the estimate reserves it:
 *
 * - an image whose size Tollgate cannot read is counted at the most one image can bill for the
 *   model and detail (images.ts, {@link maxImageTokens});
 * - everything else at the most the model can bill for its input — what its context window
 *   leaves beside the prompt Tollgate counted — or at the operator's bound
 *   (`EstimateOptions.unseenInputTokens`), the overshoot then settled as debt from the usage;
 * - a stored response whose usage Tollgate settled is reserved at that usage instead
 *   (estimate-body.ts, `withStoredHistory`).
 *
 * The whole window, not the window less the completion: a completion Tollgate caps below the
 * client's own limit leaves the model that much more room for input.
 */

/** Kinds of input Tollgate cannot count (README, "Input Tollgate cannot see"). */
export type UnseenKind =
  /** `previous_response_id`: the stored response's input and output, billed again as input. */
  | 'stored_history'
  /** `conversation`: its items, billed as input. */
  | 'conversation'
  /** `item_reference` items: stored items, billed as input. */
  | 'item_reference'
  /** A reusable prompt (`prompt: {id}`): its template, billed as input. */
  | 'stored_prompt'
  /** A file named by id or URL (`file_id`, `file_url`, Anthropic `url`/`file` documents). */
  | 'file'
  /** An image whose size Tollgate cannot read: a URL, a file id, an unreadable data URL. */
  | 'image'
  /** MCP servers (Responses `mcp` tools, Anthropic `mcp_servers`): tool lists and results. */
  | 'mcp'
  /** Built-in tools whose results come back as billed input (web search, file search, code execution …). */
  | 'tool_results';

/** Ids of stored objects a request refers to; each must belong to the key (src/pipeline/ownership.ts). */
export interface References {
  readonly previousResponseId?: string;
  readonly conversationId?: string;
  /** `item_reference` ids, each once. */
  readonly itemIds: readonly string[];
  /** File ids (`file_id` of files, images and documents), each once. */
  readonly fileIds: readonly string[];
}

/** What an estimate could not count. */
export interface UnseenInput {
  /** Occurrences per kind (only the kinds that occur). */
  readonly kinds: Readonly<Partial<Record<UnseenKind, number>>>;
  /** The bound of the images whose size could not be read (the most each can bill), summed. */
  readonly imageTokens: number;
  /**
   * Part of `Estimate.promptTokens` reserved for all of it: those images at their bound, the
   * other kinds at the operator's bound or the whole room — never more than the room. 0 when
   * the estimate counted everything.
   */
  readonly reservedTokens: number;
  /**
   * Part of reservedTokens that is a bound, not a size Tollgate knows (the window-bounded kinds at
   * the window or the operator's bound): budgets hold it; rate limits do not take it, and settle
   * what the usage reports as debt, as they do with a completion's worst case.
   */
  readonly boundTokens: number;
  /** The most input can bill beside what was counted: the window (or the largest known) less the counted prompt. */
  readonly room: number;
}

const NONE: References = { itemIds: [], fileIds: [] };

/** Whether a kind is reserved against the window (every kind but images, which have their own bound). */
function isWindowBounded(kind: UnseenKind): boolean {
  return kind !== 'image';
}

/** Notes unseen input and references while a body is counted. */
export class UnseenTally {
  readonly kinds: Partial<Record<UnseenKind, number>> = {};
  private previousResponseId: string | undefined;
  private conversationId: string | undefined;
  private readonly itemIds = new Set<string>();
  private readonly fileIds = new Set<string>();

  note(kind: UnseenKind, times = 1): void {
    if (times > 0) this.kinds[kind] = (this.kinds[kind] ?? 0) + times;
  }

  previousResponse(id: string): void {
    this.previousResponseId = id;
    this.note('stored_history');
  }

  conversation(id: string): void {
    this.conversationId = id;
    this.note('conversation');
  }

  item(id: string): void {
    this.itemIds.add(id);
    this.note('item_reference');
  }

  /** A file id; `kind` is what it is read as (a document, or an image). */
  file(id: string, kind: 'file' | 'image'): void {
    this.fileIds.add(id);
    this.note(kind);
  }

  /** True when anything the window bounds was noted. */
  get windowBounded(): boolean {
    return (Object.keys(this.kinds) as UnseenKind[]).some(isWindowBounded);
  }

  references(): References {
    if (this.previousResponseId === undefined && this.conversationId === undefined && this.itemIds.size === 0 && this.fileIds.size === 0) return NONE;
    return {
      ...(this.previousResponseId === undefined ? {} : { previousResponseId: this.previousResponseId }),
      ...(this.conversationId === undefined ? {} : { conversationId: this.conversationId }),
      itemIds: [...this.itemIds],
      fileIds: [...this.fileIds],
    };
  }
}

/**
 * Tokens to reserve for unseen input: images at their bound, plus — when a window-bounded kind
 * occurs — the operator's `bound`, or (unset) the whole room; never more than the room. With the
 * stored history's size known (`knownHistory`), that instead of the bound.
 */
export function unseenReservation(input: {
  readonly room: number;
  readonly imageTokens: number;
  readonly windowBounded: boolean;
  readonly bound: number | undefined;
  readonly knownHistory?: number;
}): number {
  const rest = !input.windowBounded ? 0 : (input.knownHistory ?? input.bound ?? input.room);
  return Math.min(input.room, input.imageTokens + rest);
}

/** The room a window of `window` tokens leaves beside `counted` prompt tokens (never negative). */
export function roomBeside(window: number, counted: number): number {
  return Math.max(0, window - counted);
}

/** Whether the only window-bounded input is one stored response's history, whose size may be known. */
export function onlyStoredHistory(unseen: UnseenInput): boolean {
  const kinds = (Object.keys(unseen.kinds) as UnseenKind[]).filter(isWindowBounded);
  return kinds.length === 1 && kinds[0] === 'stored_history';
}
