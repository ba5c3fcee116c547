// The failure an operation throws when the request cannot succeed as asked (bad input, a refusal by the
// service): the operation fails at once with the reason, no retry. Holds and the channel routes refuse with it too.

/** The operation cannot succeed as asked: fails at once with this reason, no retry. */
export class OperationFailed extends Error {
  readonly fieldErrors: Record<string, string[]> | null;
  readonly statusCode: number | null;
  constructor(reason: string, fieldErrors: Record<string, string[]> | null = null, statusCode: number | null = null) {
    super(reason);
    this.fieldErrors = fieldErrors;
    this.statusCode = statusCode;
  }
}
