/** `n` and the word, in the plural unless n is 1: "1 turn", "3 turns". */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

/** Token counts as people read them: 950, 1.2k, 48k, 1.0M (the terminal app, `/status`). */
export function compactNumber(n: number): string {
  if (n < 1000) return String(n)
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`
  return `${(n / 1_000_000).toFixed(1)}M`
}
