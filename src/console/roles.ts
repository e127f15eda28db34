/**
 * Who may do what in the console. Each route names the permission it needs
 * and the server checks it on every request (the page hiding a button is a
 * courtesy, not the check). Downloads are not a viewer's: result files hold
 * full account numbers.
 */
export const ROLES = ['viewer', 'uploader', 'approver', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export type Permission = 'view' | 'download' | 'upload' | 'approve' | 'manage-users';

const GRANTS: Readonly<Record<Role, readonly Permission[]>> = {
  viewer: ['view'],
  uploader: ['view', 'download', 'upload'],
  approver: ['view', 'download', 'approve'],
  admin: ['view', 'download', 'upload', 'approve', 'manage-users'],
};

export function isRole(text: string): text is Role {
  return (ROLES as readonly string[]).includes(text);
}

export function may(role: Role, permission: Permission): boolean {
  return GRANTS[role].includes(permission);
}
