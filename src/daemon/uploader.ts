/**
 * The uploader recorded with a taken file's batch, which approval may not be given by: the file's owner, the
 * signed-in user of a console upload, or nobody for a file others could write.
 */
import { lstat } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { type Database, consoleUploaderOf } from '../store/index.js';
import type { ClaimedFile } from '../ingest/index.js';
import { othersMayWrite, PRIVATE_FILE_HOWTO, type SystemUsers } from '../approval/index.js';

export function uploaderLookup(
  db: Database,
  clock: Clock,
  logger: Logger,
  users: SystemUsers,
): (claimed: ClaimedFile) => Promise<{ uid: number | null; name: string | null }> {
  return async (claimed) => {
    const st = await lstat(claimed.storedPath, { bigint: true });
    // A file others could write (a second hard link, group or others' write access) may hold bytes its
    // owner never wrote. Recorded as the owner's, it would stop only the owner from approving, while another
    // user who rewrote it could approve his own bytes; with no uploader every approval of it is refused.
    // As the claim's handle saw it (a link taken away since leaves the bytes read then unproven), and as now.
    const why = (claimed.seen && othersMayWrite(claimed.seen)) ?? othersMayWrite(st);
    if (why !== null) {
      logger.warn(
        { file: claimed.originalName, uid: Number(st.uid) },
        `${claimed.originalName} ${why} when it was taken, so its owner need not be who wrote it: no uploader is ` +
          `recorded, and a batch of it that needs approval cannot be approved. To have it approved, reject it ` +
          `and send the rows again in a new file (the same bytes again are a duplicate) ${PRIVATE_FILE_HOWTO}`,
      );
      return { uid: null, name: null };
    }
    const uid = Number(st.uid);
    // A console upload's owner is payoutd itself: its uploader is the signed-in user recorded with this file's
    // inode, name and bytes. A file another user owns is theirs, whatever the console recorded.
    if (uid === process.getuid?.()) {
      const viaConsole = await consoleUploaderOf(db, {
        fileName: claimed.originalName,
        sha256: claimed.sha256,
        inode: st.ino.toString(),
        receivedAt: clock.now(),
      });
      // None recorded: no person is known to have uploaded it, and payoutd's account stands for none (its
      // approval is refused, src/approval/decide.ts), so a console user cannot approve her own upload.
      return { uid: null, name: viaConsole ?? null };
    }
    return { uid, name: await users.nameOfUid(uid) };
  };
}
