// @ts-check
import { describe, expect, it, vi } from 'vitest';
import loader, { bundleCache, injectCss, loadBundle, requestBundle } from '../src/loader.js';
import { HOST } from '../src/protocol.js';
import { FakeModel } from './fixtures.js';

/** Answer the model's last bundle request as the kernel would. */
/**
 * Reply to the last request `model` sent, with `data` (a bundle, or anything a test needs).
 * @param {import('./fixtures.js').FakeModel} model @param {object} [data]
 */
function answer(model, data = { code: 'CODE', css: '.x{}', hash: 'h1' }) {
  const req = model.sent.at(-1);
  model.receive({ type: 'reply', request: req.request, data });
}

describe('requestBundle', () => {
  it('asks the host once and resolves with the reply that carries its request id', async () => {
    const model = new FakeModel();
    const p = requestBundle(model, 1000);
    expect(model.sent).toHaveLength(1);
    expect(model.sent[0].type).toBe(HOST.BUNDLE);
    model.receive({ type: 'reply', request: model.sent[0].request + 1, data: { code: 'no' } });
    answer(model);
    await expect(p).resolves.toEqual({ code: 'CODE', css: '.x{}', hash: 'h1' });
    expect(model.listeners('msg:custom')).toBe(0);
  });

  it('rejects on a timeout, and on a reply without code, and stops listening', async () => {
    vi.useFakeTimers();
    try {
      const model = new FakeModel();
      const p = requestBundle(model, 50);
      vi.advanceTimersByTime(60);
      await expect(p).rejects.toThrow(/no reply from the kernel/);
      expect(model.listeners('msg:custom')).toBe(0);
      const q = requestBundle(model, 50);
      answer(model, { nothing: true });
      await expect(q).rejects.toThrow(/no front-end bundle/);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('loadBundle', () => {
  it('imports the bundle once per page and hash, however many widgets ask', async () => {
    const scope = {};
    const importer = vi.fn(async (code) => ({ default: { code } }));
    const models = [1, 2, 3].map(() => new FakeModel({ _bundle: { hash: 'h1' } }));
    const loads = models.map((m) => loadBundle(m, { scope, importer }));
    expect(models[0].sent).toHaveLength(1); // only the first view asks
    expect(models[1].sent).toHaveLength(0);
    answer(models[0]);
    const got = await Promise.all(loads);
    expect(importer).toHaveBeenCalledTimes(1);
    expect(new Set(got.map((g) => g.module)).size).toBe(1);
    expect(bundleCache(scope).size).toBe(1);
    // another bundle (another version of the package in another kernel) is loaded apart
    const other = new FakeModel({ _bundle: { hash: 'h2' } });
    const p = loadBundle(other, { scope, importer });
    expect(other.sent).toHaveLength(1);
    answer(other, { code: 'OTHER', css: '', hash: 'h2' });
    expect(/** @type {{ default: { code: string } }} */ ((await p).module).default.code).toBe('OTHER');
  });

  it('forgets a failed load, so the next view asks again', async () => {
    const scope = {};
    const importer = vi.fn(async () => {
      throw new Error('bad module');
    });
    const a = new FakeModel({ _bundle: { hash: 'h' } });
    const p = loadBundle(a, { scope, importer });
    answer(a);
    await expect(p).rejects.toThrow('bad module');
    expect(bundleCache(scope).size).toBe(0);
    const b = new FakeModel({ _bundle: { hash: 'h' } });
    loadBundle(b, { scope, importer }).catch(() => {});
    expect(b.sent).toHaveLength(1);
  });
});

describe('injectCss', () => {
  it('adds the stylesheet once per document and once per shadow root', () => {
    const a = document.createElement('div');
    const b = document.createElement('div');
    document.body.append(a, b);
    expect(injectCss(a, '.agw{}', 'hx')).toBe(true);
    expect(injectCss(b, '.agw{}', 'hx')).toBe(false);
    expect(document.head.querySelectorAll('style[data-autograd-widget="hx"]')).toHaveLength(1);
    const host = document.createElement('div');
    document.body.append(host);
    const shadow = host.attachShadow({ mode: 'open' });
    const c = document.createElement('div');
    shadow.append(c);
    expect(injectCss(c, '.agw{}', 'hx')).toBe(true);
    expect(shadow.querySelectorAll('style[data-autograd-widget="hx"]')).toHaveLength(1);
    a.remove();
    b.remove();
    host.remove();
  });
});

describe('render', () => {
  it('shows one clear message when the kernel never sends the bundle', async () => {
    vi.useFakeTimers();
    try {
      const model = new FakeModel({ _bundle: { hash: `never-${Math.random()}` } });
      const el = document.createElement('div');
      const p = loader.render({ model, el });
      expect(el.textContent).toMatch(/loading the front-end/);
      await vi.advanceTimersByTimeAsync(130000);
      const cleanup = await p;
      expect(el.textContent).toMatch(/could not be loaded .*no reply from the kernel.*save_html/);
      cleanup();
      expect(el.textContent).toBe('');
    } finally {
      vi.useRealTimers();
    }
  });
});
