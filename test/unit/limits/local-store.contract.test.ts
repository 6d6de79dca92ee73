import { createLocalLimiter } from '../../../src/limits/local-store.js';
import { describeLimiterContract } from '../../support/limiter-contract.js';

describeLimiterContract('local', { create: async () => createLocalLimiter() });
