import { describe, expect, it } from 'vitest';
import { identityOfEvent, identityOfJsonHead } from '../../../src/dialects/answer-identity.js';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('identityOfJsonHead', () => {
  it('reads a chat answer’s own id and model, not words in its content that look like keys', () => {
    const answer = {
      id: 'chatcmpl-123',
      object: 'chat.completion',
      model: 'gpt-4o-mini-2024-07-18',
      choices: [{ message: { role: 'assistant', content: 'Say {"id":"fake","model":"evil"}' } }],
    };
    expect(identityOfJsonHead(json(answer))).toEqual({ id: 'chatcmpl-123', model: 'gpt-4o-mini-2024-07-18' });
  });

  it('reads an Anthropic message and a Responses answer', () => {
    expect(identityOfJsonHead(json({ id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-haiku-4-5-20251001', content: [] }))).toEqual({
      id: 'msg_01',
      model: 'claude-haiku-4-5-20251001',
    });
    expect(identityOfJsonHead(json({ id: 'resp_9', object: 'response', instructions: 'be "brief"', model: 'gpt-4o', output: [] }))).toEqual({
      id: 'resp_9',
      model: 'gpt-4o',
    });
  });

  it('gives nothing it cannot see: no id in embeddings, no model past the head of a huge answer', () => {
    const vectors = Array.from({ length: 4000 }, () => 0.125);
    expect(identityOfJsonHead(json({ object: 'list', data: [{ embedding: vectors }], model: 'text-embedding-3-small' }))).toEqual({});
    expect(identityOfJsonHead(Buffer.from('not json'))).toEqual({});
    // Quotes inside a string are escaped: text that spells a key is not one.
    expect(identityOfJsonHead(json({ content: 'x {"id":"fake","model":"evil"}' }))).toEqual({});
  });
});

describe('identityOfEvent', () => {
  it('reads a chat chunk, Anthropic’s message_start and a Responses event', () => {
    expect(identityOfEvent({ id: 'chatcmpl-1', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [] })).toEqual({
      id: 'chatcmpl-1',
      model: 'gpt-4o-mini',
    });
    expect(identityOfEvent({ type: 'message_start', message: { id: 'msg_1', model: 'claude-haiku-4-5' } })).toEqual({ id: 'msg_1', model: 'claude-haiku-4-5' });
    expect(identityOfEvent({ type: 'response.created', sequence_number: 0, response: { id: 'resp_1', model: 'gpt-4o' } })).toEqual({
      id: 'resp_1',
      model: 'gpt-4o',
    });
  });

  it('gives nothing for an event without them, and ignores values that are not short strings', () => {
    expect(identityOfEvent({ type: 'ping' })).toBeUndefined();
    expect(identityOfEvent({ id: 42, model: 'x'.repeat(1000) })).toBeUndefined();
  });
});
