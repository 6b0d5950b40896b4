import { defineConfig } from 'vitest/config';

// jsdom by default: the widget's tests render into a DOM with a fake anywidget model.
export default defineConfig({
  test: {
    include: ['tests/**/*.test.js'],
    environment: 'jsdom',
    setupFiles: ['tests/setup.js'],
  },
});
