import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Debouncer, LatestGate, LiveQuery, Timers } from "../src/latest";

/** Manual clock: advance(ms) runs due timers in order. */
class FakeTimers implements Timers {
  now = 0;
  private next = 1;
  private timers = new Map<number, { at: number; fn: () => void }>();
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.next++;
    this.timers.set(id, { at: this.now + ms, fn });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (due === undefined) break;
      this.timers.delete(due[0]);
      this.now = due[1].at;
      due[1].fn();
    }
    this.now = until;
  }
  get pending(): number {
    return this.timers.size;
  }
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

/** A LiveQuery whose fetches are resolved by hand. */
function harness(delay = 150) {
  const timers = new FakeTimers();
  const calls: { query: string; signal: AbortSignal; d: Deferred<string> }[] = [];
  const results: string[] = [];
  const errors: string[] = [];
  const busy: boolean[] = [];
  let emptied = 0;
  const live = new LiveQuery<string, string>(
    {
      fetch: (query, signal) => {
        const d = deferred<string>();
        calls.push({ query, signal, d });
        return d.promise;
      },
      onResult: (q, r) => results.push(`${q}=>${r}`),
      onError: (q, e) => errors.push(`${q}!${String((e as Error).message)}`),
      onBusy: (b) => busy.push(b),
      isEmpty: (q) => q.trim() === "",
      onEmpty: () => (emptied += 1),
    },
    delay,
    timers,
  );
  return { timers, calls, results, errors, busy, live, emptied: () => emptied };
}

describe("LatestGate", () => {
  test("only the last ticket is current", () => {
    const g = new LatestGate();
    const a = g.begin();
    const b = g.begin();
    assert.equal(g.isLatest(a), false);
    assert.equal(g.isLatest(b), true);
    g.invalidate();
    assert.equal(g.isLatest(b), false);
  });
});

describe("Debouncer", () => {
  test("runs once, delay after the last schedule", () => {
    const timers = new FakeTimers();
    const d = new Debouncer(150, timers);
    const runs: string[] = [];
    d.schedule(() => runs.push("a"));
    timers.advance(100);
    d.schedule(() => runs.push("b"));
    timers.advance(100);
    assert.deepEqual(runs, []);
    assert.equal(d.isPending, true);
    timers.advance(50);
    assert.deepEqual(runs, ["b"]);
    assert.equal(d.isPending, false);
  });

  test("cancel drops the pending run", () => {
    const timers = new FakeTimers();
    const d = new Debouncer(150, timers);
    let ran = false;
    d.schedule(() => (ran = true));
    d.cancel();
    timers.advance(1000);
    assert.equal(ran, false);
    assert.equal(timers.pending, 0);
  });
});

describe("LiveQuery", () => {
  test("typing quickly sends only the last query, after the debounce delay", async () => {
    const h = harness();
    for (const q of ["o", "or", "ord", "orde"]) {
      h.live.update(q);
      h.timers.advance(50);
    }
    assert.equal(h.calls.length, 0);
    h.timers.advance(150);
    assert.deepEqual(h.calls.map((c) => c.query), ["orde"]);
    h.calls[0].d.resolve("R");
    await tick();
    assert.deepEqual(h.results, ["orde=>R"]);
    assert.equal(h.busy.at(-1), false);
  });

  test("out-of-order answers: the older answer arriving last is dropped", async () => {
    const h = harness();
    h.live.update("ord");
    h.timers.advance(150);
    h.live.update("ordered");
    h.timers.advance(150);
    assert.deepEqual(h.calls.map((c) => c.query), ["ord", "ordered"]);
    assert.equal(h.calls[0].signal.aborted, true, "the older request is cancelled");
    h.calls[1].d.resolve("new");
    await tick();
    h.calls[0].d.resolve("old");
    await tick();
    assert.deepEqual(h.results, ["ordered=>new"]);
    assert.equal(h.live.dropped, 1);
  });

  test("an old answer that arrives before the new one is still dropped", async () => {
    const h = harness();
    h.live.update("a");
    h.timers.advance(150);
    h.live.update("ab");
    h.calls[0].d.resolve("stale"); // arrives while "ab" is still being debounced
    await tick();
    assert.deepEqual(h.results, []);
    h.timers.advance(150);
    h.calls[1].d.resolve("fresh");
    await tick();
    assert.deepEqual(h.results, ["ab=>fresh"]);
  });

  test("errors of stale requests are dropped, errors of the latest reported", async () => {
    const h = harness();
    h.live.update("a");
    h.timers.advance(150);
    h.live.update("a(");
    h.timers.advance(150);
    h.calls[0].d.reject(new Error("cancelled"));
    h.calls[1].d.reject(new Error("bad regex"));
    await tick();
    assert.deepEqual(h.errors, ["a(!bad regex"]);
    assert.deepEqual(h.results, []);
  });

  test("clearing the input empties the list and drops what is in flight", async () => {
    const h = harness();
    h.live.update("abc");
    h.timers.advance(150);
    h.live.update("  ");
    assert.equal(h.emptied(), 1);
    h.calls[0].d.resolve("late");
    await tick();
    assert.deepEqual(h.results, []);
    assert.equal(h.busy.at(-1), false);
    h.timers.advance(1000);
    assert.equal(h.calls.length, 1, "nothing sent for blank input");
  });

  test("dispose drops everything", async () => {
    const h = harness();
    h.live.update("abc");
    h.timers.advance(150);
    h.live.dispose();
    assert.equal(h.calls[0].signal.aborted, true);
    h.calls[0].d.resolve("late");
    await tick();
    h.live.update("more");
    h.timers.advance(1000);
    assert.deepEqual(h.results, []);
    assert.equal(h.calls.length, 1);
  });

  test("flush sends at once and supersedes a pending debounce", async () => {
    const h = harness();
    h.live.update("abc");
    const done = h.live.flush("abc");
    assert.equal(h.calls.length, 1);
    h.calls[0].d.resolve("now");
    await done;
    h.timers.advance(1000);
    assert.equal(h.calls.length, 1, "the debounced send was cancelled");
    assert.deepEqual(h.results, ["abc=>now"]);
  });

  test("many interleaved answers: only the final query's answer is shown", async () => {
    const h = harness(0);
    const queries = ["a", "ab", "abc", "abcd", "abcde"];
    for (const q of queries) {
      h.live.update(q);
      h.timers.advance(0);
    }
    assert.equal(h.calls.length, 5);
    for (const i of [3, 0, 4, 2, 1]) h.calls[i].d.resolve(`r${i}`);
    await tick();
    assert.deepEqual(h.results, ["abcde=>r4"]);
    assert.equal(h.live.dropped, 4);
  });
});
