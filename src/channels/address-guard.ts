// Where our own webhooks may go (channel destinations, CHANNEL_WEBHOOK_URL, ALERT_WEBHOOK_URL): not to this
// machine, its network or the cloud's metadata service, unless a host is allowed by name (OUTBOUND_ALLOWED_HOSTS).
// A URL is checked when it is set (its name resolved), and every connection again at connect time on the address
// actually connected to, so a name re-pointed between the check and the POST (DNS rebinding) is refused too.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * IANA's special-purpose address registries (IPv4: RFC 6890 and its updates; IPv6: the same), with multicast and
 * the reserved ranges beside them: each block and whether its addresses are globally reachable. An address is
 * judged by the longest block that holds it, so a reachable block inside a refused one (an anycast address in
 * 2001::/23) is let through. Every address no block holds is global unicast.
 */
export const SPECIAL_BLOCKS: readonly { block: string; name: string; reachable: boolean }[] = [
  { block: '0.0.0.0/8', name: '"this network"', reachable: false },
  { block: '10.0.0.0/8', name: 'private-use', reachable: false },
  { block: '100.64.0.0/10', name: 'shared address space (CGNAT)', reachable: false },
  { block: '127.0.0.0/8', name: 'loopback', reachable: false },
  { block: '169.254.0.0/16', name: 'link-local (the metadata service)', reachable: false },
  { block: '172.16.0.0/12', name: 'private-use', reachable: false },
  { block: '192.0.0.0/24', name: 'IETF protocol assignments', reachable: false },
  { block: '192.0.0.9/32', name: 'port control protocol anycast', reachable: true },
  { block: '192.0.0.10/32', name: 'traversal using relays around NAT anycast', reachable: true },
  { block: '192.0.2.0/24', name: 'documentation (TEST-NET-1)', reachable: false },
  { block: '192.88.99.0/24', name: 'deprecated 6to4 relay anycast', reachable: false },
  { block: '192.168.0.0/16', name: 'private-use', reachable: false },
  { block: '198.18.0.0/15', name: 'benchmarking', reachable: false },
  { block: '198.51.100.0/24', name: 'documentation (TEST-NET-2)', reachable: false },
  { block: '203.0.113.0/24', name: 'documentation (TEST-NET-3)', reachable: false },
  { block: '224.0.0.0/4', name: 'multicast', reachable: false },
  { block: '240.0.0.0/4', name: 'reserved (and the limited broadcast address)', reachable: false },
  // IPv6. ::/8 is reserved by the IETF whole: it holds the unspecified and loopback addresses, IPv4-compatible
  // (::/96, deprecated by RFC 4291) and IPv4-translated (::ffff:0:0:0/96) addresses. Only IPv4-mapped addresses
  // and the well-known NAT64 prefix are judged by the IPv4 address they carry (internalAddress).
  { block: '::/8', name: 'reserved by the IETF (unspecified, loopback, IPv4-compatible, IPv4-translated)', reachable: false },
  { block: '64:ff9b:1::/48', name: 'local-use IPv4/IPv6 translation', reachable: false },
  { block: '100::/64', name: 'discard-only', reachable: false },
  { block: '100:0:0:1::/64', name: 'dummy IPv6 prefix', reachable: false },
  { block: '2001::/23', name: 'IETF protocol assignments', reachable: false },
  { block: '2001::/32', name: 'Teredo', reachable: false },
  { block: '2001:1::1/128', name: 'port control protocol anycast', reachable: true },
  { block: '2001:1::2/128', name: 'traversal using relays around NAT anycast', reachable: true },
  { block: '2001:1::3/128', name: 'DNS-SD service registration protocol anycast', reachable: true },
  { block: '2001:2::/48', name: 'benchmarking', reachable: false },
  { block: '2001:3::/32', name: 'automatic multicast tunneling', reachable: true },
  { block: '2001:4:112::/48', name: 'AS112-v6', reachable: true },
  { block: '2001:10::/28', name: 'deprecated ORCHID', reachable: false },
  { block: '2001:20::/28', name: 'ORCHIDv2', reachable: true },
  { block: '2001:30::/28', name: 'drone remote ID protocol entity tags', reachable: true },
  { block: '2001:db8::/32', name: 'documentation', reachable: false },
  // 6to4 carries the POST to the IPv4 address inside it through whatever relay; deprecated (RFC 7526): refused whole.
  { block: '2002::/16', name: '6to4', reachable: false },
  { block: '3fff::/20', name: 'documentation', reachable: false },
  { block: '5f00::/16', name: 'segment routing SIDs', reachable: false },
  { block: 'fc00::/7', name: 'unique-local', reachable: false },
  { block: 'fe80::/10', name: 'link-local', reachable: false },
  { block: 'fec0::/10', name: 'deprecated site-local', reachable: false },
  { block: 'ff00::/8', name: 'multicast', reachable: false },
];

