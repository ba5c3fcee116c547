// Where our own webhooks may go (channel destinations, CHANNEL_WEBHOOK_URL, ALERT_WEBHOOK_URL): not to this
// machine, its network or the cloud's metadata service, unless a host is allowed by name (OUTBOUND_ALLOWED_HOSTS).
// A URL is checked when it is set (its name resolved), and every connection again at connect time on the address
// actually connected to, so a name re-pointed between the check and the POST (DNS rebinding) is refused too.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

// Loopback, "this network", private, CGNAT, link-local (the metadata service), benchmarking, multicast and
// reserved; IPv6 unspecified, loopback, IPv4-compatible, 6to4, unique-local, link-local and multicast. IPv4-mapped
// and NAT64 forms are judged by the IPv4 address they carry. IPv4-compatible (::a.b.c.d, ::/96, which holds the
// unspecified and loopback addresses too) and 6to4 (2002:aabb:ccdd::/48, 2002::/16) are refused whole instead: both
// are deprecated (RFC 4291, RFC 7526) and no real destination has one, while a host that still tunnels them would
// carry the POST to the IPv4 address inside: refusing the prefix needs no judging of that address.
const internal = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  internal.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 96],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  internal.addSubnet(net, bits, 'ipv6');

/** The IPv4 address an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address carries. */
function embeddedIpv4(ip: string): string | null {
  const m = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(ip);
  if (!m) return null;
  if (m[1]) return m[1];
  const hi = Number.parseInt(m[2]!, 16);
  const lo = Number.parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an IP address is internal (see above). Anything that is not an IP address counts as internal. */
export function internalAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, '');
  const v4 = isIP(ip) === 6 ? embeddedIpv4(ip.toLowerCase()) : null;
  if (v4) return internal.check(v4, 'ipv4');
  const family = isIP(ip);
  if (family === 4) return internal.check(ip, 'ipv4');
  if (family === 6) return internal.check(ip, 'ipv6');
  return true;
}

export class DestinationRefused extends Error {
  readonly code = 'EDESTINATION';
}

/** Hosts allowed to be internal: names or addresses, lower-case, as OUTBOUND_ALLOWED_HOSTS lists them. */
export type AllowedHosts = readonly string[];

export const parseAllowedHosts = (setting: string): AllowedHosts =>
  setting
    .split(/[\s,]+/)
    .map((h) =>
      h
        .trim()
        .toLowerCase()
        .replace(/^\[|\]$/g, ''),
    )
    .filter(Boolean);

const allowed = (hostname: string, allow: AllowedHosts) => allow.includes(hostname.toLowerCase().replace(/^\[|\]$/g, ''));

const refusal = (host: string) =>
  new DestinationRefused(
    `${host} is an internal address (loopback, private, link-local or reserved): list it in OUTBOUND_ALLOWED_HOSTS to send there`,
  );

/**
 * Refuses a URL whose host is, or resolves to, an internal address, unless allowed by name. For when a URL is set;
 * the sender checks every connection again (guardedLookup).
 */
export async function checkDestination(url: string, allow: AllowedHosts): Promise<void> {
  const { hostname } = new URL(url);
  if (allowed(hostname, allow)) return;
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
 * A `lookup` for http.request: resolves the name and refuses it when any of its addresses is internal (unless
 * allowed), so the address connected to is the one checked.
 */
export function guardedLookup(allow: AllowedHosts) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = addresses as LookupAddress[];
      if (!allowed(hostname, allow) && list.some((a) => internalAddress(a.address))) return callback(refusal(hostname), []);
      if (options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/** For an IP literal the lookup is not called: its address is checked here before connecting. */
export function checkLiteral(url: URL, allow: AllowedHosts): void {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && !allowed(url.hostname, allow) && internalAddress(host)) throw refusal(url.hostname);
}
