/**
 * Reader threads started before the file that needs them. Starting a thread
 * costs its isolate and the worker module's imports: a read that started its
 * own readers waited 170-250 ms for their first rows on a 2-core machine,
 * with one core idle. So a daemon starts its readers while it waits for
 * files (once it runs, and again after each file), and a read in parts takes
 * them ready. Every read ends the threads it took, whether it finished or
 * not: a reader kept after its read held its heap's garbage (a million-row
 * read's peak RSS rose from 198-201 to 219-221 MB when the two were kept
 * through the acceptance), and a thread that saw a failure is never used
 * again. Without started threads a read starts its own. Two readers waiting
 * hold about 26 MB of a daemon's memory (its idle RSS 91 -> 116 MB), what
 * `batch.read.workers: 0` saves on a machine where memory counts more than
 * the speed of large files.
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

  /** `ready`: threads to have started ahead of a read (the reader threads of `batch.read`). */
  constructor(private readonly ready: number) {}

  /** Starts threads until `ready` wait for a read (a daemon once it runs, and after each file). */
  prestart(): void {
    while (!this.closed && this.idle.length < this.ready) this.idle.push(this.start());
  }

  /** `n` threads for a read: started ones first, new ones for the rest. The read ends each with `end`. */
  take(n: number): Worker[] {
    const taken: Worker[] = [];
    for (let k = 0; k < n; k++) {
      const worker = this.idle.shift() ?? this.start();
      worker.ref();
      taken.push(worker);
    }
    return taken;
  }

  /** A thread taken for a read, once the read is over (done, failed or stopped). */
  end(worker: Worker): void {
    void worker.terminate();
  }

  /** Thread ids of the threads waiting for a read (what the tests look at). */
  get readyThreadIds(): number[] {
    return this.idle.map((w) => w.threadId);
  }

  /** Ends the threads waiting for a read (a daemon stopping); threads taken end with their read. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.idle.splice(0).map((w) => w.terminate()));
  }

  private start(): Worker {
    const worker = new Worker(READ_WORKER, { resourceLimits: READER_LIMITS });
    // Waiting, it must not keep the process alive; taken, the read refs it.
    worker.unref();
    // A thread that fails while it waits (its module cannot load) is dropped; the read that takes it first
    // hears of the failure through its own listeners, and this one keeps it from being an uncaught error.
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      const at = this.idle.indexOf(worker);
      if (at >= 0) this.idle.splice(at, 1);
    });
    return worker;
  }
}
