// The one error type every public call rejects with (see ErrorCode).
import type { ErrorCode } from "./protocol.js";

export class EngineError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "EngineError";
  }
}
