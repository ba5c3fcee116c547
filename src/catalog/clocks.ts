// The service's two clocks (real-service-notes section 7): a delivery's `timestamp` is stamped by the jobs that
// send webhooks, an answer's `Date` (and so a read's `read_as_of`) by the web servers. Nothing documents how
// closely they agree, so a read counts as after an event only with a margin (SERVICE_CLOCK_MARGIN_SECONDS) on top
// of the second that whole-second timestamps already cost. Too small a margin skips a read that was needed and
// the change waits for a sweep; too large only reads a variant that was already read (in the same request,
// mostly: a drain reads up to 250 ids at once).

/** Whether a read stamped `readAt` (service clock, epoch ms) surely happened after an event stamped `eventAt`. */
export function readAfterEvent(readAt: number, eventAt: number, marginMs: number): boolean {
  return readAt >= eventAt + 1000 + marginMs;
}
