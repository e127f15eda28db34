// The command-line flags of the bench scripts: node's parseArgs, with a word
// and the usage on a flag it does not know and exit 2, and --help printing
// the usage and exiting 0, the same for every script.
import { parseArgs } from 'node:util';

/** The parsed flag values; `options` as parseArgs takes them, `--help` is added. */
export function parseFlags(options, usage) {
  let values;
  try {
    values = parseArgs({ options: { ...options, help: { type: 'boolean' } } }).values;
  } catch (err) {
    console.error(`${err.message}\n${usage}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  return values;
}
