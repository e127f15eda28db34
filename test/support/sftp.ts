/**
 * A private OpenSSH server on 127.0.0.1 for tests that need a real SFTP
 * upload: its own sshd on a free port with throwaway host and client keys in
 * a temp folder, and `sftp -b` uploads limited to a bandwidth (the file
 * grows in bursts under its final name, as a finance user's upload does),
 * optionally stalled: the client stopped with SIGSTOP for a while and then
 * continued, like a laptop that sleeps mid-upload.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const SSHD = '/usr/sbin/sshd';
const SFTP = '/usr/bin/sftp';
const SSH_KEYGEN = '/usr/bin/ssh-keygen';

/** Why the real-SFTP tests cannot run here, or null when they can. */
export function sftpSkipReason(): string | null {
  if (!existsSync(SSHD)) return `no ${SSHD} (apt-get install -y openssh-server)`;
  if (!existsSync(SFTP) || !existsSync(SSH_KEYGEN)) return `no ${SFTP} or ${SSH_KEYGEN} (openssh-client)`;
  // sshd needs its privilege separation folder, which only root can create.
  if (process.getuid?.() !== 0) return 'a private sshd needs root here';
  return null;
}

export interface SftpUpload {
  /** The local file to send. */
  source: string;
  /** The folder it is written into, under `remoteName`. */
  targetDir: string;
  remoteName: string;
  /** `sftp -l`: the bandwidth limit, kbit/s. */
  rateKbit: number;
  /** `sftp -B`: bytes per write request; each burst is a multiple of it. Default: sftp's own (the server's largest write). */
  bufferBytes?: number;
  /**
   * Stop the client `afterMs` into the upload and let it finish after `forMs`; or stop it once the file has
   * `atBytes` and let it finish when `until` settles (a test whose premise is a state the daemon reaches
   * during the stall waits for that state, not for a time, so a slow machine cannot void the premise).
   */
  stall?: { afterMs: number; forMs: number } | { atBytes: number; until: Promise<unknown> };
  /** Kill the client after this long (ms). Default 120000. */
  timeoutMs?: number;
  /** Log in as this user (one of `sftpOnlyUsers` given to start); default: the user running the test. */
  user?: string;
}

export interface SftpServerOptions {
  /** Users who may log in for SFTP only (ForceCommand internal-sftp), as finance users do; the uploads' owner is theirs. */
  sftpOnlyUsers?: string[];
}

export interface UploadOutcome {
  /** The size of the file when the client was stopped (with `stall`). */
  stalledAtBytes?: number;
}

export class SftpServer {
  private constructor(
    private readonly dir: string,
    private readonly port: number,
    private readonly sshd: ChildProcess,
    private readonly stderr: () => string,
  ) {}

