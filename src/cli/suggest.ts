/** The nearest of `known` to a mistyped option, when one is close enough to be what was meant. */
export function nearest(word: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined
  for (const name of known) {
    const distance = editDistance(word, name)
    if (best === undefined || distance < best.distance) best = { name, distance }
  }
  // Within a third of the word (a typo or two), never a different word altogether.
  return best !== undefined && best.distance <= Math.max(1, Math.floor(word.length / 3)) ? best.name : undefined
}

/** Levenshtein distance (insertions, deletions, substitutions), one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    previous = row
  }
  return previous[b.length]!
}

/** `unknown option --outptu (did you mean --output?); see dsh --help` */
export function unknownOption(arg: string, known: readonly string[]): string {
  const name = arg.split('=', 1)[0]!
  const guess = nearest(name, known)
  return `unknown option ${arg}${guess !== undefined ? ` (did you mean ${guess}?)` : ''}; see dsh --help`
}
