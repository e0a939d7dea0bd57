export * from './api.js'
export * from './service.js'
export * from './texts.js'
