/**
 * `dsh web` through the real binary: flag errors exit 2 with a clear line, and a started server
 * answers with the guards on (Host check, token).
 */
import { request } from 'node:http'
import { describe, expect, it } from 'vitest'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import { startDshWeb } from '../../test-support/web-process.js'

function get(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { Host: host } }, res => { res.resume(); resolve(res.statusCode ?? 0) })
    req.on('error', reject)
    req.end()
  })
}

describe('dsh web (binary)', () => {
  it('refuses a non-loopback host without --trust-host, and unknown flags, with exit 2', async () => {
    const { home } = tempHome()
    const open = await runDsh(['web', '--host', '0.0.0.0', '--no-open'], { env: { DSH_HOME: home } })
    expect(open.code).toBe(2)
    expect(open.stderr).toContain('--trust-host')
    const bogus = await runDsh(['web', '--bogus'], { env: { DSH_HOME: home } })
    expect(bogus.code).toBe(2)
    expect(bogus.stderr).toContain('unknown option --bogus')
  })

  it('security: DSH_WEB_TOKEN has the same minimum length as --token (exit 2), and a workspace .env cannot set it', async () => {
    const { home, cwd } = tempHome()
    const short = await runDsh(['web', '--port', '0', '--no-open'], { cwd, env: { DSH_HOME: home, DSH_WEB_TOKEN: 'x' } })
    expect(short.code).toBe(2)
    expect(short.stderr).toBe('dsh: DSH_WEB_TOKEN (from environment) must be at least 16 characters\n')
    const flag = await runDsh(['web', '--port', '0', '--no-open', '--token', 'short'], { cwd, env: { DSH_HOME: home } })
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain('at least 16 characters')
  })

  it('--port 0 prints a tokened loopback URL; the server refuses foreign Host headers and tokenless calls', async () => {
    const { home, cwd } = tempHome()
    const web = await startDshWeb({ cwd, args: ['--port', '0'], env: { DSH_HOME: home } })
    try {
      expect(web.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{32}$/)
      expect(await get(web.port, '/', `attacker.example:${web.port}`)).toBe(403)
      expect(await get(web.port, '/', `localhost:${web.port}`)).toBe(401)
      expect(await get(web.port, `/?token=${new URL(web.url).searchParams.get('token')}`, `localhost:${web.port}`)).toBe(303)
    } finally {
      await web.stop()
    }
  })
})
