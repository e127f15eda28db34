/**
 * LedgerFile: keeps a sandbox's ledger in a JSON file, so the embedded
 * sandbox of `payoutd run` remembers the payouts it created when the daemon
 * restarts (a real service would; a forgetful sandbox would leave the
 * daemon polling payouts that no longer exist). Writes are coalesced and
 * atomic (temp file + rename); close() writes the last state.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Ledger, LedgerSnapshot, StoredPayout } from './ledger.js';
import type { SandboxLogger } from './logger.js';

const FLUSH_MS = 100;

export class LedgerFile {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly path: string,
    private readonly ledger: Ledger,
    private readonly logger: SandboxLogger,
  ) {}

  /** Restores the saved state (if any) and starts saving changes. */
  load(): StoredPayout[] {
    let restored: StoredPayout[] = [];
    if (existsSync(this.path)) {
      restored = this.ledger.restore(JSON.parse(readFileSync(this.path, 'utf8')) as LedgerSnapshot);
      this.logger.info({ payouts: restored.length }, 'sandbox ledger restored');
    }
    this.ledger.onChange = () => this.schedule();
    return restored;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.write();
    }, FLUSH_MS);
    this.timer.unref();
  }

  private write(): void {
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.ledger.snapshot()));
    renameSync(tmp, this.path);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.ledger.onChange = null;
    this.write();
  }
}
