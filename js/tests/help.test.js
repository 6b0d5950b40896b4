// @ts-check
// The shortcut table and the help dialog rendered from it.
import { describe, expect, it, vi } from 'vitest';
import { GESTURES, SHORTCUTS, createHelp, shortcutFor } from '../src/help.js';

describe('shortcut table', () => {
  it('maps key events to shortcuts: no Alt/Ctrl/Meta; Shift only where the key is typed with it', () => {
    expect(shortcutFor({ key: 'ArrowRight' })?.action).toBe('step');
    expect(shortcutFor({ key: 'ArrowLeft' })?.action).toBe('back');
    expect(shortcutFor({ key: ' ' })?.action).toBe('play');
    expect(shortcutFor({ key: '?', shiftKey: true })?.action).toBe('help');
    expect(shortcutFor({ key: '?' })?.action).toBe('help');
    expect(shortcutFor({ key: 'ArrowRight', shiftKey: true })).toBeNull();
    expect(shortcutFor({ key: 'ArrowRight', ctrlKey: true })).toBeNull();
    expect(shortcutFor({ key: 'x' })).toBeNull();
    const keys = SHORTCUTS.flatMap((s) => s.keys);
    expect(new Set(keys).size).toBe(keys.length); // one action per key
  });

  it('the dialog lists every shortcut and gesture; the button, × and a press outside close it', () => {
    const onClose = vi.fn();
    const help = createHelp(document, { onClose });
    const outsideEl = document.createElement('div');
    document.body.append(help.button, help.el, outsideEl);
    expect(help.button.getAttribute('aria-label')).toBe('Keyboard help');
    expect(help.el.hidden).toBe(true);
    help.button.click();
    expect(help.isOpen()).toBe(true);
    expect(help.button.getAttribute('aria-expanded')).toBe('true');
    const rows = [...help.el.querySelectorAll('.agw-help-keys tr')].map((tr) => tr.textContent);
    // a shortcut without a label is listed with its pair ("+ / −" holds the zoom out key)
    expect(rows).toEqual(SHORTCUTS.filter((s) => s.label).map((s) => `${s.label}${s.text}`));
    expect(help.el.querySelectorAll('.agw-help-mouse tr')).toHaveLength(GESTURES.length);
    // a press inside the panel keeps it open; outside closes it
    help.el.querySelector('.agw-help-panel').dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));
    expect(help.isOpen()).toBe(true);
    outsideEl.dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));
    expect(help.isOpen()).toBe(false);
    expect(onClose).toHaveBeenCalledTimes(1);
    help.button.click();
    help.button.click();
    expect(help.isOpen()).toBe(false);
    help.open();
    help.el.querySelector('button[aria-label="Close help"]').click();
    expect(help.isOpen()).toBe(false);
    help.destroy();
  });
});
