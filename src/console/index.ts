/**
 * The finance console (docs/console.md), served by `payoutd run` when console.enabled: server.ts routes and
 * checks every request, access.ts says who asks, pages.ts renders, views.ts gathers, upload.ts feeds the inbox,
 * files.ts serves outbox files, users.ts manages users for `payoutd user`.
 */
export { ConsoleServer } from './server.js';
export { noApprovals } from './approvals.js';
export { approvalsThrough } from './approval-port.js';
export { type Role } from './roles.js';
export { addUser, setPassword, setRole, unlockUser, removeUser, listUsers } from './users.js';
export { hashPassword, verifyPassword } from './passwords.js';
