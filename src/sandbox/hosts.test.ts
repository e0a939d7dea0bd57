import { describe, expect, it } from 'vitest'
import { DEFAULT_ALLOWED_HOSTS, forbiddenAddress, hostAllowed, normalizeHost, parseAllowedHosts } from './hosts.js'

const rules = (...entries: string[]) => parseAllowedHosts(entries).rules

describe('allowlist entries', () => {
  it('the shipped list parses, has about twenty public hosts and covers the common registries', () => {
    const shipped = parseAllowedHosts(DEFAULT_ALLOWED_HOSTS).rules
    expect(shipped.length).toBeGreaterThanOrEqual(15)
    expect(shipped.length).toBeLessThanOrEqual(30)
    expect(Object.isFrozen(DEFAULT_ALLOWED_HOSTS)).toBe(true)
    for (const host of ['registry.npmjs.org', 'pypi.org', 'files.pythonhosted.org', 'static.crates.io', 'proxy.golang.org', 'github.com', 'codeload.github.com', 'api.github.com', 'raw.githubusercontent.com', 'objects.githubusercontent.com', 'repo1.maven.org', 'rubygems.org']) {
      expect(hostAllowed(shipped, host, 443), host).toBe(true)
    }
    for (const host of ['localhost', 'example.com', 'githubusercontent.com', 'evilgithub.com', 'github.com.evil.example', 'npmjs.org']) {
      expect(hostAllowed(shipped, host, 443), host).toBe(false)
    }
    for (const entry of DEFAULT_ALLOWED_HOSTS) expect(entry, entry).toMatch(/^(\*\.)?[a-z0-9.-]+\.[a-z]+$/)
  })

  it('an exact host matches case-insensitively, ignores a trailing dot, and allows ports 80 and 443 only', () => {
    const list = rules('Registry.Example.COM.')
    expect(list[0]).toEqual({ entry: 'Registry.Example.COM.', host: 'registry.example.com', wildcard: false })
    expect(hostAllowed(list, 'registry.example.com', 443)).toBe(true)
    expect(hostAllowed(list, 'REGISTRY.example.com.', 80)).toBe(true)
    expect(hostAllowed(list, 'registry.example.com', 8443)).toBe(false)
    expect(hostAllowed(list, 'registry.example.com', 22)).toBe(false)
    expect(hostAllowed(list, 'sub.registry.example.com', 443)).toBe(false)
    expect(hostAllowed(list, 'example.com', 443)).toBe(false)
    expect(hostAllowed(list, 'registry.example.com.evil.test', 443)).toBe(false)
    expect(hostAllowed(list, 'xregistry.example.com', 443)).toBe(false)
  })

  it('a wildcard matches any subdomain at any depth but not the apex', () => {
    const list = rules('*.example.com')
    expect(hostAllowed(list, 'a.example.com', 443)).toBe(true)
    expect(hostAllowed(list, 'a.b.example.com', 80)).toBe(true)
    expect(hostAllowed(list, 'example.com', 443)).toBe(false)
    expect(hostAllowed(list, 'badexample.com', 443)).toBe(false)
    expect(hostAllowed(list, 'a.example.com.evil.test', 443)).toBe(false)
    expect(hostAllowed(list, 'a.example.com', 8080)).toBe(false)
  })

  it('a port in the entry allows that port only', () => {
    const list = rules('registry.corp:8443', '*.mirror.corp:443')
    expect(hostAllowed(list, 'registry.corp', 8443)).toBe(true)
    expect(hostAllowed(list, 'registry.corp', 443)).toBe(false)
    expect(hostAllowed(list, 'registry.corp', 80)).toBe(false)
    expect(hostAllowed(list, 'eu.mirror.corp', 443)).toBe(true)
    expect(hostAllowed(list, 'eu.mirror.corp', 80)).toBe(false)
  })

  it('IP addresses: IPv4 as written, IPv6 in brackets matched by value', () => {
    const list = rules('192.0.2.7', '[2001:DB8::1]:8080', '[fd00::5]')
    expect(hostAllowed(list, '192.0.2.7', 443)).toBe(true)
    expect(hostAllowed(list, '192.0.2.70', 443)).toBe(false)
    expect(hostAllowed(list, '2001:db8:0:0::1', 8080)).toBe(true)
    expect(hostAllowed(list, '[2001:0db8::0001]', 8080)).toBe(true)
    expect(hostAllowed(list, '2001:db8::1', 443)).toBe(false)
    expect(hostAllowed(list, 'fd00:0::5', 80)).toBe(true)
    expect(list[1]).toMatchObject({ host: '2001:db8:0:0:0:0:0:1', port: 8080 })
  })

  it('hostile hosts and ports never match', () => {
    const list = rules('*.github.com', 'github.com', '1.2.3.4')
    for (const host of ['', '.', 'github.com..', '.github.com', 'evil.com\0.github.com', 'evil.com/.github.com', 'evil .github.com', 'a_b\u0000.github.com',
      '\u212Aey.github.com', 'gith\u00fcb.com', '[github.com]', '-x.github.com', 'x-.github.com', `${'a'.repeat(64)}.github.com`, '01.2.3.4', '1.2.772', '0x1.2.3.4']) {
      expect(hostAllowed(list, host, 443), JSON.stringify(host)).toBe(false)
    }
    for (const port of [0, -443, 443.5, 65536, Number.NaN, Number.POSITIVE_INFINITY]) expect(hostAllowed(list, 'github.com', port), String(port)).toBe(false)
    expect(hostAllowed(list, 'github.com', 443)).toBe(true)
    expect(hostAllowed(list, '1.2.3.4', 443)).toBe(true)
  })

  it('bad entries throw a TypeError that names the entry and what to write instead', () => {
    const cases: [unknown, RegExp][] = [
      [42, /sandbox\.allowedHosts\[0\] must be a host name string, got number/],
      [null, /got null/],
      ['', /\[0\] "": is empty/],
      ['   ', /whitespace/],
      ['a.com b.com', /"a\.com b\.com": contains whitespace/],
      [' github.com', /whitespace/],
      ['https://github.com', /"https:\/\/github\.com": has a scheme; write the host alone/],
      ['github.com/org', /has a path/],
      ['github.com?x', /has a path, query/],
      ['user@github.com', /user part/],
      ['github.com:0', /port 0 is out of range \(1-65535\)/],
      ['github.com:65536', /port 65536 is out of range/],
      ['github.com:99999', /out of range/],
      ['github.com:', /port "" is not a number/],
      ['github.com:https', /port "https" is not a number/],
      ['github.com:-1', /not a number/],
      ['*', /"\*" must be the whole first label and be followed by a dot/],
      ['*github.com', /followed by a dot/],
      ['a.*.github.com', /followed by a dot/],
      ['*.*.github.com', /followed by a dot/],
      ['*.com', /at least two labels/],
      ['*.', /not a valid host/],
      ['*.1.2.3.4', /cannot stand for part of an IP address/],
      ['::1', /IPv6 address in brackets/],
      ['2001:db8::1:443', /brackets/],
      ['[::1', /brackets/],
      ['[not-v6]:80', /not a valid host/],
      ['[fe80::1%eth0]', /not a valid host/],
      ['[::1]:70000', /out of range/],
      ['gith\u00fcb.com', /punycode/],
      ['bad_-.com', /not a valid host/],
      ['-bad.com', /not a valid host/],
      ['a..com', /not a valid host/],
      ['127.1', /not a valid host/],
      ['2130706433', /not a valid host/],
      ['0x7f.1', /not a valid host/],
      [`${'a'.repeat(64)}.com`, /not a valid host/],
    ]
    for (const [entry, message] of cases) {
      expect(() => parseAllowedHosts([entry]), JSON.stringify(entry)).toThrow(TypeError)
      expect(() => parseAllowedHosts([entry]), JSON.stringify(entry)).toThrow(message)
    }
    expect(() => parseAllowedHosts(['ok.example', 'https://x.example'])).toThrow(/sandbox\.allowedHosts\[1\]/)
    expect(() => parseAllowedHosts('github.com')).toThrow(/must be a list/)
    expect(() => parseAllowedHosts(undefined)).toThrow(TypeError)
    expect(() => parseAllowedHosts([`${'x'.repeat(5000)} y`])).toThrow(/…/)
    expect(parseAllowedHosts([]).rules).toEqual([])
  })

  it('normalizeHost keeps names, dotted quads and IPv6 (without brackets), and refuses the rest', () => {
    expect(normalizeHost('GitHub.COM.')).toBe('github.com')
    expect(normalizeHost('[::FFFF:127.0.0.1]')).toBe('::ffff:127.0.0.1')
    expect(normalizeHost('fd00::2')).toBe('fd00::2')
    expect(normalizeHost('192.0.2.2')).toBe('192.0.2.2')
    for (const bad of ['', 'a b', 'a\nb', '[::1', 'fe80::1%eth0', 'x/y', 'a..b', '999.1.1.1', '127.1']) expect(normalizeHost(bad), JSON.stringify(bad)).toBeUndefined()
    expect(normalizeHost(42 as unknown as string)).toBeUndefined()
  })
})

