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

/** The merchant's people at the service: its API with the account's token (a fulfilment, a void, a return). */
export type MerchantApi = (method: string, path: string, body?: unknown) => Promise<any>;

export function merchantApi(sandbox: { url: string; token: string }): MerchantApi {
  return async (method, path, body) => {
    const res = await fetch(`${sandbox.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${sandbox.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
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
