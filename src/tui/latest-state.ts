/**
 * React state that key handlers read and write through a ref. ink re-binds a `useInput` handler
 * only after React has committed a frame and run its passive effects, so a key can arrive while
 * the handler still closes over an earlier render (docs/decisions.md, "The terminal app's key
 * handlers read state through refs"). `ref.current` is always the latest value; `set` (a value
 * or an update of the latest one) changes both, and the render follows.
 */
import { useRef, useState } from 'react'

export function useLatestState<T>(initial: T | (() => T)): [T, { readonly current: T }, (next: T | ((latest: T) => T)) => void] {
  const [value, setValue] = useState(initial)
  const ref = useRef(value)
  const set = (next: T | ((latest: T) => T)): void => {
    ref.current = typeof next === 'function' ? (next as (latest: T) => T)(ref.current) : next
    setValue(ref.current)
  }
  return [value, ref, set]
}
