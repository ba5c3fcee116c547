// The sandbox's admin API (/__sandbox/...) as the tests call it, and the profiles end-to-end suites loop over.
import { LIST_ORDERS, PROFILES, type ListOrder, type Profile, type SandboxOptions } from '@commerce-sync/sandbox';
export type SandboxAdmin = (method: 'GET' | 'POST', path: string, body?: unknown) => Promise<any>;

export function sandboxAdmin(sandbox: { url: string; adminToken: string }): SandboxAdmin {
  return async (method, path, body) => {
    const res = await fetch(`${sandbox.url}/__sandbox/${path}`, {
      method,
      headers: { Authorization: `Bearer ${sandbox.adminToken}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`sandbox admin ${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
}

/**
 * The two behaviours the client must work with (docs/sync.md): the spec's, and the service's as documented.
 * End-to-end suites loop over these; `sandboxProfile` gives the sandbox options of each.
 */
export { PROFILES, type Profile };

export function sandboxProfile(profile: Profile | undefined): { profile?: Profile } {
  return profile ? { profile } : {};
}

/**
 * Each profile under each meaning of "most recent first" (by creation, by update: real-service-notes section 7
 * leaves it open): the sync suites loop over these, so every sync path is tried with a list order that moves.
 */
export const SERVICES: { name: string; profile: Profile; listOrder: ListOrder }[] = PROFILES.flatMap((profile) =>
  LIST_ORDERS.map((listOrder) => ({ name: `${profile}, lists by ${listOrder}`, profile, listOrder })),
);

export function serviceOptions(s: { profile: Profile; listOrder: ListOrder }): SandboxOptions {
  return { profile: s.profile, listOrder: s.listOrder };
}
