// What a helper needs of a tap test: somewhere to register cleanup (tap's `t` has it). Helpers take this rather
// than tap's type, so a benchmark can pass its own.
export interface Teardown {
  teardown(fn: () => unknown): void;
}
