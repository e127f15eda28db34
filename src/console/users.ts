/**
 * Managing console users (`payoutd user ...`): names, roles, passwords.
 * A user without a password signs in only through the reverse proxy's
 * user header. Changing a password or a role ends the user's sessions.
 */
import {
  clearSignInFailures,
  deleteConsoleSessions,
  deleteConsoleUser,
  getConsoleUser,
  insertConsoleUser,
  listConsoleUsers,
  signInLocks,
  updateConsoleUser,
  type Database,
} from '../store/index.js';
import { ConsoleError } from './errors.js';
import { hashPassword } from './passwords.js';
import { isRole, ROLES, type Role } from './roles.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

export function checkUserName(name: string): void {
  if (!NAME.test(name)) {
    throw new ConsoleError(
      'BAD_USER_NAME',
      `user name ${JSON.stringify(name)}: use 1-64 letters, digits and . _ @ - (starting with a letter or digit)`,
    );
  }
}

export function checkRole(role: string): Role {
  if (!isRole(role)) throw new ConsoleError('BAD_ROLE', `role ${JSON.stringify(role)}: choose one of ${ROLES.join(', ')}`);
  return role;
}

export interface ConsoleUser {
  name: string;
  role: Role;
  hasPassword: boolean;
  /** The end of the latest lock-out in force, from any address; null when there is none. */
  lockedUntil: number | null;
  /** The client addresses the user is locked out from. */
  lockedFrom: string[];
}

export async function addUser(db: Database, name: string, role: string, password: string | null, now: number): Promise<void> {
  checkUserName(name);
  const r = checkRole(role);
  if (await getConsoleUser(db, name)) throw new ConsoleError('USER_EXISTS', `user ${name} exists already`);
  const passwordHash = password === null ? null : await hashPassword(password);
  await insertConsoleUser(db, { name, role: r, passwordHash, createdAt: now, updatedAt: now });
  // Failures at the name while it was unknown are not the new user's.
  await clearSignInFailures(db, name);
}

async function mustExist(db: Database, name: string): Promise<void> {
  if (!(await getConsoleUser(db, name))) throw new ConsoleError('NO_SUCH_USER', `no user ${name} (payoutd user list shows them)`);
}

export async function setPassword(db: Database, name: string, password: string | null, now: number): Promise<void> {
  await mustExist(db, name);
  const passwordHash = password === null ? null : await hashPassword(password);
  await updateConsoleUser(db, name, { passwordHash }, now);
  await clearSignInFailures(db, name);
  await deleteConsoleSessions(db, { userName: name });
}

export async function setRole(db: Database, name: string, role: string, now: number): Promise<void> {
  await mustExist(db, name);
  await updateConsoleUser(db, name, { role: checkRole(role) }, now);
  await deleteConsoleSessions(db, { userName: name });
}

/** Lifts the user's lock-outs from every address. */
export async function unlockUser(db: Database, name: string): Promise<void> {
  await mustExist(db, name);
  await clearSignInFailures(db, name);
}

export async function removeUser(db: Database, name: string): Promise<void> {
  await clearSignInFailures(db, name);
  if (!(await deleteConsoleUser(db, name))) throw new ConsoleError('NO_SUCH_USER', `no user ${name} (payoutd user list shows them)`);
}

export async function listUsers(db: Database, now: number): Promise<ConsoleUser[]> {
  const out: ConsoleUser[] = [];
  for (const u of await listConsoleUsers(db)) {
    const locks = await signInLocks(db, u.name, now);
    out.push({
      name: u.name,
      role: checkRole(u.role),
      hasPassword: u.passwordHash !== null,
      lockedUntil: locks.length === 0 ? null : Math.max(...locks.map((l) => l.lockedUntil)),
      lockedFrom: locks.map((l) => l.address),
    });
  }
  return out;
}
