/** The fake OpenAI upstream lives in src/demo (the demo ships it); tests use it from here. */
export { startFakeUpstream, FAKE_WORDS, type FakeUpstream, type RecordedRequest, type FakeBilling } from '../../src/demo/fake-upstream/index.js';
