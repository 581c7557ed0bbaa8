/**
 * IP addresses for the SSRF guard of the page fetcher: parsing every textual
 * form a URL host or a DNS answer can take (including the legacy IPv4 forms
 * `inet_aton` accepts, which a naive check would read as a name), canonical
 * text, and the IANA special-purpose range an address falls in. Only public
 * unicast addresses may be fetched.
 *
 * @module
 */

/** Why an address may not be fetched: the IANA special-purpose range it falls in. */
export type AddressRange =
  | "unspecified"
  | "loopback"
  | "private"
  | "cgnat"
  | "link_local"
  | "metadata"
  | "multicast"
  | "broadcast"
  | "reserved"
  | "documentation"
  | "benchmarking"
  | "translation"
  | "unique_local"
  | "site_local"
  | "teredo"
  | "discard"
  | "this_network";

/** A parsed address: 4 bytes (IPv4) or 16 bytes (IPv6), network order. */
export interface ParsedIp {
  version: 4 | 6;
  bytes: Uint8Array;
}

/**
 * Parses an IPv4 or IPv6 address, or answers null for anything else. IPv4
 * takes dotted quads and the legacy forms `inet_aton` accepts (decimal
 * `2130706433`, octal `0177.0.0.1`, hex `0x7f.0.0.1`, short `127.1`, one
 * trailing dot); IPv6 takes `::` compression and a dotted IPv4 tail, with or
 * without [brackets], but no zone (`%eth0`).
 */
export function parseIp(text: string): ParsedIp | null {
  if (text.startsWith("[") && text.endsWith("]")) {
    const bytes = parseIpv6(text.slice(1, -1));
    return bytes && { version: 6, bytes };
  }
  if (text.includes(":")) {
    const bytes = parseIpv6(text);
    return bytes && { version: 6, bytes };
  }
  const bytes = parseIpv4(text);
  return bytes && { version: 4, bytes };
}

/** Canonical text: IPv4 dotted decimal, IPv6 per RFC 5952 (IPv4-mapped as `::ffff:a.b.c.d`). */
export function formatIp(ip: ParsedIp): string {
  const b = ip.bytes;
  if (ip.version === 4) return Array.from(b).join(".");
  const groups = Array.from({ length: 8 }, (_, i) => (b[2 * i]! << 8) | b[2 * i + 1]!);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `::ffff:${Array.from(b.subarray(12)).join(".")}`;
  }
  let best = { start: -1, length: 1 };
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length) best = { start: i, length: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.start < 0) return hex.join(":");
  const head = hex.slice(0, best.start).join(":");
  const tail = hex.slice(best.start + best.length).join(":");
  return `${head}::${tail}`;
}

/**
 * The special-purpose range `text` falls in, or null for a public unicast
 * address (fetchable). IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6
 * addresses are judged by the IPv4 address they embed. Throws a TypeError when
 * `text` is not an IP address.
 */
export function addressRange(text: string): AddressRange | null {
  const ip = parseIp(text);
  if (!ip) throw new TypeError(`Cannot judge address "${text}": not an IP address`);
  return rangeOf(ip);
}

/** {@linkcode addressRange} of a parsed address. */
export function rangeOf(ip: ParsedIp): AddressRange | null {
  if (ip.version === 4) return firstMatch(IPV4_BLOCKS, ip.bytes);
  const fixed = firstMatch(IPV6_FIXED, ip.bytes);
  if (fixed) return fixed;
  for (const form of IPV6_EMBEDDING) {
    if (!inBlock(form, ip.bytes)) continue;
    return firstMatch(IPV4_BLOCKS, ip.bytes.slice(form.at, form.at + 4)) ?? form.publicV4;
  }
  const special = firstMatch(IPV6_BLOCKS, ip.bytes);
  if (special) return special;
  return (ip.bytes[0]! & 0xe0) === 0x20 ? null : "reserved"; // only 2000::/3 is global unicast
}

interface Block {
  prefix: Uint8Array;
  bits: number;
  range: AddressRange;
}

/** An IPv6 prefix that carries an IPv4 address at byte `at`; `publicV4` is the verdict when it is public. */
interface Embedding {
  prefix: Uint8Array;
  bits: number;
  at: number;
  publicV4: AddressRange | null;
}

function block(cidr: string, range: AddressRange): Block {
  const [address, bits] = cidr.split("/");
  return { prefix: parseIp(address!)!.bytes, bits: Number(bits), range };
}

function embedding(cidr: string, at: number, publicV4: AddressRange | null): Embedding {
  const { prefix, bits } = block(cidr, "reserved");
  return { prefix, bits, at, publicV4 };
}

function inBlock(
  { prefix, bits }: { prefix: Uint8Array; bits: number },
  bytes: Uint8Array,
): boolean {
  if (prefix.length !== bytes.length) return false;
  const whole = bits >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== prefix[i]) return false;
  const rest = bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (bytes[whole]! & mask) === (prefix[whole]! & mask);
}

function firstMatch(blocks: readonly Block[], bytes: Uint8Array): AddressRange | null {
  return blocks.find((b) => inBlock(b, bytes))?.range ?? null;
}

