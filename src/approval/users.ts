/**
 * Who a uid is, and which groups a user is in: the one place payoutd maps a
 * file owner or a process to a user name (the uploader of a batch, the
 * approver of an approval file or command). Reads /etc/passwd and /etc/group,
 * then asks `getent` for what they lack (users from LDAP or sssd).
 */
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface UserDirectory {
  /** The user name of a uid, or null when the system knows none. */
  nameOfUid(uid: number): Promise<string | null>;
  /** The uid of a user name, or null. */
  uidOfName(name: string): Promise<number | null>;
  /** Every group the user is in (its primary group too). */
  groupsOf(name: string): Promise<string[]>;
}

interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
}

interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

function parsePasswd(text: string): PasswdEntry[] {
  return text
    .split('\n')
    .map((line) => line.split(':'))
    .filter((f) => f.length >= 4 && f[0] !== '' && !(f[0] as string).startsWith('#'))
    .map((f) => ({ name: f[0] as string, uid: Number(f[2]), gid: Number(f[3]) }))
    .filter((e) => Number.isInteger(e.uid) && Number.isInteger(e.gid));
}

function parseGroup(text: string): GroupEntry[] {
  return text
    .split('\n')
    .map((line) => line.split(':'))
    .filter((f) => f.length >= 4 && f[0] !== '' && !(f[0] as string).startsWith('#'))
    .map((f) => ({
      name: f[0] as string,
      gid: Number(f[2]),
      members: (f[3] ?? '').split(',').filter((m) => m !== ''),
    }))
    .filter((e) => Number.isInteger(e.gid));
}

/** A file read again only when its mtime changed (an admin adding a user takes effect at once). */
class CachedFile<T> {
  private mtimeMs = -1;
  private value: T;

  constructor(
    private readonly path: string,
    private readonly parse: (text: string) => T,
    empty: T,
  ) {
    this.value = empty;
  }

  async get(): Promise<T> {
    try {
      const st = await stat(this.path);
      if (st.mtimeMs !== this.mtimeMs) {
        this.value = this.parse(await readFile(this.path, 'utf8'));
        this.mtimeMs = st.mtimeMs;
      }
    } catch {
      // No such file (a minimal container): getent alone answers.
    }
    return this.value;
  }
}

async function getent(args: string[]): Promise<string | null> {
  try {
    const { stdout } = await run('getent', args, { timeout: 5000 });
    return stdout;
  } catch {
    return null; // not found (exit 2), or no getent on this system
  }
}

/** The system's users: /etc/passwd and /etc/group, then getent for names the files lack. */
export class SystemUsers implements UserDirectory {
  private readonly passwd = new CachedFile('/etc/passwd', parsePasswd, []);
  private readonly group = new CachedFile('/etc/group', parseGroup, []);

  private async entryOf(match: (e: PasswdEntry) => boolean, key: string): Promise<PasswdEntry | null> {
    const local = (await this.passwd.get()).find(match);
    if (local) return local;
    const out = await getent(['passwd', key]);
    return out === null ? null : (parsePasswd(out)[0] ?? null);
  }

  async nameOfUid(uid: number): Promise<string | null> {
    return (await this.entryOf((e) => e.uid === uid, String(uid)))?.name ?? null;
  }

  async uidOfName(name: string): Promise<number | null> {
    return (await this.entryOf((e) => e.name === name, name))?.uid ?? null;
  }

  async groupsOf(name: string): Promise<string[]> {
    const user = await this.entryOf((e) => e.name === name, name);
    const groups = await this.group.get();
    const names = new Set(groups.filter((g) => g.members.includes(name) || (user !== null && g.gid === user.gid)).map((g) => g.name));
    if (user !== null && !groups.some((g) => g.gid === user.gid)) {
      const out = await getent(['group', String(user.gid)]);
      const primary = out === null ? undefined : parseGroup(out)[0];
      if (primary) names.add(primary.name);
    }
    return [...names];
  }
}