  /** Keys, config and a listening sshd; close() when done. */
  static async start(o: SftpServerOptions = {}): Promise<SftpServer> {
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-sshd-'));
    try {
      for (const key of ['host', 'client']) {
        await promisify(execFile)(SSH_KEYGEN, ['-q', '-t', 'ed25519', '-N', '', '-C', `payoutd-test-${key}`, '-f', join(dir, key)]);
      }
      await copyFile(join(dir, 'client.pub'), join(dir, 'authorized_keys'));
      await chmod(join(dir, 'authorized_keys'), 0o600);
      // sshd reads the keys file as the user logging in: other users need to reach it.
      if (o.sftpOnlyUsers?.length) {
        await chmod(dir, 0o755);
        await chmod(join(dir, 'authorized_keys'), 0o644);
      }
      await mkdir('/run/sshd', { recursive: true, mode: 0o755 });
      const port = await freePort();
      const config = [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${join(dir, 'host')}`,
        `PidFile ${join(dir, 'sshd.pid')}`,
        `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitRootLogin prohibit-password',
        'StrictModes no',
        'UsePAM no',
        'Subsystem sftp internal-sftp',
        // Last: a Match block holds every line after it.
        ...(o.sftpOnlyUsers?.length ? [`Match User ${o.sftpOnlyUsers.join(',')}`, '  ForceCommand internal-sftp'] : []),
      ].join('\n');
      await writeFile(join(dir, 'sshd_config'), `${config}\n`);
      // -D: stays in the foreground, so this process owns it; -e: errors on stderr.
      const sshd = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      sshd.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const server = new SftpServer(dir, port, sshd, () => stderr);
      await server.ready();
      return server;
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Uploads one file; resolves when sftp exits 0, rejects with its stderr otherwise. */
  async upload(u: SftpUpload): Promise<UploadOutcome> {
    const target = join(u.targetDir, u.remoteName);
    for (const path of [u.source, target]) {
      if (/["\\\n]/.test(path)) throw new Error(`the sftp harness does not quote ${JSON.stringify(path)}`);
    }
    const batch = join(this.dir, `batch-${process.hrtime.bigint()}`);
    await writeFile(batch, `put "${u.source}" "${target}"\n`);
    const args = ['-q', '-b', batch, '-l', String(u.rateKbit), '-P', String(this.port), '-i', join(this.dir, 'client'), '-F', '/dev/null'];
    if (u.bufferBytes !== undefined) args.push('-B', String(u.bufferBytes));
    args.push(
      '-o',
      'BatchMode=yes',
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'LogLevel=ERROR',
      `${u.user ?? userInfo().username}@127.0.0.1`,
    );
    const client = spawn(SFTP, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    client.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve, reject) => {
      client.once('error', reject);
      client.once('exit', (code) => resolve(code));
    });
    const timers: NodeJS.Timeout[] = [];
    const outcome: UploadOutcome = {};
    const timeout = setTimeout(() => client.kill('SIGKILL'), u.timeoutMs ?? 120_000);
    if (u.stall !== undefined) {
      const stall = u.stall;
      const resume = (): void => {
        if (client.pid !== undefined && client.exitCode === null) process.kill(client.pid, 'SIGCONT');
      };
      const sizeNow = (): number => statSync(target, { throwIfNoEntry: false })?.size ?? 0;
      const stop = (): void => {
        if (client.exitCode !== null || client.pid === undefined) return;
        process.kill(client.pid, 'SIGSTOP');
        outcome.stalledAtBytes = sizeNow();
        if ('until' in stall) void stall.until.finally(resume);
        else timers.push(setTimeout(resume, stall.forMs));
      };
      if ('atBytes' in stall) {
        const watch = setInterval(() => {
          if (sizeNow() < stall.atBytes) return;
          clearInterval(watch);
          stop();
        }, 10);
        timers.push(watch);
      } else timers.push(setTimeout(stop, stall.afterMs));
    }
    try {
      const code = await exited;
      if (code !== 0) throw new Error(`sftp exited with ${String(code)}: ${stderr.trim()} (sshd: ${this.stderr().trim()})`);
      return outcome;
    } finally {
      clearTimeout(timeout);
      for (const t of timers) clearTimeout(t);
      await rm(batch, { force: true });
    }
  }

  /** Stops sshd and removes its keys and config. */
  async close(): Promise<void> {
    if (this.sshd.exitCode === null && this.sshd.signalCode === null) {
      const exited = new Promise((resolve) => this.sshd.once('exit', resolve));
      this.sshd.kill('SIGTERM');
      await exited;
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  /** Waits until sshd answers with its banner (or fails when it exits first). */
  private async ready(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (this.sshd.exitCode !== null) throw new Error(`sshd exited with ${this.sshd.exitCode}: ${this.stderr().trim()}`);
      if (await answers(this.port)) return;
      if (Date.now() > deadline) {
        await this.close();
        throw new Error(`sshd did not answer on 127.0.0.1:${this.port}: ${this.stderr().trim()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** A port free on 127.0.0.1 a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** An SSH server's banner arrives on the port. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('data', (data: Buffer) => done(data.toString('latin1').startsWith('SSH-')));
  });
}