describe('forbidden addresses', () => {
  it('IPv4: loopback, link-local (cloud metadata), unspecified, multicast, broadcast', () => {
    const expected: Record<string, string | undefined> = {
      '127.0.0.1': 'loopback', '127.255.255.254': 'loopback', '127.1.2.3': 'loopback',
      '169.254.169.254': 'link-local', '169.254.0.1': 'link-local',
      '0.0.0.0': 'unspecified', '0.1.2.3': 'unspecified',
      '224.0.0.1': 'multicast', '239.255.255.250': 'multicast',
      '255.255.255.255': 'broadcast',
      '10.0.0.1': undefined, '172.16.5.4': undefined, '192.168.1.1': undefined, '192.0.2.2': undefined,
      '8.8.8.8': undefined, '126.255.255.255': undefined, '128.0.0.1': undefined, '169.253.1.1': undefined, '223.255.255.255': undefined, '240.0.0.1': undefined,
    }
    for (const [address, reason] of Object.entries(expected)) expect(forbiddenAddress(address), address).toBe(reason)
  })

  it('IPv6 in every spelling, and IPv4 carried in IPv6', () => {
    const expected: Record<string, string | undefined> = {
      '::1': 'loopback', '0:0:0:0:0:0:0:1': 'loopback', '0000::0001': 'loopback', '::0:1': 'loopback',
      '::': 'unspecified', '0:0:0:0:0:0:0:0': 'unspecified', '::0.0.0.0': 'unspecified',
      'fe80::1': 'link-local', 'FE80::1%eth0': 'link-local', 'febf:ffff::1': 'link-local', 'fe80::fc:ff:fe00:1%4': 'link-local',
      'ff02::1': 'multicast', 'FF0E::1': 'multicast',
      '::ffff:127.0.0.1': 'loopback', '::FFFF:7f00:1': 'loopback', '0:0:0:0:0:ffff:7f00:0001': 'loopback', '::ffff:169.254.169.254': 'link-local',
      '::ffff:a9fe:a9fe': 'link-local', '::ffff:0.0.0.0': 'unspecified', '::ffff:255.255.255.255': 'broadcast', '::ffff:224.0.0.1': 'multicast',
      '::127.0.0.1': 'loopback', '::7f00:1': 'loopback',
      '::ffff:192.0.2.2': undefined, '::ffff:10.0.0.1': undefined, 'fd00::2': undefined, 'fc00::1': undefined, 'fec0::1': undefined,
      '2001:db8::1': undefined, 'fe7f::1': undefined, 'fec0::': undefined, '::2:0:0:1': undefined, '1::1': undefined,
    }
    for (const [address, reason] of Object.entries(expected)) expect(forbiddenAddress(address), address).toBe(reason)
  })

  it('anything that is not an IP literal is not judged (callers check isIP first)', () => {
    for (const text of ['localhost', '', '127.1', '2130706433', '[::1]', '::1::', '1.2.3.4.5', '999.0.0.1', 'fe80::1%']) expect(forbiddenAddress(text), text).toBeUndefined()
    expect(forbiddenAddress(undefined as unknown as string)).toBeUndefined()
  })
})
