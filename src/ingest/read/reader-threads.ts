/**
 * The reader threads a daemon keeps between files. Starting a thread costs
 * its isolate, the worker module's imports and the compilation of the
 * reading code (a reader's first thousand rows waited 170-250 ms on a 2-core
 * machine), and a thread that read one file reads the next with its code
 * already compiled. So a daemon starts its readers once and lends them to
 * each read in parts; a read that fails or is stopped ends the threads it
 * held instead of handing them back, and the next read starts new ones.
 * Without a ReaderThreads (tests, one-off reads) a read starts its own and
 * ends them (`new ReaderThreads(0)` keeps none).
 */
import { Worker } from 'node:worker_threads';

/**
 * A reader's heap. It holds a chunk or two of rows at a time, but V8 sizes a
 * thread's heap for the machine (young generation up to 48 MB, and an old
 * generation it lets grow lazily): two readers added ~100 MB of resident
 * memory to a million-row read. With these limits they add ~35 MB. The young
 * generation is where a reader's garbage dies: at 4 MB it was collected so
 * often that a million-row read took 10% more CPU (alternating runs: 46-54k
 * rows/s at 4 MB, 52-62k at 8 MB, for 199 against 210 MB of peak RSS; 16 MB
 * gained nothing more and took 226-240 MB). A reader that would need more
 * fails, and the file is read again in one thread.
 */
const READER_LIMITS = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 128 };

/**
 * The reader thread's module: beside this one in the build. When this module runs from the TypeScript
 * sources (the tests), the build's copy, since a worker thread loads only JavaScript (`npm test` builds
 * first).
 */
const READ_WORKER = import.meta.url.endsWith('.ts')
  ? new URL(import.meta.url.replace(/\/src\/ingest\/read\/reader-threads\.ts$/, '/dist/ingest/read/worker.js'))
  : new URL('./worker.js', import.meta.url);

export class ReaderThreads {
  private readonly idle: Worker[] = [];
  private closed = false;

  /** `kept`: threads kept idle between reads (the reader threads of `batch.read`). */
  constructor(private readonly kept: number) {}

  /** Starts the threads to keep now (a daemon at its start), so the first large file does not wait for them. */
  prestart(): void {
    while (!this.closed && this.idle.length < this.kept) this.idle.push(this.start());
  }

  /** `n` threads for a read: idle ones first, new ones for the rest. */
  take(n: number): Worker[] {
    const taken: Worker[] = [];
    for (let k = 0; k < n; k++) {
      const worker = this.idle.shift() ?? this.start();
      worker.ref();
      taken.push(worker);
    }
    return taken;
  }

  /** A thread whose part was read to its summary: kept for the next read, or ended when enough are kept. */
  giveBack(worker: Worker): void {
    if (this.closed || this.idle.length >= this.kept) {
      void worker.terminate();
      return;
    }
    worker.unref();
    this.idle.push(worker);
  }

  /** A thread that failed, or whose read failed or was stopped: never lent again. */
  end(worker: Worker): void {
    void worker.terminate();
  }

  /** Thread ids of the idle threads (what the tests look at). */
  get idleThreadIds(): number[] {
    return this.idle.map((w) => w.threadId);
  }

  /** Ends the idle threads; threads lent out end with their read. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.idle.splice(0).map((w) => w.terminate()));
  }

  private start(): Worker {
    const worker = new Worker(READ_WORKER, { resourceLimits: READER_LIMITS });
    // Idle, it must not keep the process alive; lent out, the read refs it.
    worker.unref();
    // A thread that fails while idle (its module cannot load) leaves the pool; the read that takes it next
    // hears of the failure through its own listeners, and this one keeps it from being an uncaught error.
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      const at = this.idle.indexOf(worker);
      if (at >= 0) this.idle.splice(at, 1);
    });
    return worker;
  }
}
