/**
 * A port nothing listens on, for an upstream that refuses connections. A port bound and closed
 * again is free for the next `listen(0)` of any test running beside it: one such test's fake
 * upstream once took it and answered 401 to a key it did not know, failing two routing tests. Port
 * 1 is below the range the system hands out to `listen(0)`, and no test binds it.
 */
export const REFUSED_PORT = 1;
