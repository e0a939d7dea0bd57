/**
 * A string built from many small streamed pieces (one per model delta).
 *
 * `text += piece` keeps a cons-string node per piece alive until the block is read, so on a long
 * stream every delta leaves two young objects that survive the scavenges and get copied into the
 * old generation (the translator and the assembler each keep the text). Here the pieces wait in a
 * short run that is joined into one flat string every RUN pieces: a piece and its slot mostly
 * die young, and what survives is about the text's own bytes.
 */
const RUN = 64

export class TextParts {
  private readonly runs: string[] = []
  private readonly run: string[] = []
  private joined: string | undefined = ''

  append(piece: string): void {
    // As `+=` would: an untyped caller's undefined or number reads as its string form.
    if (typeof piece !== 'string') piece = String(piece)
    if (piece === '') return
    const run = this.run
    run.push(piece)
    this.joined = undefined
    if (run.length === RUN) {
      this.runs.push(run.join(''))
      run.length = 0
    }
  }

  toString(): string {
    let joined = this.joined
    if (joined === undefined) {
      if (this.run.length > 0) {
        this.runs.push(this.run.join(''))
        this.run.length = 0
      }
      joined = this.runs.length === 1 ? this.runs[0]! : this.runs.join('')
      // Later appends continue from the whole text, read again only once they change it.
      this.runs.length = 0
      this.runs.push(joined)
      this.joined = joined
    }
    return joined
  }
}
