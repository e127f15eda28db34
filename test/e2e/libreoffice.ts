/** LibreOffice headless for the e2e tests that open files as a clerk would (skipped, saying why, where it is absent). */
import { execFile, spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** LibreOffice's command, if installed. */
export const SOFFICE = spawnSync('soffice', ['--version'], { stdio: 'ignore', timeout: 60_000 }).status === 0 ? 'soffice' : null;
export const SOFFICE_SKIP_REASON = 'soffice (LibreOffice) not found: install libreoffice-calc-nogui to run this test';

/**
 * The Text CSV import options of LibreOffice's import dialog as it opens: comma, `"`, UTF-8, from
 * line 1, standard columns, quoted fields not forced to text, and "Evaluate formulas" on.
 */
export const CSV_IMPORT = 'CSV:44,34,76,1,,0,false,false,false,false,false,false,true';

/** Converts `files` to `to` (`xlsx`, or `csv:<filter>:<options>`) into `outDir`, with its own profile so parallel runs do not collide. */
export async function convertWithLibreOffice(
  files: string[],
  to: string,
  outDir: string,
  profileDir: string,
  infilter?: string,
): Promise<void> {
  await run(
    SOFFICE as string,
    [
      `-env:UserInstallation=${pathToFileURL(profileDir).href}`,
      '--headless',
      '--norestore',
      ...(infilter ? [`--infilter=${infilter}`] : []),
      '--convert-to',
      to,
      '--outdir',
      outDir,
      ...files,
    ],
    { timeout: 180_000, maxBuffer: 16 * 1024 * 1024 },
  );
}
