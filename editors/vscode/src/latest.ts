/**
 * As-you-type querying: debounce the input, number every request, and let only
 * the answer to the latest request through. A slow answer to an old query that
 * arrives after a newer query was sent is dropped, even when the newer one has
 * not answered yet, so the list never jumps back to an older query.
 *
 * This module must not import `vscode`: it is unit-tested under plain node.
 */

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Sequence counter: a ticket is current until the next begin() or invalidate(). */
export class LatestGate {
  private seq = 0;

  /** Starts a new request and returns its ticket; every earlier ticket becomes stale. */
  begin(): number {
    this.seq += 1;
    return this.seq;
  }

  isLatest(ticket: number): boolean {
    return ticket === this.seq;
  }

  /** Makes every outstanding ticket stale (e.g. the input was cleared or the UI closed). */
  invalidate(): void {
    this.seq += 1;
  }
}

/** Runs the last scheduled function once `delayMs` passed without a newer schedule. */
export class Debouncer {
  private handle: unknown = undefined;
  private pending = false;

  constructor(
    private readonly delayMs: number,
    private readonly timers: Timers = realTimers,
  ) {}

  schedule(fn: () => void): void {
    this.cancel();
    this.pending = true;
    this.handle = this.timers.setTimeout(() => {
      this.pending = false;
      this.handle = undefined;
      fn();
    }, this.delayMs);
  }

  cancel(): void {
    if (this.pending) {
      this.timers.clearTimeout(this.handle);
      this.pending = false;
      this.handle = undefined;
    }
  }

  get isPending(): boolean {
    return this.pending;
  }
}

export interface LiveQueryHandlers<Q, R> {
  /** Sends the query; must honour `signal` (abort = the answer is no longer wanted). */
  fetch(query: Q, signal: AbortSignal): Promise<R>;
  /** The answer to the latest query. */
  onResult(query: Q, result: R): void;
  /** The failure of the latest query (never called for stale or aborted ones). */
  onError(query: Q, error: unknown): void;
  /** Busy state changes: true while the latest query is waiting or in flight. */
  onBusy?(busy: boolean): void;
  /** Queries for which nothing is sent (e.g. blank input); the handler clears the list. */
  isEmpty?(query: Q): boolean;
  onEmpty?(query: Q): void;
}

/**
 * Debounced, latest-wins querying. update() on every keystroke; flush() to send
 * at once; dispose() when the UI closes.
 */
export class LiveQuery<Q, R> {
  private readonly gate = new LatestGate();
  private readonly debouncer: Debouncer;
  private inflight: AbortController | undefined;
  private disposed = false;
  /** Number of answers dropped because they were stale (for tests and logs). */
  dropped = 0;

  constructor(
    private readonly handlers: LiveQueryHandlers<Q, R>,
    delayMs = 150,
    timers: Timers = realTimers,
  ) {
    this.debouncer = new Debouncer(delayMs, timers);
  }

  update(query: Q): void {
    if (this.disposed) return;
    // Whatever is in flight now answers an older query.
    this.gate.invalidate();
    this.abortInflight();
    if (this.handlers.isEmpty?.(query)) {
      this.debouncer.cancel();
      this.handlers.onBusy?.(false);
      this.handlers.onEmpty?.(query);
      return;
    }
    this.handlers.onBusy?.(true);
    this.debouncer.schedule(() => void this.send(query));
  }

  /** Sends `query` now, without waiting for the debounce delay. */
  flush(query: Q): Promise<void> {
    this.debouncer.cancel();
    this.gate.invalidate();
    this.abortInflight();
    if (this.handlers.isEmpty?.(query)) {
      this.handlers.onBusy?.(false);
      this.handlers.onEmpty?.(query);
      return Promise.resolve();
    }
    return this.send(query);
  }

  dispose(): void {
    this.disposed = true;
    this.debouncer.cancel();
    this.gate.invalidate();
    this.abortInflight();
  }

  private abortInflight(): void {
    if (this.inflight !== undefined) {
      this.inflight.abort();
      this.inflight = undefined;
    }
  }

  private async send(query: Q): Promise<void> {
    if (this.disposed) return;
    const ticket = this.gate.begin();
    const controller = new AbortController();
    this.inflight = controller;
    this.handlers.onBusy?.(true);
    let result: R;
    try {
      result = await this.handlers.fetch(query, controller.signal);
    } catch (error) {
      if (!this.gate.isLatest(ticket) || controller.signal.aborted || this.disposed) {
        this.dropped += 1;
        return;
      }
      this.inflight = undefined;
      this.handlers.onBusy?.(false);
      this.handlers.onError(query, error);
      return;
    }
    if (!this.gate.isLatest(ticket) || controller.signal.aborted || this.disposed) {
      this.dropped += 1;
      return;
    }
    this.inflight = undefined;
    this.handlers.onBusy?.(false);
    this.handlers.onResult(query, result);
  }
}
