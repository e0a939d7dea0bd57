/**
 * Colours of the terminal app. With NO_COLOR set (https://no-color.org) every colour is dropped;
 * bold, dim and inverse stay, since they carry structure and the cursor.
 */
let colorEnabled = true

export function setColorEnabled(enabled: boolean): void {
  colorEnabled = enabled
}

export function isColorEnabled(): boolean {
  return colorEnabled
}

/** A colour name for Ink's `color` prop, or undefined when colours are off. */
export function c(name: 'cyan' | 'green' | 'red' | 'yellow' | 'magenta' | 'blue' | 'gray'): string | undefined {
  return colorEnabled ? name : undefined
}

export function colorWanted(env: { value(name: string): string | undefined }): boolean {
  const noColor = env.value('NO_COLOR')
  return noColor === undefined || noColor === ''
}
