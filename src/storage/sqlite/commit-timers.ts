/**
 * When the ledger writer (ledger-writer.ts) commits: a pending row on the next turn, or under load
 * at the end of a short group window so the rows around it share its commit; settlements and
 * refusals within the settle delay, riding along with the next pending row when one comes first.
 *
 * Group commit: a commit costs about as much for one request's row as for ten (the same table,
 * index and rollup pages go to the WAL), so a pending row waits up to `groupWindowMs` — only while
 * at least {@link GROUP_SIBLINGS} requests are in flight and the previous pending row came less
 * than that window ago, so one client at a time, or a quiet proxy, never waits
 * (docs/performance.md, "Pending rows that share a commit").
 */

/**
 * Requests in flight (rows committed, not yet settled) from which a pending row waits for the group
 * window: below it, too few others are around to share the commit for the wait to pay.
 */
const GROUP_SIBLINGS = 4;

export class CommitTimers {
  private turn: NodeJS.Immediate | undefined;
  private window: NodeJS.Timeout | undefined;
  private delay: NodeJS.Timeout | undefined;
  /** When the last pending row was queued (performance.now()): a busy writer's come close together. */
  private lastPendingAt = Number.NEGATIVE_INFINITY;

  /**
   * @param onDue commits what is queued: the next turn or the group window came.
   * @param onDelay the same when the settle delay came.
   */
  constructor(
    private readonly onDue: () => void,
    private readonly onDelay: () => void,
    private readonly groupWindowMs: number,
    private readonly settleDelayMs: number,
  ) {}

  /** A pending row was queued at `queuedAt`, with `inFlight` requests' rows committed and unsettled. */
  pendingRow(queuedAt: number, inFlight: number): void {
    const sinceLast = queuedAt - this.lastPendingAt;
    this.lastPendingAt = queuedAt;
    if (sinceLast < this.groupWindowMs && inFlight >= GROUP_SIBLINGS) this.groupWindow();
    else this.nextTurn();
  }

  /**
   * Commit on the next turn (sooner than a group window that was waiting). A settle delay's timer, if
   * one runs, is left to fire on what is queued then (often nothing): cleared here and set again by
   * the next settlement, it was a timer made and cleared per request, and Node adds and deletes its
   * list of that duration each time, through V8's slow property paths (docs/performance.md, "Slow
   * paths the profile named").
   */
  nextTurn(): void {
    if (this.turn !== undefined) return;
    if (this.window !== undefined) {
      clearTimeout(this.window);
      this.window = undefined;
    }
    this.turn = setImmediate(this.due);
  }

  /** Commit within the settle delay, unless a commit is due sooner. */
  settleDelay(): void {
    if (this.turn !== undefined || this.window !== undefined || this.delay !== undefined) return;
    this.delay = setTimeout(this.delayed, this.settleDelayMs);
  }

  cancel(): void {
    if (this.turn !== undefined) clearImmediate(this.turn);
    if (this.window !== undefined) clearTimeout(this.window);
    if (this.delay !== undefined) clearTimeout(this.delay);
    this.turn = undefined;
    this.window = undefined;
    this.delay = undefined;
  }

  private groupWindow(): void {
    if (this.turn !== undefined || this.window !== undefined) return;
    this.window = setTimeout(this.due, this.groupWindowMs);
  }

  private readonly due = (): void => {
    this.turn = undefined;
    this.window = undefined;
    this.onDue();
  };

  private readonly delayed = (): void => {
    this.delay = undefined;
    this.onDelay();
  };
}
