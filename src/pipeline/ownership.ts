/**
 * Every id a request refers to belongs to the key that sends it — checked
 * once per request, before it is admitted, with the ids its estimate found
 * (src/estimate/unseen.ts). Another key's id, or one nobody created, is
 * answered with the API's own 404 and the upstream is never asked, so no key
 * reads (or is billed for) another key's conversation:
 *
 * - `previous_response_id`: a stored response this key created through
 *   Tollgate (src/storage/responses.ts; on a replica, through any node);
 * - `item_reference`: an item of one of this key's stored responses (an
 *   output item Tollgate relayed, or an input item a listing showed);
 * - `conversation`: Tollgate does not serve the Conversations API, so no
 *   conversation belongs to any key;
 * - file ids: Tollgate does not serve the Files API yet, so no file belongs
 *   to any key.
 *
 * What the check learns on the way is returned: how much the previous
 * response bills again as input, when Tollgate settled it.
 */
import type { References } from '../estimate/index.js';
import { TollgateError } from '../domain/errors.js';

/** What the check reads of a stored response. */
interface StoredResponse {
  readonly keyId: string;
  /** Its input plus output tokens as settled, or undefined while unknown. */
  readonly billedTokens: number | undefined;
}

/** Where the owners of stored responses and their items are found (src/storage/sqlite/responses.ts). */
export interface StoredObjects {
  findResponse(id: string): Promise<StoredResponse | undefined>;
  firstItemNotOwned(keyId: string, ids: readonly string[]): Promise<string | undefined>;
}

/** What the check learned about the input the request refers to. */
export interface KnownInput {
  /** Input plus output tokens of the previous response, when known: what continuing it bills again. */
  readonly historyTokens: number | undefined;
}

const NOTHING_KNOWN: KnownInput = { historyTokens: undefined };

/** Ids as they appear in messages: never long enough to flood a log line or an answer. */
function shown(id: string): string {
  return id.slice(0, 200);
}

/**
 * Refuses (404) the first id `references` names that `keyId` does not own;
 * without `stored` (no stored Responses) no response or item is anyone's.
 */
export async function checkReferences(keyId: string, references: References, stored: StoredObjects | undefined): Promise<KnownInput> {
  const file = references.fileIds[0];
  if (file !== undefined) {
    throw new TollgateError(
      'file_not_found',
      `No such File object: ${shown(file)}. Tollgate does not serve the Files API yet, so no file id belongs to this key; send the file's content inline (file_data or a data URL) instead.`,
      { param: 'file_id' },
    );
  }
  if (references.conversationId !== undefined) {
    throw new TollgateError(
      'conversation_not_found',
      `Conversation with id '${shown(references.conversationId)}' not found. Tollgate does not serve the Conversations API, so it knows no conversation of this key; continue with previous_response_id instead.`,
      { param: 'conversation' },
    );
  }
  let known = NOTHING_KNOWN;
  const previous = references.previousResponseId;
  if (previous !== undefined) {
    const response = await stored?.findResponse(previous);
    if (response === undefined || response.keyId !== keyId) {
      throw new TollgateError('previous_response_not_found', `Previous response with id '${shown(previous)}' not found.`, { param: 'previous_response_id' });
    }
    known = { historyTokens: response.billedTokens };
  }
  if (references.itemIds.length > 0) {
    const foreign = stored === undefined ? references.itemIds[0] : await stored.firstItemNotOwned(keyId, references.itemIds);
    if (foreign !== undefined) throw new TollgateError('item_not_found', `Item with id '${shown(foreign)}' not found.`, { param: 'input' });
  }
  return known;
}
