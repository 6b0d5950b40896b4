// @ts-check
import { afterEach, describe, expect, it } from 'vitest';
import { isDark, luminance, readTheme, watchTheme } from '../src/theme.js';

describe('isDark', () => {
  it('follows JupyterLab first', () => {
    expect(isDark({ jpThemeLight: 'false', background: '#fff' })).toBe(true);
    expect(isDark({ jpThemeLight: 'true', prefersDark: true })).toBe(false);
  });
  it('then VS Code, the background, the OS', () => {
    expect(isDark({ bodyClass: 'vscode-dark' })).toBe(true);
    expect(isDark({ bodyClass: 'vscode-light', prefersDark: true })).toBe(false);
    expect(isDark({ background: 'rgb(20, 20, 20)' })).toBe(true);
    expect(isDark({ background: '#fafafa' })).toBe(false);
    expect(isDark({ background: 'rgba(0, 0, 0, 0)', prefersDark: true })).toBe(true);
    expect(isDark({})).toBe(false);
  });
  it('measures luminance', () => {
    expect(luminance('#000')).toBe(0);
    expect(luminance('#ffffff')).toBeCloseTo(1);
    expect(luminance('transparent')).toBeNull();
    expect(luminance('#11111100')).toBeNull();
  });
});

describe('readTheme / watchTheme', () => {
  afterEach(() => {
    delete document.body.dataset.jpThemeLight;
    document.body.style.removeProperty('--jp-layout-color0');
  });
  it('reads JupyterLab variables and reports theme switches', async () => {
    document.body.dataset.jpThemeLight = 'false';
    document.body.style.setProperty('--jp-layout-color0', '#111111');
    const el = document.createElement('div');
    document.body.append(el);
    const t = readTheme(el);
    expect(t.dark).toBe(true);
    let calls = 0;
    const stop = watchTheme(el, () => calls++);
    document.body.dataset.jpThemeLight = 'true';
    await new Promise((r) => setTimeout(r, 0));
    expect(calls).toBeGreaterThan(0);
    expect(readTheme(el).dark).toBe(false);
    stop();
    el.remove();
  });
});
