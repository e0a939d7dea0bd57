import { useCallback, useEffect, useRef, type MutableRefObject, type RefObject } from 'react'

/**
 * The conversation's pin to the bottom (docs/web.md, "Scrolling"). While pinned, growth of the
 * content keeps the view at the bottom; the reader leaves the pin by scrolling up in any way
 * (wheel, keys, scrollbar, touch, a jump to the top) and takes it again by scrolling back to the
 * bottom.
 *
 * What the reader did is read from the screen, not from the scroll offset: the page remembers
 * where a row in view was drawn. Rows measured above the view (content-visibility) change the
 * offset, but the browser's scroll anchoring keeps that row where it was; a scroll by the reader
 * moves it. So a resize observer that runs before the reader's scroll event (the content grew in
 * the same frame) sees the move too and does not pull the view back, and a scroll event that
 * comes with a changed content height is still the reader's. Only a change of width (a reflow of
 * every row) is not read as the reader's, nor a row that moved while the offset stayed: that is
 * content above it changing size where anchoring did not apply, and unpinned the view is scrolled
 * by as much, so what the reader looks at stays put.
 */
export interface BottomPin {
  /** True while new content is followed at the bottom. */
  readonly stick: MutableRefObject<boolean>
  /** The scroller's scroll handler calls this first: it reads what the reader did. */
  scrolled(): void
  /**
   * After a render: reads what the reader did, then scrolls to the bottom if still pinned. With
   * `rowsAbove` (rows were drawn above the ones shown before) the rows moved for the page, not the
   * reader: the pin stays as it was.
   */
  follow(rowsAbove?: boolean): void
  /**
   * The row at the top of the view and where it is drawn, taken before rows are put above it
   * (an earlier page, or more of the loaded rows); `restore` then scrolls it back to that place.
   * A row, not the distance to the bottom: rows below it may get their real heights in between.
   */
  anchor(): ViewAnchor | null
  /** Moves the view for the page (not the reader) so the anchored row is where it was. */
  restore(anchor: ViewAnchor): void
}

export interface ViewAnchor {
  readonly row: HTMLElement
  /** The row's top, from the scroller's top edge. */
  readonly offset: number
}

/** The row whose top is the first at or below the scroller's top edge (else the one across it). */
function rowInView(content: HTMLElement, top: number): HTMLElement | null {
  const rows = content.querySelectorAll<HTMLElement>(':scope > .item-anchor > *')
  let low = 0
  let high = rows.length
  while (low < high) {
    const middle = (low + high) >> 1
    if (rows[middle]!.getBoundingClientRect().top < top - 0.5) low = middle + 1
    else high = middle
  }
  return rows[low] ?? rows[rows.length - 1] ?? null
}

/** A move of at most this many pixels is rounding, not a scroll. */
const STILL = 2
/** Scrolling down to within this distance of the bottom takes the pin again. */
const NEAR = 80

