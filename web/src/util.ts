/** Small helpers of the web app: the colour theme, relative times, file names, token counts, the session in the URL, Escape to close. */
import { useEffect, useRef } from 'react'

export type Theme = 'light' | 'dark'

export function initialTheme(): Theme {
  const saved = localStorage.getItem('dsh-theme')
  if (saved === 'light' || saved === 'dark') return saved
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
}

export function ago(ms: number): string {
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000))
  if (seconds < 60) return 'just now'
  if (seconds < 3600) return `${Math.round(seconds / 60)}m`
  if (seconds < 86_400) return `${Math.round(seconds / 3600)}h`
  return `${Math.round(seconds / 86_400)}d`
}

export function basename(path: string): string {
  const parts = path.split(/[\\/]/).filter(Boolean)
  return parts.at(-1) ?? path
}

export function tokens(n: number | undefined): string {
  if (n === undefined) return '0'
  return n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n)
}

export function sessionFromUrl(): string | null {
  return new URLSearchParams(location.search).get('session')
}

export function setUrlSession(id: string | null): void {
  const url = new URL(location.href)
  if (id === null) url.searchParams.delete('session')
  else url.searchParams.set('session', id)
  history.replaceState(null, '', url)
}

/** Calls `onEscape` when Escape is pressed anywhere on the page (dialogs, Settings, the drawer). */
export function useEscape(onEscape: () => void, active = true): void {
  const latest = useRef(onEscape)
  latest.current = onEscape
  useEffect(() => {
    if (!active) return
    const listener = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || event.defaultPrevented) return
      // An input that handles Escape itself (title rename, queue edit) keeps it.
      const target = event.target as HTMLElement | null
      if (target?.closest('[data-own-escape]')) return
      latest.current()
    }
    window.addEventListener('keydown', listener)
    return () => window.removeEventListener('keydown', listener)
  }, [active])
}
