/**
 * `payoutd user ...`: the finance console's users, managed on the server.
 * A password is read from standard input (typed without echo on a
 * terminal, twice; else the first line piped in), never from the command
 * line where other users of the machine could read it.
 */
import type { ResolvedConfig } from '../../config/index.js';
import { PayoutdError, UsageError } from '../../domain/errors.js';
import { addUser, listUsers, removeUser, setPassword, setRole, unlockUser } from '../../console/index.js';
import { print, table } from '../output.js';
// Users may be added before the daemon first ran: `user add` makes the database; the others need one there.
import { withMigratedStore as withStore, withStoreMade } from './state-database.js';

export interface UserArgs {
  action: string;
  name?: string;
  role?: string;
  proxyOnly: boolean;
  json: boolean;
}

/** One line typed without echo. */
function typedSecretly(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let text = '';
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const done = (err?: Error): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(text);
    };
    const onData = (chunk: string): void => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new PayoutdError('CANCELLED', 'cancelled: nothing changed'));
        if (ch === '\u007f' || ch === '\b') text = text.slice(0, -1);
        else text += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** The first line piped in, without its line break and otherwise as given: sign-in takes a password as typed. */
async function pipedLine(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    const line = await pipedLine();
    if (line === '') throw new UsageError('NO_PASSWORD', 'no password on standard input (pipe one line, or use --proxy-only)');
    return line;
  }
  const first = await typedSecretly('Password: ');
  const again = await typedSecretly('Password again: ');
  if (first !== again) throw new UsageError('PASSWORD_MISMATCH', 'the two passwords differ; nothing changed');
  return first;
}

function nameOf(a: UserArgs): string {
  if (!a.name) throw new UsageError('NO_USER_NAME', `payoutd user ${a.action} needs a user name`);
  return a.name;
}

export async function manageUsers(config: ResolvedConfig, a: UserArgs): Promise<void> {
  const now = Date.now();
  switch (a.action) {
    case 'add': {
      const name = nameOf(a);
      if (!a.role) throw new UsageError('NO_ROLE', 'payoutd user add needs --role viewer|uploader|approver|admin');
      const password = a.proxyOnly ? null : await readPassword();
      await withStoreMade(
        config,
        (db) => addUser(db, name, a.role as string, password, now),
        (where) => print(`state database made at ${where}`),
      );
      print(`user ${name} added as ${a.role}${a.proxyOnly ? ' (signs in through the reverse proxy only)' : ''}`);
      return;
    }
    case 'passwd': {
      const name = nameOf(a);
      const password = a.proxyOnly ? null : await readPassword();
      await withStore(config, (db) => setPassword(db, name, password, now));
      print(`user ${name}: password ${password === null ? 'removed (reverse proxy only)' : 'changed'}; their sessions ended`);
      return;
    }
    case 'role': {
      const name = nameOf(a);
      if (!a.role) throw new UsageError('NO_ROLE', 'payoutd user role needs --role viewer|uploader|approver|admin');
      await withStore(config, (db) => setRole(db, name, a.role as string, now));
      print(`user ${name} is now ${a.role}; their sessions ended`);
      return;
    }
    case 'unlock': {
      const name = nameOf(a);
      await withStore(config, (db) => unlockUser(db, name));
      print(`user ${name} unlocked from every address`);
      return;
    }
    case 'remove': {
      const name = nameOf(a);
      await withStore(config, (db) => removeUser(db, name));
      print(`user ${name} removed; their sessions ended`);
      return;
    }
    case 'list': {
      const users = await withStore(config, (db) => listUsers(db, now));
      if (a.json) {
        print(JSON.stringify(users, null, 2));
        return;
      }
      print(
        table(
          ['name', 'role', 'signs in with', 'locked until'],
          users.map((u) => [
            u.name,
            u.role,
            u.hasPassword ? 'password' : 'proxy only',
            u.lockedUntil === null ? '' : `${new Date(u.lockedUntil).toISOString()} from ${u.lockedFrom.join(', ')}`,
          ]),
        ),
      );
      return;
    }
    default:
      throw new UsageError('BAD_USER_ACTION', `payoutd user ${a.action}: choose add, passwd, role, unlock, remove or list`);
  }
}
