/** A promise a test opens when it chooses: a fake server's response segment waits on it. */
export function gate(): { readonly promise: Promise<void>; open(): void } {
  let open!: () => void
  const promise = new Promise<void>(resolve => { open = resolve })
  return { promise, open }
}
