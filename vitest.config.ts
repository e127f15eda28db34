import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // End-to-end tests start real processes and servers; two cores here.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
