// @vitest-environment node
// @ts-check
// The one "latest reply wins" request helper (latest.js): only the newest ask's answer is used.
import { describe, expect, it, vi } from 'vitest';
import { errorText, latestReply } from '../src/latest.js';

/** A request function whose answers the test gives, one pending promise per call. */
function deferredSend() {
  /** @type {{ msg: any, resolve: (v: any) => void, reject: (e: any) => void }[]} */
  const calls = [];
  const send = (msg) => new Promise((resolve, reject) => calls.push({ msg, resolve, reject }));
  return { send, calls };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('latestReply', () => {
  it('hands the reply to the newest ask only: a superseded answer is dropped, whatever the order', async () => {
    const { send, calls } = deferredSend();
    const latest = latestReply(send);
    const got = [];
    latest.ask('a', { reply: (d) => got.push(`a:${d}`), done: () => got.push('a done') });
    latest.ask('b', { reply: (d) => got.push(`b:${d}`), done: () => got.push('b done') });
    expect(calls.map((c) => c.msg)).toEqual(['a', 'b']);
    calls[1].resolve(2); // the newer one answers first
    await tick();
    calls[0].resolve(1); // then the older one: dropped
    await tick();
    expect(got).toEqual(['b:2', 'b done']);
  });

  it('drops a superseded error too, and hands the newest error its text', async () => {
    const { send, calls } = deferredSend();
    const latest = latestReply(send);
    const errors = [];
    latest.ask('a', { error: (m) => errors.push(`a:${m}`) });
    latest.ask('b', { error: (m) => errors.push(`b:${m}`) });
    calls[0].reject(new Error('old'));
    calls[1].reject(new Error('no reply from the kernel'));
    await tick();
    expect(errors).toEqual(['b:no reply from the kernel']);
  });

  it('still(): an answer no longer wanted is dropped (reply and error), done still runs', async () => {
    const { send, calls } = deferredSend();
    const latest = latestReply(send);
    let wanted = true;
    const on = { still: () => wanted, reply: vi.fn(), error: vi.fn(), done: vi.fn() };
    latest.ask('a', on);
    wanted = false;
    calls[0].resolve(1);
    await tick();
    latest.ask('b', on);
    calls[1].reject(new Error('x'));
    await tick();
    expect(on.reply).not.toHaveBeenCalled();
    expect(on.error).not.toHaveBeenCalled();
    expect(on.done).toHaveBeenCalledTimes(2);
  });

  it('key: an older ask for the question the newest asks is answered too', async () => {
    const { send, calls } = deferredSend();
    const latest = latestReply(send);
    const got = [];
    const on = (k) => ({ key: k, reply: (d) => got.push(`${k}:${d}`), done: () => got.push(`${k} done`) });
    latest.ask('edge', on('edge'));
    latest.ask('node', on('node'));
    latest.ask('edge', on('edge'));
    calls[0].resolve(1); // the first ask for the edge: the newest asks about the edge too
    await tick();
    expect(latest.waiting).toBe(false);
    calls[1].resolve(2); // the node: superseded
    calls[2].resolve(3);
    await tick();
    expect(got).toEqual(['edge:1', 'edge done', 'edge:3', 'edge done']);
    const plain = latestReply(send);
    const seen = [];
    plain.ask('a', { reply: (d) => seen.push(d) });
    plain.ask('a', { reply: (d) => seen.push(d) });
    calls[3].resolve('old');
    calls[4].resolve('new');
    await tick();
    expect(seen).toEqual(['new']); // without a key, only the newest ask counts
  });

  it('drop(): nothing in flight reaches its handlers (a closed view)', async () => {
    const { send, calls } = deferredSend();
    const latest = latestReply(send);
    const on = { reply: vi.fn(), error: vi.fn(), done: vi.fn() };
    latest.ask('a', on);
    expect(latest.waiting).toBe(true);
    latest.drop();
    expect(latest.waiting).toBe(false);
    calls[0].resolve(1);
    await tick();
    expect(on.reply).not.toHaveBeenCalled();
    expect(on.done).not.toHaveBeenCalled();
  });

  it('waiting: true from an ask until the newest one is answered', async () => {
    const { send, calls } = deferredSend();
    const latest = latestReply(send);
    expect(latest.waiting).toBe(false);
    latest.ask('a');
    latest.ask('b');
    calls[0].resolve(1);
    await tick();
    expect(latest.waiting).toBe(true); // the newest is still on its way
    calls[1].resolve(2);
    await tick();
    expect(latest.waiting).toBe(false);
  });

  it('a reply handler that throws reaches the error handler; a send that throws is a rejection', async () => {
    const on = { reply: () => { throw new Error('bad payload'); }, error: vi.fn() };
    await latestReply(() => Promise.resolve(1)).ask('a', on);
    expect(on.error).toHaveBeenCalledWith('bad payload', expect.any(Error));
    const err = vi.fn();
    await latestReply(() => { throw new Error('closed'); }).ask('a', { error: err });
    expect(err).toHaveBeenCalledWith('closed', expect.any(Error));
  });

  it("ask's promise waits for a follow-up ask a reply returns (a search asking chunk after chunk)", async () => {
    let n = 0;
    const latest = latestReply(() => Promise.resolve(++n));
    const seen = [];
    /** @returns {Promise<unknown>} */
    const ask = () => latest.ask('chunk', { reply: (k) => (seen.push(k), k < 3 ? ask() : undefined) });
    await ask();
    expect(seen).toEqual([1, 2, 3]);
  });

  it('errorText: an Error gives its message, anything else itself', () => {
    expect(errorText(new Error('no reply'))).toBe('no reply');
    expect(errorText('plain')).toBe('plain');
    expect(errorText({ message: 'shaped' })).toBe('shaped');
    expect(errorText(null)).toBe('null');
  });
});
