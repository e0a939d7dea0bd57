import { createRoot } from 'react-dom/client'
import { App } from './App'
import { registerToolCard } from './cards'
import './styles.css'

// Extensions loaded after the app can add cards for their own tools.
;(window as unknown as { dsh: unknown }).dsh = { registerToolCard }

createRoot(document.getElementById('root')!).render(<App />)
