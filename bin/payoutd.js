#!/usr/bin/env node
// Entry point of the `payoutd` command. The TypeScript sources are compiled to
// dist/ by `npm ci` (the `prepare` script); say so plainly if that never ran.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(main)) {
  process.stderr.write('payoutd: dist/ is missing; run `npm ci` (or `npm run build`) in the checkout first\n');
  process.exit(2);
}
const { runCli } = await import(main);
await runCli(process.argv.slice(2));
