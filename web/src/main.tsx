import { createElement } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './App'
import { Diff, JsonCard, TodoStrip, ToolShell, registerToolCard } from './cards'
import './terminal-card'
import { call, prefetchHistory } from './api'
import { highlight, renderMarkdown } from './markdown'
import './styles.css'

// What extension scripts (served by server plugins under /ext/) use to add tool cards without
// bundling their own React: `dsh.registerToolCard('my_tool', props => dsh.h('div', null, ...))`.
;(window as unknown as { dsh: unknown }).dsh = { registerToolCard, h: createElement, ToolShell, Diff, JsonCard, TodoStrip, highlight, renderMarkdown }

async function loadExtensions(): Promise<void> {
  try {
    const { scripts } = await call<{ scripts: string[] }>('extensions.list')
    await Promise.all(scripts.map(url => import(/* @vite-ignore */ url).catch(error => console.error(`dsh: extension ${url} failed`, error))))
  } catch {
    // No server or no token yet: the app shows that itself.
  }
}

// The conversation in the address starts loading now, alongside the extension scripts.
const opening = new URLSearchParams(location.search).get('session')
if (opening !== null) prefetchHistory(opening)

void loadExtensions().then(() => createRoot(document.getElementById('root')!).render(<App />))
