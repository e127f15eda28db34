/**
 * The finance console: batches, uploads, approvals and downloads in the
 * browser, served by `payoutd run` when `console.enabled` (docs/console.md).
 * server.ts routes and checks every request; access.ts says who is asking;
 * pages.ts renders; views.ts gathers what a page shows; upload.ts puts a
 * file into the inbox; files.ts serves a batch's outbox files; users.ts
 * manages users for `payoutd user`.
 */
export { ConsoleServer, type ConsoleOptions } from './server.js';
export { noApprovals, type Approvals, type ApprovalDecision, type ApprovalView } from './approvals.js';
export { ROLES, may, type Role, type Permission } from './roles.js';
export { addUser, setPassword, setRole, unlockUser, removeUser, listUsers, type ConsoleUser } from './users.js';
export { hashPassword, verifyPassword, MIN_PASSWORD_LENGTH } from './passwords.js';
export { ConsoleError } from './errors.js';
