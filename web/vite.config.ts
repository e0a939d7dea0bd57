import { defineConfig } from 'vite'
import { fileURLToPath } from 'node:url'

// The browser app of `dsh web`; built into dist/web/app (beside the compiled server plugins of src/web), which the server serves as static files.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  build: {
    outDir: fileURLToPath(new URL('../dist/web/app', import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 1000,
  },
  oxc: { jsx: { runtime: 'automatic' } },
})
