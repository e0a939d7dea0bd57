/**
 * The host policy of the sandbox's allowlist network mode: which `host:port` a sandboxed command
 * may reach through the filtering proxy (`./proxy.ts`), and which addresses it may never reach.
 * Pure functions; nothing here resolves a name or opens a socket.
 *
 * Entries (`sandbox.allowedHosts`, and `DEFAULT_ALLOWED_HOSTS` shipped below):
 * - `example.com`: that host exactly (case-insensitive, a trailing dot ignored);
 * - `*.example.com`: any subdomain at any depth, not `example.com` itself; at least two labels
 *   after `*.` (`*.com` is refused), and never over an IP address;
 * - `:port` after either (`registry.corp:8443`, `*.corp.example:443`); without one an entry allows
 *   ports 80 and 443 only;
 * - IP addresses: `192.0.2.7`, and IPv6 in brackets (`[2001:db8::1]`, `[2001:db8::1]:8080`),
 *   matched by value (`[2001:DB8:0::1]` is the same address). An IPv6 address without brackets is
 *   refused as ambiguous.
 * Host names are ASCII (an international name in its `xn--` form); a name whose last label looks
 *   numeric but is not a dotted-quad IPv4 (`127.1`, `0x7f.1`, `2130706433`) is refused, because
 *   resolvers read those as addresses.
 *
 * `forbiddenAddress` names the addresses no proxied connection reaches whatever the list says:
 * the host's own services (loopback, unspecified), link-local (which holds the cloud metadata
 * service 169.254.169.254), multicast and broadcast. IPv4-mapped (`::ffff:127.0.0.1`) and
 * IPv4-compatible (`::127.0.0.1`) IPv6 forms are judged by the IPv4 address they carry. Private
 * ranges (10/8, 172.16/12, 192.168/16, fc00::/7) stay reachable when listed: a company registry
 * lives there. (AWS's IPv6 metadata address fd00:ec2::254 is in fc00::/7, so it is not refused
 * here; a setup that exposes it should not list it.)
 */
import { isIPv4, isIPv6 } from 'node:net'

/** Shipped allowlist: public package registries and code hosts (`*.github.com` covers api, codeload). */
export const DEFAULT_ALLOWED_HOSTS: readonly string[] = Object.freeze([
  'registry.npmjs.org',
  'registry.yarnpkg.com',
  'nodejs.org',
  'pypi.org',
  'files.pythonhosted.org',
  'crates.io',
  'static.crates.io',
  'index.crates.io',
  'proxy.golang.org',
  'sum.golang.org',
  'github.com',
  '*.github.com',
  '*.githubusercontent.com',
  'gitlab.com',
  'bitbucket.org',
  'rubygems.org',
  'index.rubygems.org',
  'repo.maven.apache.org',
  'repo1.maven.org',
  'plugins.gradle.org',
  'services.gradle.org',
])

export interface HostRule {
  /** The entry as written. */
  readonly entry: string
  /** Lower-cased, no trailing dot; for a wildcard the part after `*.`; IPv6 in its expanded form. */
  readonly host: string
  readonly wildcard: boolean
  /** Absent: ports 80 and 443. */
  readonly port?: number
}

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/
const NUMERIC_LABEL = /^(?:0x[0-9a-f]*|[0-9]+)$/

/**
 * `host` lower-cased, without brackets or a trailing dot, when it is a valid host name, IPv4
 * dotted quad or IPv6 address (no zone); otherwise undefined.
 */
export function normalizeHost(host: string): string | undefined {
  if (typeof host !== 'string' || !/^[\x21-\x7e]+$/.test(host)) return undefined
  let name = host.toLowerCase()
  if (name.startsWith('[') || name.includes(':')) {
    if (name.startsWith('[')) {
      if (!name.endsWith(']')) return undefined
      name = name.slice(1, -1)
    }
    return isIPv6(name) && !name.includes('%') ? name : undefined
  }
  if (name.endsWith('.')) name = name.slice(0, -1)
  if (isIPv4(name)) return name
  if (name.length === 0 || name.length > 253) return undefined
  const labels = name.split('.')
  if (!labels.every(label => LABEL.test(label)) || NUMERIC_LABEL.test(labels[labels.length - 1])) return undefined
  return name
}

/** The eight 16-bit groups of an IPv6 address (a `%zone` ignored), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  if (!isIPv6(address)) return undefined
  let text = address.toLowerCase()
  const zone = text.indexOf('%')
  if (zone >= 0) text = text.slice(0, zone)
  let tail: number[] = []
  if (text.includes('.')) {
    // A trailing dotted quad is the last two groups.
    const cut = text.lastIndexOf(':')
    const [a, b, c, d] = text.slice(cut + 1).split('.').map(Number)
    tail = [a * 256 + b, c * 256 + d]
    text = text.slice(0, cut + 1)
    if (!text.endsWith('::')) text = text.slice(0, -1)
  }
  const groups = (part: string) => (part === '' ? [] : part.split(':').map(group => parseInt(group, 16)))
  const gap = text.indexOf('::')
  if (gap < 0) return [...groups(text), ...tail]
  const head = groups(text.slice(0, gap))
  const rest = groups(text.slice(gap + 2))
  return [...head, ...Array<number>(8 - head.length - rest.length - tail.length).fill(0), ...rest, ...tail]
}

/** The key a host is matched by: IPv6 expanded, everything else as normalised. */
function matchKey(host: string): string | undefined {
  const name = normalizeHost(host)
  if (name === undefined || !name.includes(':')) return name
  return ipv6Groups(name)?.map(group => group.toString(16)).join(':')
}

