/**
 * What a wait that ends when the client leaves needs of its signal: whether it left, and a listener
 * called when it does. An AbortSignal has it; so does the request path's own, cheaper one
 * (src/http/client-left.ts). Here, on the ground floor, because the waits that take it live in
 * several layers (the body intake, the in-flight limit, the upstream's connection slots).
 */
export interface LeaveSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { readonly once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}
