/**
 * The `payoutd` command line: parses argv with yargs and hands each command
 * to its module. This is the only layer that reads process.env, argv or
 * decides exit codes.
 */
import yargs from 'yargs';

export async function runCli(argv: string[]): Promise<void> {
  await yargs(argv)
    .scriptName('payoutd')
    .usage('$0 <command> [options]')
    .demandCommand(1, 'name a command; `payoutd --help` lists them')
    .strict()
    .help()
    .parseAsync();
}