const blocks = SPECIAL_BLOCKS.map(({ block, reachable }) => {
  const [net, bits] = block.split('/') as [string, string];
  const family = isIP(net) === 4 ? ('ipv4' as const) : ('ipv6' as const);
  const list = new BlockList();
  list.addSubnet(net, Number(bits), family);
  return { list, family, bits: Number(bits), reachable };
});

/** Whether the longest special-purpose block holding this address (of its family) is not globally reachable. */
function special(ip: string, family: 'ipv4' | 'ipv6'): boolean {
  let best: (typeof blocks)[number] | undefined;
  for (const b of blocks) if (b.family === family && (!best || b.bits > best.bits) && b.list.check(ip, family)) best = b;
  return best !== undefined && !best.reachable;
}

/** The IPv4 address an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address carries. */
function embeddedIpv4(ip: string): string | null {
  const m = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(ip);
  if (!m) return null;
  if (m[1]) return m[1];
  const hi = Number.parseInt(m[2]!, 16);
  const lo = Number.parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an IP address is internal (not globally reachable, SPECIAL_BLOCKS). Anything that is not an IP address counts as internal. */
export function internalAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, '');
  const v4 = isIP(ip) === 6 ? embeddedIpv4(ip.toLowerCase()) : null;
  if (v4) return special(v4, 'ipv4');
  const family = isIP(ip);
  if (family === 4) return special(ip, 'ipv4');
  if (family === 6) return special(ip, 'ipv6');
  return true;
}

export class DestinationRefused extends Error {
  readonly code = 'EDESTINATION';
}

/**
 * Hosts allowed to be internal, as OUTBOUND_ALLOWED_HOSTS lists them, lower-case: a name or address (any port), or
 * one with its port (`127.0.0.1:4010`, `[::1]:4010`: that port only, as the demo allows its own channel endpoint).
 */
export type AllowedHosts = readonly string[];

export const parseAllowedHosts = (setting: string): AllowedHosts =>
  setting
    .split(/[\s,]+/)
    .map((h) =>
      h
        .trim()
        .toLowerCase()
        .replace(/^\[([^\]]*)\]$/, '$1'),
    )
    .filter(Boolean);

/** Whether the URL's host, or its host and port, is allowed. */
function allowed(url: URL, allow: AllowedHosts): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return allow.includes(host.replace(/^\[|\]$/g, '')) || allow.includes(`${host}:${port}`);
}

const refusal = (host: string) =>
  new DestinationRefused(
    `${host} is an internal address (loopback, private, link-local or reserved): list it in OUTBOUND_ALLOWED_HOSTS to send there`,
  );

/**
 * Refuses a URL whose host is, or resolves to, an internal address, unless allowed by name. For when a URL is set;
 * the sender checks every connection again (guardedLookup).
 */
export async function checkDestination(url: string, allow: AllowedHosts): Promise<void> {
  const target = new URL(url);
  const { hostname } = target;
  if (allowed(target, allow)) return;
  const host = hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (internalAddress(host)) throw refusal(hostname);
    return;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await new Promise((resolve, reject) =>
      dnsLookup(host, { all: true }, (err, a) => (err ? reject(err) : resolve(a as LookupAddress[]))),
    );
  } catch {
    return; // a name that does not resolve now may later; the sender checks it then
  }
  if (addresses.some((a) => internalAddress(a.address))) throw refusal(hostname);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request to `target`: resolves the name and refuses it when any of its addresses is internal
 * (unless allowed), so the address connected to is the one checked.
 */
export function guardedLookup(allow: AllowedHosts, target: URL) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = addresses as LookupAddress[];
      if (!allowed(target, allow) && list.some((a) => internalAddress(a.address))) return callback(refusal(hostname), []);
      if (options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/** For an IP literal the lookup is not called: its address is checked here before connecting. */
export function checkLiteral(url: URL, allow: AllowedHosts): void {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && !allowed(url, allow) && internalAddress(host)) throw refusal(url.hostname);
}