export function useBottomPin(scroller: RefObject<HTMLElement | null>, content: RefObject<HTMLElement | null>): BottomPin {
  const stick = useRef(true)
  /** Where the view was left: offset, width, and a row in view with its distance from the top edge. */
  const mark = useRef<{ top: number; width: number; row: HTMLElement | null; rowTop: number }>({ top: 0, width: 0, row: null, rowTop: 0 })
  /** Set by reader input that scrolls up (wheel, keys, touch, scrollbar): no pin until its scroll event or two frames. */
  const hold = useRef(0)

  const remember = useCallback((element: HTMLElement) => {
    const edge = element.getBoundingClientRect().top
    const row = content.current ? rowInView(content.current, edge) : null
    mark.current = { top: element.scrollTop, width: element.clientWidth, row, rowTop: row ? row.getBoundingClientRect().top - edge : 0 }
  }, [content])

  /**
   * Updates the pin from what the reader did since the view was last remembered. Returns how far
   * the remembered row was pushed down by content above it while the offset stayed (a layout shift
   * the browser's anchoring did not take up), for the caller to scroll by.
   */
  const read = useCallback((element: HTMLElement): number => {
    const gap = element.scrollHeight - element.scrollTop - element.clientHeight
    const last = mark.current
    // Another width reflowed every row: not the reader's doing.
    if (element.clientWidth !== last.width) {
      if (gap <= STILL) stick.current = true
      return 0
    }
    const offsetMoved = Math.abs(element.scrollTop - last.top) > 0.5
    const rowMoved = last.row?.isConnected ? last.row.getBoundingClientRect().top - element.getBoundingClientRect().top - last.rowTop : last.top - element.scrollTop
    // Only a changed offset can be the reader's; a row that moved at the same offset was moved by layout.
    const up = offsetMoved ? rowMoved : 0
    if (gap <= STILL) stick.current = true
    else if (up > STILL) stick.current = false
    else if (up < -STILL && gap < NEAR) stick.current = true
    return !offsetMoved && !stick.current && Math.abs(rowMoved) > STILL ? rowMoved : 0
  }, [])

  const pinOrRemember = useCallback((element: HTMLElement, shift = 0) => {
    if (stick.current && hold.current === 0) element.scrollTop = element.scrollHeight
    else if (shift !== 0) element.scrollTop += shift
    remember(element)
  }, [remember])

  const follow = useCallback((rowsAbove?: boolean) => {
    const element = scroller.current
    if (!element) return
    pinOrRemember(element, rowsAbove === true ? 0 : read(element))
  }, [scroller, read, pinOrRemember])

  const scrolled = useCallback(() => {
    const element = scroller.current
    if (!element) return
    hold.current = 0
    pinOrRemember(element, read(element))
  }, [scroller, read, pinOrRemember])

  const anchor = useCallback((): ViewAnchor | null => {
    const element = scroller.current
    const row = element && content.current ? rowInView(content.current, element.getBoundingClientRect().top) : null
    return element && row ? { row, offset: row.getBoundingClientRect().top - element.getBoundingClientRect().top } : null
  }, [scroller, content])

  const restore = useCallback((kept: ViewAnchor) => {
    const element = scroller.current
    if (!element || !kept.row.isConnected) return
    element.scrollTop += kept.row.getBoundingClientRect().top - element.getBoundingClientRect().top - kept.offset
    remember(element)
  }, [scroller, remember])

  useEffect(() => {
    const element = scroller.current
    const inner = content.current
    if (!element || !inner) return
    // Rows use content-visibility: their real heights arrive after they are first drawn, and a
    // narrower window reflows them. While pinned, every size change scrolls to the bottom again.
    const observer = typeof ResizeObserver === 'undefined' ? undefined : new ResizeObserver(() => follow())
    observer?.observe(inner)
    observer?.observe(element)
    let token = 0
    const intent = () => {
      if (element.scrollTop <= 0) return
      const mine = hold.current = ++token
      requestAnimationFrame(() => requestAnimationFrame(() => {
        if (hold.current !== mine) return
        hold.current = 0
        follow()
      }))
    }
    const wheel = (event: WheelEvent) => { if (event.deltaY < 0) intent() }
    const keys = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement | null
      if (target !== document.body && !element.contains(target)) return
      if (event.key === 'PageUp' || event.key === 'Home' || event.key === 'ArrowUp' || (event.key === ' ' && event.shiftKey)) intent()
    }
    let touchY: number | null = null
    const touchStart = (event: TouchEvent) => { touchY = event.touches[0]?.clientY ?? null }
    const touchMove = (event: TouchEvent) => {
      const y = event.touches[0]?.clientY
      if (touchY !== null && y !== undefined && y - touchY > STILL) intent()
    }
    // A press on the scrollbar (right of the client area) starts a drag or a page step.
    const press = (event: PointerEvent) => { if (event.target === element && event.offsetX >= element.clientWidth) intent() }
    element.addEventListener('wheel', wheel, { passive: true })
    window.addEventListener('keydown', keys)
    element.addEventListener('touchstart', touchStart, { passive: true })
    element.addEventListener('touchmove', touchMove, { passive: true })
    element.addEventListener('pointerdown', press)
    return () => {
      observer?.disconnect()
      element.removeEventListener('wheel', wheel)
      window.removeEventListener('keydown', keys)
      element.removeEventListener('touchstart', touchStart)
      element.removeEventListener('touchmove', touchMove)
      element.removeEventListener('pointerdown', press)
    }
  }, [scroller, content, follow])

  return { stick, scrolled, follow, anchor, restore }
}
