/** What a CLI command prints (its `print` lines go to stdout), caught while `f` runs. */
import { vi } from 'vitest';

export async function printed(f: () => Promise<unknown>): Promise<string> {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await f();
  } finally {
    spy.mockRestore();
  }
  return out;
}