function parseEntry(entry: unknown, index: number): HostRule {
  const where = `sandbox.allowedHosts[${index}]`
  if (typeof entry !== 'string') throw new TypeError(`${where} must be a host name string, got ${entry === null ? 'null' : typeof entry}`)
  const bad = (why: string) => new TypeError(`${where} ${JSON.stringify(entry.length > 200 ? `${entry.slice(0, 200)}…` : entry)}: ${why}`)
  if (entry.length === 0) throw bad('is empty')
  if (/\s/.test(entry)) throw bad('contains whitespace; write one host per entry, e.g. "example.com"')
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry)) throw bad('has a scheme; write the host alone, e.g. "example.com" or "example.com:8443"')
  if (/[/?#@]/.test(entry)) throw bad('has a path, query or user part; write the host alone, e.g. "example.com"')
  let host = entry
  let port: number | undefined
  const bracketed = /^(\[[^\]]*\])(?::(.*))?$/.exec(entry)
  if (bracketed !== null) {
    host = bracketed[1]
    if (bracketed[2] !== undefined) port = parsePort(bracketed[2], bad)
  } else if (entry.includes(':')) {
    const cut = entry.lastIndexOf(':')
    host = entry.slice(0, cut)
    if (host.includes(':')) throw bad('write an IPv6 address in brackets, e.g. "[2001:db8::1]:443"')
    port = parsePort(entry.slice(cut + 1), bad)
  }
  const wildcard = host.startsWith('*.')
  if (wildcard) host = host.slice(2)
  if (host.includes('*')) throw bad('a "*" must be the whole first label and be followed by a dot, e.g. "*.example.com"')
  if (/[^\x21-\x7e]/.test(host)) throw bad('has non-ASCII characters; write an international name in its punycode (xn--) form')
  const key = matchKey(host)
  if (key === undefined) throw bad('is not a valid host name or IP address')
  if (wildcard && (isIPv4(key) || key.includes(':'))) throw bad('a wildcard cannot stand for part of an IP address')
  if (wildcard && !key.includes('.')) throw bad('a wildcard needs at least two labels after "*." (e.g. "*.example.com"), not a whole top-level domain')
  return port === undefined ? { entry, host: key, wildcard } : { entry, host: key, wildcard, port }
}

function parsePort(text: string, bad: (why: string) => TypeError): number {
  if (!/^[0-9]{1,5}$/.test(text)) throw bad(`port ${JSON.stringify(text)} is not a number`)
  const port = Number(text)
  if (port < 1 || port > 65535) throw bad(`port ${port} is out of range (1-65535)`)
  return port
}

/** Parses allowlist entries; throws a TypeError naming the first bad one. */
export function parseAllowedHosts(entries: unknown): { rules: HostRule[] } {
  if (!Array.isArray(entries)) throw new TypeError('sandbox.allowedHosts must be a list of host names, e.g. ["registry.npmjs.org", "*.github.com"]')
  return { rules: entries.map((entry: unknown, index) => parseEntry(entry, index)) }
}

/** Whether `host:port` is allowed by `rules` (an invalid host or port never is). */
export function hostAllowed(rules: readonly HostRule[], host: string, port: number): boolean {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return false
  const key = matchKey(host)
  if (key === undefined) return false
  return rules.some(rule =>
    (rule.port === undefined ? port === 80 || port === 443 : port === rule.port)
    && (rule.wildcard ? key.endsWith(`.${rule.host}`) : key === rule.host))
}

function forbiddenIPv4(a: number, b: number, c: number, d: number): string | undefined {
  if (a === 127) return 'loopback'
  if (a === 0) return 'unspecified'
  if (a === 169 && b === 254) return 'link-local'
  if (a >= 224 && a <= 239) return 'multicast'
  if (a === 255 && b === 255 && c === 255 && d === 255) return 'broadcast'
  return undefined
}

/**
 * Why an IP address may never be reached through the proxy (`loopback`, `link-local`,
 * `unspecified`, `multicast`, `broadcast`), or undefined. Only IP literals are judged (IPv4 as a
 * dotted quad; IPv6 in any valid form, a `%zone` ignored): a caller must not pass anything else.
 */
export function forbiddenAddress(address: string): string | undefined {
  if (typeof address !== 'string') return undefined
  if (isIPv4(address)) {
    const [a, b, c, d] = address.split('.').map(Number)
    return forbiddenIPv4(a, b, c, d)
  }
  const g = ipv6Groups(address)
  if (g === undefined) return undefined
  const zeros = (n: number) => g.slice(0, n).every(group => group === 0)
  if (zeros(8)) return 'unspecified'
  if (zeros(7) && g[7] === 1) return 'loopback'
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local'
  if ((g[0] & 0xff00) === 0xff00) return 'multicast'
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) carry an IPv4 address.
  if (zeros(5) && (g[5] === 0xffff || g[5] === 0)) return forbiddenIPv4(g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff)
  return undefined
}
