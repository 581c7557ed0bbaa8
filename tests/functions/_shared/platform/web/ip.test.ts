// Addresses here are only parsed and judged, never contacted.
import assert from "node:assert/strict";
import {
  type AddressRange,
  addressRange,
  formatIp,
  parseIp,
} from "../../../../../supabase/functions/_shared/platform/web/ip.ts";

/** `text` parsed and printed canonically, or null. */
function canonical(text: string): string | null {
  const ip = parseIp(text);
  return ip && formatIp(ip);
}

Deno.test("parseIp() reads every IPv4 form inet_aton accepts", () => {
  const cases: [string, string][] = [
    ["127.0.0.1", "127.0.0.1"],
    ["2130706433", "127.0.0.1"], // one decimal number
    ["0177.0.0.1", "127.0.0.1"], // octal part
    ["0x7f.0.0.1", "127.0.0.1"], // hex part
    ["0X7F000001", "127.0.0.1"], // one hex number
    ["017700000001", "127.0.0.1"], // one octal number
    ["127.1", "127.0.0.1"], // a.b: b fills 24 bits
    ["10.1.258", "10.1.1.2"], // a.b.c: c fills 16 bits
    ["169.254.43518", "169.254.169.254"],
    ["0", "0.0.0.0"],
    ["127.0.0.1.", "127.0.0.1"], // one trailing dot
    ["0x", "0.0.0.0"],
  ];
  for (const [text, expected] of cases) assert.equal(canonical(text), expected, text);
});

Deno.test("parseIp() answers null for names and out-of-range numbers", () => {
  for (
    const text of [
      "",
      ".",
      "example.com",
      "1.2.3.4.5",
      "256.0.0.1",
      "1.16777216",
      "4294967296",
      "08.0.0.1", // not octal, not decimal
      "1..2",
      "1.2.3.4..",
      " 1.2.3.4",
      "[127.0.0.1]", // brackets are for IPv6
      "1::2::3",
      "1:2:3:4:5:6:7:8:9",
      "1:2:3:4:5:6:7::8", // "::" must stand for at least one group
      "12345::",
      "::1.2.3",
      "::256.1.1.1",
      "::01.2.3.4",
      "1.2.3.4::",
      "fe80::1%eth0", // zones are not accepted
    ]
  ) {
    assert.equal(parseIp(text), null, text);
  }
});

Deno.test("parseIp() reads IPv6 with ::, IPv4 tails and brackets; formatIp() follows RFC 5952", () => {
  const cases: [string, string][] = [
    ["::", "::"],
    ["::1", "::1"],
    ["[::1]", "::1"],
    ["0:0:0:0:0:0:0:1", "::1"],
    ["2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1"], // first longest run, lower case
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"], // a single 0 group is not compressed
    ["2606:4700:0000:0000:0000:0000:0000:1111", "2606:4700::1111"],
    ["::ffff:127.0.0.1", "::ffff:127.0.0.1"],
    ["::ffff:7f00:1", "::ffff:127.0.0.1"], // mapped: printed with its IPv4 address
    ["[::ffff:7f00:1]", "::ffff:127.0.0.1"],
    ["64:ff9b::10.0.0.1", "64:ff9b::a00:1"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
  ];
  for (const [text, expected] of cases) assert.equal(canonical(text), expected, text);
  assert.equal(parseIp("::ffff:7f00:1")?.version, 6);
});

/** Every special-purpose range, with the verdict addressRange() must give. */
const REFUSED: [string, AddressRange][] = [
  // IPv4
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "this_network"],
  ["10.0.0.1", "private"],
  ["10.255.255.255", "private"],
  ["100.64.0.1", "cgnat"],
  ["100.127.255.254", "cgnat"],
  ["100.100.100.200", "metadata"],
  ["127.0.0.1", "loopback"],
  ["127.255.0.9", "loopback"],
  ["169.254.0.1", "link_local"],
  ["169.254.169.254", "metadata"],
  ["168.63.129.16", "metadata"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["192.0.0.8", "reserved"],
  ["192.0.2.1", "documentation"],
  ["192.88.99.1", "reserved"],
  ["192.168.1.1", "private"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.255", "benchmarking"],
  ["198.51.100.7", "documentation"],
  ["203.0.113.7", "documentation"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.254", "reserved"],
  ["255.255.255.255", "broadcast"],
  // IPv4 in legacy notation
  ["2130706433", "loopback"],
  ["0177.0.0.1", "loopback"],
  ["0x7f.0.0.1", "loopback"],
  ["127.1", "loopback"],
  ["0xa9fea9fe", "metadata"],
  ["012.0.0.1", "private"],
  // IPv6
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["[::1]", "loopback"],
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["[::ffff:127.0.0.1]", "loopback"],
  ["::ffff:10.0.0.1", "private"],
  ["::ffff:a9fe:a9fe", "metadata"],
  ["::127.0.0.1", "loopback"], // IPv4-compatible
  ["::8.8.8.8", "reserved"], // IPv4-compatible of a public address: never routed
  ["64:ff9b::10.0.0.1", "private"], // NAT64
  ["64:ff9b::a9fe:a9fe", "metadata"],
  ["64:ff9b:1::1", "translation"],
  ["2002:7f00:1::1", "loopback"], // 6to4 of 127.0.0.1
  ["2002:c0a8:101::", "private"], // 6to4 of 192.168.1.1
  ["100::1", "discard"],
  ["fc00::1", "unique_local"],
  ["fd12:3456::1", "unique_local"],
  ["fd00:ec2::254", "metadata"],
  ["fe80::1", "link_local"],
  ["febf::1", "link_local"],
  ["fec0::1", "site_local"],
  ["ff02::1", "multicast"],
  ["2001::1", "teredo"],
  ["2001:0:4136:e378::1", "teredo"],
  ["2001:2::1", "benchmarking"],
  ["2001:10::1", "reserved"],
  ["2001:20::1", "reserved"],
  ["2001:db8::1", "documentation"],
  ["3fff::1", "documentation"],
  ["3fff:fff::1", "documentation"],
  ["4000::1", "reserved"], // outside 2000::/3
  ["1::1", "reserved"],
];

Deno.test("addressRange() names the special-purpose range of every refused address", () => {
  for (const [text, range] of REFUSED) assert.equal(addressRange(text), range, text);
});

Deno.test("addressRange() passes public unicast, and NAT64/6to4/mapped forms of it", () => {
  for (
    const text of [
      "8.8.8.8",
      "1.1.1.1",
      "93.184.216.34",
      "100.63.255.255", // just below CGNAT
      "100.128.0.0", // just above CGNAT
      "172.32.0.1", // just above 172.16/12
      "169.253.255.255",
      "223.255.255.255",
      "2606:4700::1111",
      "2a00:1450:4001::200e",
      "2001:4860:4860::8888",
      "2001:30::1", // just above ORCHIDv2
      "3fff:1000::1", // just above 3fff::/20
      "::ffff:8.8.8.8",
      "64:ff9b::8.8.8.8",
      "2002:808:808::1", // 6to4 of 8.8.8.8
    ]
  ) {
    assert.equal(addressRange(text), null, text);
  }
});

Deno.test("addressRange() throws on text that is not an address", () => {
  assert.throws(() => addressRange("example.com"), TypeError);
});
