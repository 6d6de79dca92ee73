import { createLocalLimiter } from '../../../src/limits/stores/local-store.js';
import { describeLimiterContract } from './limiter-contract.js';

describeLimiterContract('local', { create: async () => createLocalLimiter() });
