export * from './fence.js'
export * from './modes.js'
export * from './runner.js'
export * from './service.js'
