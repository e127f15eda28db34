/**
 * A config file that sets no option (emptied, cut short before its first key, all comments) is refused as
 * CONFIG_EMPTY naming the file, never read as every default: that would be the embedded sandbox in place of
 * the real service (results saying PAID for money that never moved) and no notification channels. A SIGHUP
 * reload is this same load, so it is refused whole too (test/e2e/service-identity.test.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/domain/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'payoutd-config-empty-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function refusal(name: string, text: string): ConfigError {
  const file = join(dir, name);
  writeFileSync(file, text);
  try {
    loadConfig({ file, env: { PAYOUTD_INBOX: join(dir, 'in'), PAYOUTD_STATE_DIR: join(dir, 'state') }, cwd: dir });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`${name} loaded`);
}

describe('config: a file that sets no option', () => {
  it.each([
    ['empty.yaml', ''],
    ['blank.yaml', '\n  \n\n'],
    ['comments.yaml', '# payoutd configuration\n# api:\n#   baseUrl: https://payouts.example.com\n'],
    ['null.yaml', '~\n'],
    ['document-marker.yaml', '---\n'],
  ])('%s is refused as CONFIG_EMPTY naming the file and what the defaults would mean', (name, text) => {
    const err = refusal(name, text);
    expect(err.code).toBe('CONFIG_EMPTY');
    expect(err.message).toBe(
      `config file ${join(dir, name)} sets no option (it is empty, or holds only comments): every option would take its default, among them api.baseUrl (the embedded sandbox: no real money moves) and notify (no channels); restore the file, or start without --config and PAYOUTD_CONFIG to run on the defaults`,
    );
  });

  it('a file cut short after its first key is refused for that key, not taken as its default', () => {
    const err = refusal('cut.yaml', 'api:\n');
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.message).toBe(`${join(dir, 'cut.yaml')}: api: must be a mapping, got nothing`);
  });

  it('an explicit empty mapping asks for the defaults in so many words, and gets them', () => {
    const file = join(dir, 'defaults.yaml');
    writeFileSync(file, '{}\n');
    expect(loadConfig({ file, env: {}, cwd: dir }).api.baseUrl).toBe('embedded');
  });

  it('a list or a scalar is still refused as not a mapping', () => {
    expect(refusal('list.yaml', '- api\n').code).toBe('CONFIG_SYNTAX');
    expect(refusal('scalar.yaml', 'embedded\n').code).toBe('CONFIG_SYNTAX');
  });
});
