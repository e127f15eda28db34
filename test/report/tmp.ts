/** Real temp directories for the report tests; kept when a test fails, for the evidence. */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

export function useTempDirs(): () => Promise<string> {
  const dirs: string[] = [];
  afterEach(async (ctx) => {
    const keep = ctx.task.result?.state === 'fail';
    for (const dir of dirs.splice(0)) {
      if (keep) console.error(`kept temp dir of failed test: ${dir}`);
      else await rm(dir, { recursive: true, force: true });
    }
  });
  return async () => {
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-report-'));
    dirs.push(dir);
    return dir;
  };
}

export async function listDir(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}
