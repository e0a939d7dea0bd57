/** Placeholder; the scope seam (P-1..P-4) is built in this folder. */
export type ScopeKey = object
