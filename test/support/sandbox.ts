// The sandbox's admin API (/__sandbox/...) as the tests call it.
export type SandboxAdmin = (method: 'GET' | 'POST', path: string, body?: unknown) => Promise<any>;

export function sandboxAdmin(sandbox: { url: string; adminToken: string }): SandboxAdmin {
  return async (method, path, body) => {
    const res = await fetch(`${sandbox.url}/__sandbox/${path}`, {
      method, headers: { Authorization: `Bearer ${sandbox.adminToken}`, 'Content-Type': 'application/json' },
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
export const PROFILES = ['spec', 'documented'] as const;
export type Profile = (typeof PROFILES)[number];

export function sandboxProfile(profile: Profile | undefined): Record<string, unknown> {
  // Until the sandbox has its `profile` option, `events` is the nearest stand-in.
  return profile ? { events: profile === 'spec' ? 'spec' : 'extended' } : {};
}
