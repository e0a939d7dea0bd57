/** A promise a test opens when it chooses: a fake server's response segment waits on it. */
export function gate(): { readonly promise: Promise<void>; open(): void } {
  let open!: () => void
  const promise = new Promise<void>(resolve => { open = resolve })
  return { promise, open }
}

/**
 * A bash command a test holds open with a file: it runs `before`, waits (the shell polls) until
 * `flag` exists, then runs `after`. The test writes `flag` once it has seen what `before` printed.
 */
export function heldCommand(before: string, flag: string, after: string): string {
  return `${before}; while [ ! -e ${JSON.stringify(flag)} ]; do sleep 0.02; done; ${after}`
}
