/**
 * Host name resolution for the page fetcher. It is injectable so that tests
 * decide what a name resolves to without a DNS query leaving the machine; the
 * fetcher judges every answer before connecting to one of them.
 *
 * @module
 */

/** Answers every IPv4 and IPv6 address of `hostname` ([] when it has none); throws on DNS failure. */
export type Resolver = (hostname: string, signal?: AbortSignal) => Promise<string[]>;

/** Where {@linkcode dnsResolver} sends its queries instead of the system's name servers. */
export interface NameServer {
  ipAddr: string;
  port: number;
}

/**
 * A resolver over `Deno.resolveDns`: A and AAAA in parallel; a name with
 * neither answers []; other DNS failures throw. `nameServer` overrides the
 * system's (tests point it at a server on 127.0.0.1).
 */
export function dnsResolver(nameServer?: NameServer): Resolver {
  return async (hostname, signal) => {
    const options: Deno.ResolveDnsOptions = { signal, ...(nameServer ? { nameServer } : {}) };
    const [v4, v6] = await Promise.all([
      lookup(hostname, "A", options),
      lookup(hostname, "AAAA", options),
    ]);
    return [...v4, ...v6];
  };
}

/** The system's resolver (`/etc/resolv.conf` on Linux). */
export const systemResolver: Resolver = dnsResolver();

async function lookup(
  hostname: string,
  type: "A" | "AAAA",
  options: Deno.ResolveDnsOptions,
): Promise<string[]> {
  try {
    return await Deno.resolveDns(hostname, type, options);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}
