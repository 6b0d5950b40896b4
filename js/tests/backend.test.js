// @ts-check
import { describe, expect, it, vi } from 'vitest';
import { kernelBackend } from '../src/backend.js';
import { FakeModel } from './fixtures.js';

describe('kernelBackend', () => {
  it('sends commands as custom messages', () => {
    const model = new FakeModel();
    const b = kernelBackend(model);
    b.command({ type: 'step' });
    expect(model.sent).toEqual([{ type: 'step' }]);
  });

  it('matches inspect replies by request id and ignores other views\' replies', async () => {
    const model = new FakeModel();
    const b = kernelBackend(model);
    const p = b.inspect({ node: 2 });
    const req = model.sent[0];
    expect(req).toMatchObject({ type: 'inspect', node: 2 });
    expect(Number.isInteger(req.request)).toBe(true);
    model.receive({ type: 'reply', request: req.request + 1, data: { wrong: true } });
    model.receive({ type: 'reply', request: req.request, data: { name: 'AccumulateGrad' } });
    await expect(p).resolves.toEqual({ name: 'AccumulateGrad' });
  });

  it('rejects on timeout and on dispose, and stops listening', async () => {
    vi.useFakeTimers();
    const model = new FakeModel();
    const b = kernelBackend(model, { timeoutMs: 50 });
    const p = b.inspect({ edge: 0 });
    vi.advanceTimersByTime(60);
    await expect(p).rejects.toThrow(/no reply/);
    vi.useRealTimers();
    const q = b.inspect({ edge: 1 });
    b.dispose();
    await expect(q).rejects.toThrow(/closed/);
    expect(model.listeners('msg:custom')).toBe(0);
    b.command({ type: 'step' });
    expect(model.sent.filter((m) => m.type === 'step')).toHaveLength(0);
  });

  it('passes warnings on', () => {
    const model = new FakeModel();
    const b = kernelBackend(model);
    const seen = [];
    const off = b.onWarning((m) => seen.push(m));
    model.receive({ type: 'warning', message: 'unknown command' });
    off();
    model.receive({ type: 'warning', message: 'again' });
    expect(seen).toEqual(['unknown command']);
  });
});
