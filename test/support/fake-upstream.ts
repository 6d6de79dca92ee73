/** The fake OpenAI upstream lives in src/demo (the demo ships it); tests use it from here. */
export { startFakeUpstream, type FakeUpstream } from '../../src/demo/fake-upstream/index.js';