/** IPv4 special-purpose blocks, most specific first. */
const IPV4_BLOCKS: readonly Block[] = [
  block("0.0.0.0/32", "unspecified"),
  block("0.0.0.0/8", "this_network"),
  block("10.0.0.0/8", "private"),
  block("100.100.100.200/32", "metadata"), // Alibaba Cloud
  block("100.64.0.0/10", "cgnat"),
  block("127.0.0.0/8", "loopback"),
  block("168.63.129.16/32", "metadata"), // Azure
  block("169.254.169.254/32", "metadata"), // AWS, GCP, Azure, OpenStack, ...
  block("169.254.0.0/16", "link_local"),
  block("172.16.0.0/12", "private"),
  block("192.0.0.0/24", "reserved"), // IETF protocol assignments
  block("192.0.2.0/24", "documentation"),
  block("192.88.99.0/24", "reserved"), // deprecated 6to4 relay anycast
  block("192.168.0.0/16", "private"),
  block("198.18.0.0/15", "benchmarking"),
  block("198.51.100.0/24", "documentation"),
  block("203.0.113.0/24", "documentation"),
  block("224.0.0.0/4", "multicast"),
  block("255.255.255.255/32", "broadcast"),
  block("240.0.0.0/4", "reserved"),
];

/** IPv6 addresses judged before any embedding is looked at. */
const IPV6_FIXED: readonly Block[] = [
  block("::/128", "unspecified"),
  block("::1/128", "loopback"),
];

/** IPv6 forms that embed an IPv4 address (mapped and NAT64/6to4 of a public v4 pass). */
const IPV6_EMBEDDING: readonly Embedding[] = [
  embedding("::ffff:0:0/96", 12, null), // IPv4-mapped
  embedding("::/96", 12, "reserved"), // IPv4-compatible (deprecated, never routed)
  embedding("64:ff9b::/96", 12, null), // NAT64
  embedding("2002::/16", 2, null), // 6to4
];

/** IPv6 special-purpose blocks, most specific first. */
const IPV6_BLOCKS: readonly Block[] = [
  block("64:ff9b:1::/48", "translation"),
  block("100::/64", "discard"),
  block("fd00:ec2::254/128", "metadata"), // AWS over IPv6
  block("fc00::/7", "unique_local"),
  block("fe80::/10", "link_local"),
  block("fec0::/10", "site_local"),
  block("ff00::/8", "multicast"),
  block("2001::/32", "teredo"),
  block("2001:2::/48", "benchmarking"),
  block("2001:10::/28", "reserved"), // ORCHID
  block("2001:20::/28", "reserved"), // ORCHIDv2
  block("2001:db8::/32", "documentation"),
  block("3fff::/20", "documentation"),
];

function parseIpv4(text: string): Uint8Array | null {
  const parts = text.split(".");
  if (parts.length > 1 && parts.at(-1) === "") parts.pop();
  if (parts.length > 4) return null;
  const numbers: number[] = [];
  for (const part of parts) {
    const n = parseIpv4Number(part);
    if (n === null) return null;
    numbers.push(n);
  }
  const last = numbers.pop()!;
  if (numbers.some((n) => n > 255) || last >= 256 ** (4 - numbers.length)) return null;
  const value = numbers.reduce((sum, n, i) => sum + n * 256 ** (3 - i), last);
  return new Uint8Array([value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255]);
}

/** One `inet_aton` part: `0x…` hex, `0…` octal, else decimal. */
function parseIpv4Number(part: string): number | null {
  if (/^0x[0-9a-f]*$/i.test(part)) return part.length === 2 ? 0 : parseInt(part.slice(2), 16);
  if (/^0[0-7]+$/.test(part)) return parseInt(part, 8);
  if (/^(0|[1-9][0-9]*)$/.test(part)) return Number(part);
  return null;
}

function parseIpv6(text: string): Uint8Array | null {
  const halves = text.split("::");
  if (halves.length > 2 || halves[0]!.includes(".")) return null;
  const left = parseGroups(halves[0]!);
  const right = halves.length === 2 ? parseGroups(halves[1]!) : [];
  if (!left || !right) return null;
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [
    ...left,
    ...new Array<number>(halves.length === 1 ? 0 : missing).fill(0),
    ...right,
  ];
  return new Uint8Array(groups.flatMap((g) => [g >> 8, g & 255]));
}

/** Colon-separated hex groups; the last may be a dotted IPv4 address (two groups). */
function parseGroups(text: string): number[] | null {
  if (text === "") return [];
  const parts = text.split(":");
  const groups: number[] = [];
  for (const [i, part] of parts.entries()) {
    if (/^[0-9a-f]{1,4}$/i.test(part)) {
      groups.push(parseInt(part, 16));
    } else if (
      i === parts.length - 1 && /^(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){3}$/.test(part)
    ) {
      const [a, b, c, d] = part.split(".").map(Number) as [number, number, number, number];
      if (Math.max(a, b, c, d) > 255) return null;
      groups.push((a << 8) | b, (c << 8) | d);
    } else {
      return null;
    }
  }
  return groups;
}
