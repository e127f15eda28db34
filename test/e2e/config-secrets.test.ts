/**
 * E2E: secrets around the configuration, met by the real CLI and daemon against the sandbox. Nothing of a secret
 * reaches stdout or stderr (the journal under systemd): an inline api.apiKey YAML misreads (`*…` an alias, `!…` a
 * tag) is one line naming the file, line, column and option, at start and on SIGHUP, and the YAML library prints
 * nothing of its own; an api.apiKeyFile group or others can read is refused as the private key is, naming the
 * chmod; an api.baseUrl from PAYOUTD_API_BASE_URL that is no URL names the variable, not the text.
 * The loadConfig side of each: test/unit/config-secrets.test.ts.
 */
import { execFile } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { BIN, childEnv, startE2e, type E2e } from './harness.js';

const run = promisify(execFile);

const SECRET = 'Zq9SECRETkey123';

/** What the refusal says of each misread first character. */
const SAID: Record<string, string> = {
  '*': 'a value starts with "*", which YAML takes for a reference to an anchor (&name) set before it, and none is; put the value in quotes',
  '!': 'a value starts with "!", which YAML takes for a type tag it does not know; put the value in quotes (YAML TAG_RESOLVE_FAILED)',
};

/** Writes the world's config with its api.apiKey line replaced by `line`, as is (a YAML writer would quote it); its line number. */
async function withApiKeyLine(e2e: E2e, line: string): Promise<number> {
  const lines = (await readFile(e2e.configPath, 'utf8')).split('\n');
  const at = lines.findIndex((l) => l.startsWith('  apiKey: '));
  lines[at] = `  ${line}`;
  await writeFile(e2e.configPath, lines.join('\n'), { mode: 0o600 });
  return at + 1;
}

async function apiKeyOf(e2e: E2e): Promise<string> {
  return (parseYaml(await readFile(e2e.configPath, 'utf8')) as { api: { apiKey: string } }).api.apiKey;
}

/** `payoutd <args> --config` with `env` over the child environment; never rejects on the exit code. */
async function cli(e2e: E2e, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args, '--config', e2e.configPath], {
      cwd: e2e.dir,
      env: { ...childEnv(), ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('e2e: secrets around the configuration', () => {
  it.each(['*', '!'])('`payoutd balance` with `apiKey: %sZq9…`: one line by place, nothing of the secret; exit 78', async (first) => {
    const e2e = await startE2e();
    const line = await withApiKeyLine(e2e, `apiKey: ${first}${SECRET}`);
    const r = await e2e.cli(['balance']);
    expect(r).toEqual({
      code: 78,
      stdout: '',
      stderr: `payoutd: CONFIG_SYNTAX: config file ${e2e.configPath} is not valid YAML at line ${line}, column 11 (api.apiKey): ${SAID[first]}\n`,
    });
  });

  it('SIGHUP with an inline secret YAML misreads: refused by place, the daemon runs on, nothing of the line logged', async () => {
    const e2e = await startE2e();
    const daemon = await e2e.startDaemon();
    const good = await readFile(e2e.configPath, 'utf8');
    for (const first of ['!', '*']) {
      const line = await withApiKeyLine(e2e, `apiKey: ${first}${SECRET}`);
      const before = daemon.logs.length;
      process.kill(daemon.pid as number, 'SIGHUP');
      const refused = await daemon.waitForLog(
        (l) => daemon.logs.indexOf(l) >= before && String(l.msg).startsWith('SIGHUP: configuration not reloaded'),
        5000,
      );
      expect(refused.level).toBe('error');
      expect(refused.msg).toBe(
        `SIGHUP: configuration not reloaded, the running one stays: config file ${e2e.configPath} is not valid YAML at line ${line}, column 11 (api.apiKey): ${SAID[first]}`,
      );
      await writeFile(e2e.configPath, good);
    }
    expect(daemon.exited).toBeNull();
    expect(await daemon.stop()).toBe(0);
    // The last lines of its pipes arrive after the exit event.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(daemon.stderr).toEqual([]);
    expect(daemon.transcript()).not.toContain(SECRET);
  });

  it('an api.apiKeyFile group or others can read: `payoutd balance` refuses it naming the chmod; at 0600 it is read', async () => {
    const e2e = await startE2e();
    const apiKey = await apiKeyOf(e2e);
    const keyFile = join(e2e.dir, 'api-key');
    await writeFile(keyFile, `${apiKey}\n`);
    await chmod(keyFile, 0o644);
    await withApiKeyLine(e2e, `apiKeyFile: ${keyFile}`);
    const refused = await e2e.cli(['balance', '--json']);
    expect(refused).toEqual({
      code: 78,
      stdout: '',
      stderr: `payoutd: SECRET_PERMISSIONS: api.apiKeyFile ${keyFile} has mode 0644; it must not be readable by group or others (chmod 600 ${keyFile})\n`,
    });
    await chmod(keyFile, 0o600);
    const read = await e2e.cli(['balance', '--json']);
    expect(read.stderr).toBe('');
    expect(read.code).toBe(0);
    const { balances } = JSON.parse(read.stdout) as { balances: { currency: string; available: string }[] };
    expect(balances.map((b) => b.currency).sort()).toEqual(['USDC', 'USDT']);
    expect(`${read.stdout}${refused.stderr}`).not.toContain(apiKey);
  });

  it('PAYOUTD_API_BASE_URL that is no URL: named by the variable, its text not shown; exit 78', async () => {
    const e2e = await startE2e();
    const r = await cli(e2e, ['balance'], { PAYOUTD_API_BASE_URL: 'sk_live_NOTAURL' });
    expect(r).toEqual({
      code: 78,
      stdout: '',
      stderr:
        'payoutd: CONFIG_INVALID: PAYOUTD_API_BASE_URL: api.baseUrl: must be an http:// or https:// URL, or "embedded" (what it holds is not shown: it may be a secret written in the wrong place)\n',
    });
  });
});
